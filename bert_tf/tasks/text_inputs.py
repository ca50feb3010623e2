"""Raw strings as Keras inputs: which values are texts, and their batches of token ids for `fit`, `evaluate`
and `predict` (`bert_tf.tasks.task_model.BertTaskModel`).

Texts are a `str`, a list or tuple of `str`, a 1-D NumPy array of strings or a string tensor; pairs are a
tuple of two such sequences (`(texts, second_texts)`) or a list of `(text, second_text)` tuples. A
`tf.data.Dataset` whose elements (or their first part, before the labels) are strings counts too.
Everything else (a dict of token ids, ...) is not text and goes to Keras as it is.

Example:
    >>> [segment.tolist() for segment in text_segments(["a fine film", "dull"])]
    [['a fine film', 'dull']]
    >>> [segment.tolist() for segment in text_segments([("Is it?", "Yes."), ("No?", "No.")])]
    [['Is it?', 'No?'], ['Yes.', 'No.']]
    >>> text_segments({"input_word_ids": [[2, 5, 3]]}) is None
    True
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

DEFAULT_BATCH_SIZE = 32  # Keras' own default


def _is_texts(value) -> bool:
    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(isinstance(item, str) for item in value)
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and (value.dtype.kind in "US" or (value.dtype == object and value.size > 0 and
                                                                   isinstance(value.flat[0], (str, bytes))))
    return isinstance(value, tf.Tensor) and value.dtype == tf.string


def text_segments(x) -> list[np.ndarray] | None:
    """`x`'s texts as one array of strings per segment (one for texts, two for pairs), or None if `x` is not text."""
    if isinstance(x, str):
        return [np.array([x], dtype=object)]
    if _is_texts(x):
        return [np.asarray(x.numpy() if isinstance(x, tf.Tensor) else x, dtype=object).reshape([-1])]
    if isinstance(x, tuple) and len(x) == 2 and all(_is_texts(part) for part in x):
        first, second = (np.asarray(part.numpy() if isinstance(part, tf.Tensor) else part, dtype=object)
                         for part in x)
        if len(first) != len(second):
            raise ValueError(f"Got {len(first)} texts but {len(second)} second texts.")
        return [first, second]
    if isinstance(x, list) and x and all(isinstance(item, tuple) and len(item) == 2 and
                                         all(isinstance(text, str) for text in item) for item in x):
        return [np.array([pair[0] for pair in x], dtype=object), np.array([pair[1] for pair in x], dtype=object)]
    return None


def contains_tensors(x) -> bool:
    """Whether `x` is, or is a list or tuple holding, a TensorFlow tensor (symbolic in a graph: not read here)."""
    return isinstance(x, (tf.Tensor, tf.Variable)) or (isinstance(x, (list, tuple)) and any(map(contains_tensors, x)))


def is_text_dataset(x) -> bool:
    """Whether `x` is a `tf.data.Dataset` of strings (or of (strings, labels, ...))."""
    if not isinstance(x, tf.data.Dataset):
        return False
    spec = x.element_spec
    first = spec[0] if isinstance(spec, tuple) and not all(_is_string_spec(part) for part in spec) else spec
    parts = first if isinstance(first, tuple) else (first,)
    return all(_is_string_spec(part) for part in parts)


def _is_string_spec(spec) -> bool:
    return isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string


def text_batches(x, y, sample_weight, packer, batch_size: int | None, shuffle: bool = False) -> tf.data.Dataset | None:
    """Batches of (token ids, y, sample_weight) from raw-string `x` (module docstring), tokenized in `tf.data` by
    `packer()` (called only for text: a function from a list of string tensors to the three id tensors); None
    when `x` is not text."""
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    if is_text_dataset(x):
        return _packed_dataset(x, packer(), batch_size)
    segments = text_segments(x)
    if segments is None:
        return None
    pack = packer()
    rest = tuple(np.asarray(value) for value in (y, sample_weight) if value is not None)
    for value in rest:
        if len(value) != len(segments[0]):
            raise ValueError(f"Got {len(segments[0])} texts but {len(value)} labels (or sample weights).")
    dataset = tf.data.Dataset.from_tensor_slices((tuple(segments), *rest) if rest else (tuple(segments),))
    if shuffle:
        dataset = dataset.shuffle(len(segments[0]), reshuffle_each_iteration=True)
    return dataset.batch(batch_size).map(lambda texts, *labels: (pack(list(texts)), *labels),
                                         num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _packed_dataset(dataset: tf.data.Dataset, pack, batch_size: int) -> tf.data.Dataset:
    """A dataset of strings (or (strings, labels...)) with its strings tokenized; batched first if it is not."""
    spec = dataset.element_spec
    texts_only = not isinstance(spec, tuple) or all(_is_string_spec(part) for part in spec)
    first = spec if texts_only else spec[0]
    if (first[0] if isinstance(first, tuple) else first).shape.rank == 0:
        dataset = dataset.batch(batch_size)

    def packed(*element):
        texts, labels = (element, ()) if texts_only else (element[0], element[1:])
        return (pack(list(texts) if isinstance(texts, tuple) else [texts]), *labels)

    return dataset.map(packed, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
