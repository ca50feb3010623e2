"""`ExportedEmbedder`: sentence vectors from an exported SavedModel, as `BertEmbedder` gives them, for `TextEmbedder`.

A `bert-tf export` of an embedding model (`--task embed`) keeps its encoder, pooling, projection and normalisation in
one `serve_ids` signature (int32 ids [batch, seq_length] → `embedding`), and says in `model_info` how it pools and
whether it normalises: it gives the vectors it was trained to give and no others (other poolings, layers and token
vectors need the model directory). An exported encoder or pretrainer keeps its last layer and pooler
(`ExportedEncoder`): its token vectors are pooled here by the one `TokenPooling`, as `BertEmbedder` pools them.

Example:
    >>> embedder = ExportedEmbedder("/models/embed/1")                          # doctest: +SKIP
    >>> TextEmbedder(embedder).embed(["a fine day"]).shape                        # doctest: +SKIP
    (1, 256)
"""

from __future__ import annotations

import tensorflow as tf

from bert_tf.config import check_sequence_length
from bert_tf.inspection.exported_encoder import ExportedEncoder, LoadedExport, load_export, padded_ids
from bert_tf.layers.pooling import TokenPooling, pooled_width
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tasks.embedding.model import BertEmbedder, pooled_tokens
from bert_tf.tokenizer import BertTokenizer

OUTPUT = "embedding"  # what the serve_ids signature of an exported embedding model gives


class ExportedEmbedder:
    """ids → sentence vectors of the export at `path` (the version folder, or its `load_export`), read with the
    options of `BertEmbedder` (None: as trained, or for an encoder mean pooling without normalising), for texts of at
    most `max_length` tokens (None: the export's seq_length); a one-line error for options the export cannot give."""

    def __init__(self, path, pooling: str | None = None, encoder_layers=None, normalize: bool | None = None,
                 skip_special_tokens: bool = False, vocab_file=None, lower_case: bool | None = None,
                 max_length: int | None = None):
        export = path if isinstance(path, LoadedExport) else load_export(path)
        self.path, self.seq_length = export.path, export.seq_length
        self._export = export  # keeps the variables its signatures read alive
        self._serve_ids = export.serve_ids
        if OUTPUT in self._serve_ids.structured_outputs:  # an embedding model: its vectors as trained
            self.encoder, self.token_pooling = None, None
            self.pooling = export.info["pooling"].numpy().decode()
            self.normalize = bool(export.info["normalize"].numpy())
            self._refuse([what for what, differs in (
                (f"pooling {pooling}", pooling not in (None, self.pooling)),
                (f"layers {list(_given(encoder_layers))}", _given(encoder_layers) != (-1,)),
                (f"normalize {normalize}", normalize not in (None, self.normalize)),
                ("skipping [CLS] and [SEP]", skip_special_tokens)) if differs])
            self.embedding_size = int(self._serve_ids.structured_outputs[OUTPUT].shape[-1])
        else:
            self.encoder = ExportedEncoder(export)
            if _given(encoder_layers) != (-1,):
                raise ValueError(f"An exported SavedModel has only its last layer; layers "
                                 f"{list(_given(encoder_layers))} need the model directory or checkpoint.")
            self.pooling, self.normalize = pooling or "mean", bool(normalize)
            self.skip_special_tokens = skip_special_tokens
            self.token_pooling = None if self.pooling == "pooled" else TokenPooling(self.pooling)
            self.embedding_size = pooled_width(self.pooling, self.encoder.config.hidden_size)
        max_length = max_length or self.seq_length
        check_sequence_length(max_length, self.seq_length, "max_length")
        lower_case = export.lower_case if lower_case is None else lower_case
        tokenizer = BertTokenizer(vocab_file or export.vocab_file, lower_case)
        self._preprocessor = BertPreprocessor(tokenizer, max_length, padding=BertEmbedder.text_padding)

    def text_preprocessor(self) -> BertPreprocessor:
        """The preprocessor of its texts (the export's vocabulary, casing and length, or those given)."""
        return self._preprocessor

    def __call__(self, inputs, training=False):
        """`inputs` as for `BertModel` (any width up to seq_length) → the sentence vectors [batch, embedding_size]."""
        if self.encoder is None:
            return self._serve_ids(**padded_ids(inputs, self.seq_length))[OUTPUT]
        outputs = self.encoder(inputs)
        if self.token_pooling is None:
            vectors = outputs["pooled_output"]
        else:
            vectors = self.token_pooling(outputs["sequence_output"], pooled_tokens(inputs, self.skip_special_tokens))
        return tf.math.l2_normalize(vectors, axis=-1) if self.normalize else vectors

    @property
    def token_vectors(self):
        """inputs → an exported encoder's last layer, [batch, seq, hidden] (scaled to length 1 with `normalize`); an
        exported embedding model has none (a one-line error, here rather than where the function is traced)."""
        if self.encoder is None:
            self._refuse(["token vectors"])
        return self._encoder_token_vectors

    def _encoder_token_vectors(self, inputs):
        vectors = self.encoder(inputs)["sequence_output"]
        return tf.math.l2_normalize(vectors, axis=-1) if self.normalize else vectors

    def _refuse(self, asked: list[str]) -> None:
        """ValueError, in one line, for what an exported embedding model does not give."""
        if asked:
            normalised = ", normalised" if self.normalize else ""
            raise ValueError(f"{self.path} is an exported sentence-embedding model: it gives the vectors it was "
                             f"trained to give ({self.pooling} pooling of the last layer{normalised}), not "
                             f"{', '.join(asked)}; use its model directory for those.")


def _given(layers) -> tuple:
    """`encoder_layers` as a tuple; None: the last layer's, (-1,)."""
    return (-1,) if layers is None else (layers,) if isinstance(layers, (int, str)) else tuple(layers)
