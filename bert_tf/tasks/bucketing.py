"""Batches of variable-length examples, each padded only to its own longest example.

For training, examples are shuffled and grouped by length (`tf.data`'s
`bucket_by_sequence_length`), so a batch of short sentences does not pay for 128 or 512
positions. For evaluation and prediction, batches keep the input order (results map
back to examples) and are padded per batch.

Examples are `(features, labels)` or `features`: `features` a dict of 1-D int32 tensors
of the example's length (`input_word_ids`, `input_mask`, `input_type_ids`); labels of
any structure, padded with `label_padding` where they have the length dimension
(per-token labels).

Example:
    >>> bucket_boundaries(128)
    [16, 32, 48, 64, 96, 128]
    >>> count_batches([5, 6, 7, 40, 41], batch_size=2, seq_length=128, bucketing=True)  # 3 short, 2 long
    3
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import tensorflow as tf

_BOUNDARIES = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def bucket_boundaries(seq_length: int) -> list[int]:
    """Length limits of the buckets (a bucket holds lengths in [previous limit, limit)), up to seq_length."""
    return [boundary for boundary in _BOUNDARIES if boundary <= seq_length]


def count_batches(lengths: Sequence[int], batch_size: int, seq_length: int, bucketing: bool) -> int:
    """How many batches `batch_examples(..., training=True)` makes of examples of these lengths.

    Exact whatever the shuffle: each bucket emits full batches and, at the end, its remainder.
    """
    lengths = np.asarray(lengths)
    if not bucketing:
        return math.ceil(len(lengths) / batch_size)
    buckets = np.searchsorted(bucket_boundaries(seq_length), lengths, side="right")
    return int(sum(math.ceil(count / batch_size) for count in np.bincount(buckets) if count))


def _padding_values(element_spec, pad_id: int, label_padding: int):
    """`pad_id` for `input_word_ids`, 0 for the other features, `label_padding` for labels (in their dtypes)."""
    def features_padding(features_spec):
        return {name: tf.constant(pad_id if name == "input_word_ids" else 0, spec.dtype)
                for name, spec in features_spec.items()}

    if isinstance(element_spec, dict):
        return features_padding(element_spec)
    features_spec, labels_spec = element_spec
    labels_padding = tf.nest.map_structure(lambda spec: tf.constant(label_padding, spec.dtype), labels_spec)
    return features_padding(features_spec), labels_padding


def batch_examples(
    dataset: tf.data.Dataset,
    lengths: Sequence[int],
    batch_size: int,
    seq_length: int,
    training: bool,
    bucketing: bool = True,
    seed: int | None = None,
    pad_id: int = 0,
    label_padding: int = 0,
) -> tf.data.Dataset:
    """Padded batches of `dataset`'s examples (whose lengths, in order, are `lengths`).

    `training=True`: shuffled anew every epoch (from `seed`) and, with `bucketing`,
    grouped by length; the dataset knows its number of batches (for Keras' progress bar).
    `training=False`: in order, batches of `batch_size` padded to their longest example.
    """
    padding = _padding_values(dataset.element_spec, pad_id, label_padding)
    if not training:
        return dataset.padded_batch(batch_size, padding_values=padding).prefetch(tf.data.AUTOTUNE)
    dataset = dataset.shuffle(max(len(lengths), 1), seed=seed, reshuffle_each_iteration=True)
    if bucketing:
        boundaries = bucket_boundaries(seq_length)
        dataset = dataset.bucket_by_sequence_length(
            lambda features, *labels: tf.shape(features["input_word_ids"])[0],
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            padding_values=padding,
        )
    else:
        dataset = dataset.padded_batch(batch_size, padding_values=padding)
    batches = count_batches(lengths, batch_size, seq_length, bucketing)
    return dataset.apply(tf.data.experimental.assert_cardinality(batches)).prefetch(tf.data.AUTOTUNE)


def rows_dataset(columns) -> tf.data.Dataset:
    """One example per row of `columns` (a structure of arrays and 2-D `tf.RaggedTensor`s), each row a dense tensor.

    `from_tensor_slices` gives a ragged column's rows a ragged type spec, which
    `padded_batch` refuses; inside `map` they are plain tensors, so an identity map fixes the spec.
    """
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if isinstance(columns, tuple):
        return dataset.map(lambda *row: row)
    return dataset.map(lambda row: row)
