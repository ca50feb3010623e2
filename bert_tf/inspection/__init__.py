"""Looking into a trained BERT: fill-mask and attention maps (sentence and token vectors: `bert_tf.tasks.embedding`).

Every tool takes the pieces `load_inspection_model(path)` returns, for any checkpoint that
`bert_tf.read_checkpoint` reads or a bert-tf model directory.

Example:
    >>> from bert_tf.inspection import load_inspection_model, fill_mask
    >>> model = load_inspection_model("out/pretrain/model")                         # doctest: +SKIP
    >>> result = fill_mask(model.require_pretrainer(), model.tokenizer, "Paris is the [MASK] of it.")  # doctest: +SKIP
    >>> result.filled_text()            # the text with each [MASK] replaced by its best candidate  # doctest: +SKIP
"""

from bert_tf.inspection.attention_view import (
    AttentionMaps,
    attention_maps,
    attention_probabilities,
    format_attention_table,
    plot_attention,
    plot_attention_grid,
)
from bert_tf.inspection.exported_encoder import ExportedEncoder
from bert_tf.inspection.fill_mask import Candidate, FillMaskResult, MaskedSpan, fill_mask, mask_probabilities
from bert_tf.inspection.loading import InspectionModel, load_inspection_model

__all__ = [
    "AttentionMaps",
    "Candidate",
    "ExportedEncoder",
    "FillMaskResult",
    "InspectionModel",
    "MaskedSpan",
    "attention_maps",
    "attention_probabilities",
    "fill_mask",
    "format_attention_table",
    "load_inspection_model",
    "mask_probabilities",
    "plot_attention",
    "plot_attention_grid",
]
