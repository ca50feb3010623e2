"""Packing token segments as `[CLS] A [SEP] B [SEP] [PAD]...` with dense ops only.

Used where ragged packing (`tensorflow_text.combine_segments`, ragged slicing) cannot be:
in TFLite models, which have no kernels for RaggedRange or RaggedGather
(`serving.tflite_export`). Each segment comes as a dense [batch, width] tensor of ids
with the count of its tokens to keep per example; `[CLS]`, the kept tokens and one
`[SEP]` per segment are placed by position with gathers and selects, and the rest is
padding.

`to_longest` then drops the padding columns no row of the batch needs, as the SavedModel's
raw-text signature pads only to its batch's longest text: a short request costs a short model
call.

Example:
    >>> ids = pack_dense([tf.constant([[7, 8, 9]]), tf.constant([[5, 0, 0]])],
    ...                  [tf.constant([2]), tf.constant([1])], seq_length=8, vocabulary=vocabulary)  # doctest: +SKIP
    >>> ids["input_word_ids"].numpy().tolist(), ids["input_type_ids"].numpy().tolist()  # doctest: +SKIP
    ([[101, 7, 8, 102, 5, 102, 0, 0]], [[0, 0, 0, 0, 1, 1, 0, 0]])
"""

from __future__ import annotations

import tensorflow as tf


def pack_dense(segments: list[tf.Tensor], counts: list[tf.Tensor], seq_length: int, vocabulary) -> dict[str, tf.Tensor]:
    """The three int32 [batch, seq_length] id tensors; segment i keeps its first `counts[i]` tokens [batch].

    The counts must leave room for `[CLS]` and the `[SEP]`s (the caller truncates).
    """
    positions = tf.range(seq_length)[tf.newaxis, :]
    word_ids = tf.fill([tf.shape(segments[0])[0], seq_length], vocabulary.pad_id)
    word_ids = tf.where(positions == 0, vocabulary.cls_id, word_ids)
    type_ids = tf.zeros_like(word_ids)
    start = tf.ones_like(counts[0])[:, tf.newaxis]  # where the current segment begins: after [CLS]
    for index, (segment, count) in enumerate(zip(segments, counts)):
        count = tf.cast(count, tf.int32)[:, tf.newaxis]
        offset = positions - start
        inside = tf.logical_and(offset >= 0, offset < count)
        width = tf.shape(segment)[1]
        taken = tf.gather(segment, tf.clip_by_value(offset, 0, tf.maximum(width - 1, 0)), batch_dims=1)
        word_ids = tf.where(inside, taken, word_ids)
        word_ids = tf.where(offset == count, vocabulary.sep_id, word_ids)
        type_ids = tf.where(tf.logical_and(offset >= 0, offset <= count), index, type_ids)
        start += count + 1
    return {
        "input_word_ids": word_ids,
        "input_mask": tf.cast(positions < start, tf.int32),
        "input_type_ids": type_ids,
    }


def segment_counts(lengths: list[tf.Tensor], budget: int, truncation: str) -> list[tf.Tensor]:
    """Tokens kept per segment (one or two, int32 [batch] each) under `truncation`, exactly as
    `bert_tf.BertPreprocessor` keeps them (tested against it on every pair of lengths up to a budget)."""
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    first, second = lengths
    if truncation == "waterfall":  # the last segment is cut first
        kept_first = tf.minimum(first, budget)
        return [kept_first, tf.minimum(second, budget - kept_first)]
    if truncation == "round_robin":  # one token per segment in turn, the first segment first
        return [tf.minimum(first, tf.maximum((budget + 1) // 2, budget - second)),
                tf.minimum(second, tf.maximum(budget // 2, budget - first))]
    # longest_first: the longer segment loses a token until both fit; halves when both exceed half
    # the budget, the odd token to the longer one (to the second on a tie).
    first_longer = first > second
    return [tf.minimum(first, tf.maximum(budget - second, tf.where(first_longer, (budget + 1) // 2, budget // 2))),
            tf.minimum(second, tf.maximum(budget - first, tf.where(first_longer, budget // 2, (budget + 1) // 2)))]


def to_longest(ids: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The id tensors cut to the longest row of the batch (the most `input_mask` ones; at least 1 column)."""
    longest = tf.maximum(tf.reduce_max(tf.reduce_sum(ids["input_mask"], axis=1)), 1)
    return {name: value[:, :longest] for name, value in ids.items()}
