"""Training batches of groups: each example is several texts (an embedding task's anchor, positive and negatives)
or several pairs (a reranker's query with each of its documents), packed together as ids [batch, group, longest].

Example:
    >>> texts = tf.data.Dataset.from_tensor_slices(([["a", "b"], ["c", "d"], ["e", "f"]], [0.0, 1.0, 2.0]))
    >>> pack = lambda segments: {"input_word_ids": tf.strings.length(segments[0])[:, None]}
    >>> flat = lambda group, label: ([tf.reshape(group, [-1])], label)
    >>> batches = shuffled_group_batches(texts, 3, 2, seed=0, segments=flat, pack=pack)
    >>> [ids["input_word_ids"].shape.as_list() for ids, _ in batches]
    [[2, 2, 1], [1, 2, 1]]
"""

from __future__ import annotations

import math
from typing import Callable

import tensorflow as tf


def shuffled_group_batches(dataset: tf.data.Dataset, examples: int, batch_size: int, seed: int,
                           segments: Callable, pack: Callable) -> tf.data.Dataset:
    """`dataset`'s (group, label) elements, shuffled anew every epoch, in batches of `batch_size`: `segments(group
    batch, labels)` gives the flat text segments of every member (string [batch × group] each) and the labels; `pack`
    turns those into ids, reshaped to [batch, group, longest]. Its cardinality is said, for Keras' progress."""

    def grouped(*batch):
        *groups, labels = batch
        shape = tf.shape(groups[-1])
        flat, labels = segments(*groups, labels)
        ids = pack(flat)
        return {name: tf.reshape(value, [shape[0], shape[1], -1]) for name, value in ids.items()}, labels

    batches = dataset.shuffle(examples, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    batches = batches.map(grouped, num_parallel_calls=tf.data.AUTOTUNE)
    count = math.ceil(examples / batch_size)
    return batches.apply(tf.data.experimental.assert_cardinality(count)).prefetch(tf.data.AUTOTUNE)
