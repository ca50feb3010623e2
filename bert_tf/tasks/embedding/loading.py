"""`load_embedder`: any model the package reads, as a sentence-embedding model ready to `encode` raw texts: a
`BertEmbedder` around its encoder, or an `ExportedEmbedder` for an exported SavedModel.

An embedding model (a bert-tf directory of task `embed`, a sentence-transformers folder, the installed
`all-minilm-l6-v2`) is read as it was trained; any other encoder (a bert-tf directory of another task, the output
folder of `bert-tf pretrain`, a Google, Hugging Face or KerasHub checkpoint: `bert_tf.inspection.load_inspection_model`)
with mean pooling of its last layer, not normalised. The options read it another way (`BertEmbedder.with_options`).

Example:
    >>> model = load_embedder("models/sts")  # doctest: +SKIP
    >>> model.encode(["a man is dancing"]).shape  # doctest: +SKIP
    (1, 256)
    >>> load_embedder("uncased_L-4_H-256_A-4/", pooling="cls", encoder_layers=(-2, -1)).embedding_size  # doctest: +SKIP
    512
"""

from __future__ import annotations

from bert_tf.inspection.exported_encoder import is_saved_model
from bert_tf.inspection.loading import load_inspection_model
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tasks.embedding.exported_embedder import ExportedEmbedder
from bert_tf.tasks.embedding.model import BertEmbedder


def load_embedder(path, pooling: str | None = None, encoder_layers=None, normalize: bool | None = None,
                  skip_special_tokens: bool | None = None, vocab_file=None, lower_case: bool | None = None,
                  max_length: int | None = None) -> BertEmbedder | ExportedEmbedder:
    """The sentence-embedding model of `path` (see the module docstring), with the `BertEmbedder` options given (None:
    as trained); `vocab_file` and `lower_case` replace the model's vocabulary and casing, `max_length` its length (the
    model's `seq_length` where recorded, else its maximum)."""
    if is_saved_model(path):
        return ExportedEmbedder(path, pooling, encoder_layers, normalize, bool(skip_special_tokens), vocab_file,
                                lower_case, max_length)
    loaded = load_inspection_model(path, vocab_file=vocab_file, lower_case=lower_case, max_length=max_length)
    if pooling == "pooled" and not loaded.has_pooler:
        raise ValueError(f"{path} has no pooler weights, so pooling 'pooled' would be random; use cls or mean.")
    if isinstance(loaded.model, BertEmbedder):
        model = loaded.model
    else:
        model = BertEmbedder(loaded.encoder, pooling="mean", normalize=False)
    model = model.with_options(pooling, encoder_layers, normalize, skip_special_tokens)
    model.set_preprocessor(BertPreprocessor(loaded.tokenizer, loaded.max_length, padding=BertEmbedder.text_padding))
    return model
