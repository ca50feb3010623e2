"""Running a model over batches that are padded per batch, and splitting its outputs back into examples.

Keras' `predict` concatenates batch outputs, which fails (or turns ragged) when batches
are padded to different lengths; this keeps one output per example instead, with
per-position outputs cut to the example's own length (its `input_mask`).

Example:
    >>> logits = predict_examples(token_classifier, batches, per_position=True)  # doctest: +SKIP
    >>> [example.shape for example in logits[:2]]  # doctest: +SKIP
    [(14, 9), (31, 9)]
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from bert_tf.progress import progress_bar


def predict_examples(model: keras.Model, batches: tf.data.Dataset, per_position: bool, progress: bool = False) -> list:
    """Model outputs per example, in order: an array (or a dict of arrays, for dict outputs).

    `batches` yields features or (features, labels); `per_position`: the outputs are
    [batch, length, ...] and each example keeps its first `length` positions.
    """
    examples = []
    total = int(batches.cardinality()) if batches.cardinality() >= 0 else None
    shown = progress_bar(batches, total=total, desc="predicting", unit="batch", disable=not progress, leave=False)
    for element in shown:
        features = element[0] if isinstance(element, tuple) else element
        outputs = model.predict_on_batch(features)
        lengths = np.asarray(features["input_mask"]).sum(axis=1)
        for row, length in enumerate(lengths):
            keep = length if per_position else None
            if isinstance(outputs, dict):
                examples.append({name: _example(value, row, keep) for name, value in outputs.items()})
            else:
                examples.append(_example(outputs, row, keep))
    return examples


def _example(batch_output, row: int, length: int | None) -> np.ndarray:
    """One example's output: row `row`, cut to `length` positions if given."""
    output = np.asarray(batch_output)[row]
    return output if length is None else output[:length]
