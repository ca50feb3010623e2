"""Using a trained BERT directly: sentence and token embeddings, fill-mask, attention maps.

Every tool takes the pieces `load_inspection_model(path)` returns, for any checkpoint that
`bert_tf.read_checkpoint` reads or a bert-tf model directory.

Example:
    >>> from bert_tf.inspection import load_inspection_model, fill_mask, TextEmbedder, EmbeddingConfig
    >>> model = load_inspection_model("out/pretrain/model")                         # doctest: +SKIP
    >>> result = fill_mask(model.require_pretrainer(), model.tokenizer, "Paris is the [MASK] of it.")  # doctest: +SKIP
    >>> result.filled_text()            # the text with each [MASK] replaced by its best candidate  # doctest: +SKIP
    >>> embedder = TextEmbedder(model.encoder, model.tokenizer)                      # doctest: +SKIP
    >>> embedder.embed(["hello"], EmbeddingConfig(pooling="cls")).shape              # doctest: +SKIP
    (1, 256)
"""

from bert_tf.inspection.attention_view import (
    AttentionMaps,
    attention_maps,
    attention_probabilities,
    format_attention_table,
    plot_attention,
    plot_attention_grid,
)
from bert_tf.inspection.embedding_files import embed_file
from bert_tf.inspection.embeddings import (
    EMBEDDINGS,
    LAST_FOUR_LAYERS,
    POOLINGS,
    EmbeddingConfig,
    TextEmbedder,
    TokenVectors,
    cosine_similarity,
)
from bert_tf.inspection.exported_embedder import ExportedEmbedder
from bert_tf.inspection.exported_encoder import ExportedEncoder
from bert_tf.inspection.fill_mask import Candidate, FillMaskResult, MaskedSpan, fill_mask, mask_probabilities
from bert_tf.inspection.loading import InspectionModel, load_inspection_model

__all__ = [
    "EMBEDDINGS",
    "LAST_FOUR_LAYERS",
    "POOLINGS",
    "AttentionMaps",
    "Candidate",
    "EmbeddingConfig",
    "ExportedEmbedder",
    "ExportedEncoder",
    "FillMaskResult",
    "InspectionModel",
    "MaskedSpan",
    "TextEmbedder",
    "TokenVectors",
    "attention_maps",
    "attention_probabilities",
    "cosine_similarity",
    "embed_file",
    "fill_mask",
    "format_attention_table",
    "load_inspection_model",
    "mask_probabilities",
    "plot_attention",
    "plot_attention_grid",
]
