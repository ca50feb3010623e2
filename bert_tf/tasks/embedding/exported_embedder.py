"""`ExportedEmbedder`: an exported sentence-embedding model, for `TextEmbedder`.

A `bert-tf export` of an embedding model (`--task embed`) keeps its encoder, pooling, projection and
normalisation in one `serve_ids` signature (int32 ids [batch, seq_length] → `embedding`), and says in `model_info`
how it pools and whether it normalises. So it gives the vectors it was trained to give and no others: the
`EmbeddingConfig` must be the one it was trained with (`check_config`); other poolings, layers and token vectors
need the model directory.

Example:
    >>> embedder = ExportedEmbedder("/models/embed/1")                                             # doctest: +SKIP
    >>> config = EmbeddingConfig(pooling=embedder.pooling, normalize=embedder.normalize)           # doctest: +SKIP
    >>> tokenizer = BertTokenizer(embedder.vocab_file, embedder.lower_case)                        # doctest: +SKIP
    >>> TextEmbedder(embedder, tokenizer, config).embed(["a fine day"]).shape                      # doctest: +SKIP
    (1, 256)
"""

from __future__ import annotations

from bert_tf.inspection.exported_encoder import ExportedEncoderConfig, LoadedExport, load_export, padded_ids

OUTPUT = "embedding"  # what the serve_ids signature of an exported embedding model gives


def is_exported_embedder(export: LoadedExport) -> bool:
    """Whether the export's `serve_ids` gives sentence vectors (`embedding`), not the encoder's outputs."""
    return OUTPUT in export.serve_ids.structured_outputs


class ExportedEmbedder:
    """Runs the `serve_ids` signature of an exported embedding model: ids → its sentence vectors.
    `path`: the version folder, or its `load_export`."""

    def __init__(self, path):
        export = path if isinstance(path, LoadedExport) else load_export(path)
        if not is_exported_embedder(export):
            raise ValueError(f"{export.path} is an exported {export.task!r} model, not a sentence-embedding model.")
        self._export = export
        self._serve_ids = export.serve_ids
        self.path = export.path
        self.seq_length, self.vocab_file, self.lower_case = export.seq_length, export.vocab_file, export.lower_case
        self.pooling = export.info["pooling"].numpy().decode()
        self.normalize = bool(export.info["normalize"].numpy())
        size = int(self._serve_ids.structured_outputs[OUTPUT].shape[-1])
        self.config = ExportedEncoderConfig(hidden_size=size, max_position_embeddings=self.seq_length)

    def check_config(self, config, per_token: bool) -> None:
        """ValueError, in one line, for an `EmbeddingConfig` other than the one the model was trained with."""
        asked = [what for what, differs in (
            ("token vectors", per_token), (f"pooling {config.pooling}", config.pooling != self.pooling),
            (f"layers {list(config.layers)}", config.layers != (-1,)),
            (f"normalize {config.normalize}", config.normalize != self.normalize),
            ("skipping [CLS] and [SEP]", config.skip_special_tokens)) if differs]
        if asked:
            normalised = ", normalised" if self.normalize else ""
            raise ValueError(f"{self.path} is an exported sentence-embedding model: it gives the vectors it was "
                             f"trained to give ({self.pooling} pooling of the last layer{normalised}), not "
                             f"{', '.join(asked)}; use its model directory for those.")

    def sentence_vectors(self, inputs):
        """`inputs` as for `BertModel` (any width up to seq_length) → the model's vectors [batch, size]."""
        return self._serve_ids(**padded_ids(inputs, self.seq_length))[OUTPUT]
