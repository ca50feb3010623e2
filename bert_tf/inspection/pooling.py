"""Token vectors → one sentence vector: the pooling strategies people use, aware of padding; cosine similarity.

Strategies (bert-as-service's names in brackets): "cls" the first token's vector [CLS_TOKEN],
"mean" the average over real tokens [REDUCE_MEAN], "max" the element-wise maximum over real
tokens [REDUCE_MAX], "mean_max" both concatenated [REDUCE_MEAN_MAX]. The encoder's own "pooled"
output (tanh dense layer on [CLS], trained by next-sentence prediction) is chosen in
`bert_tf.inspection.embeddings`, since it is not a function of the token vectors alone.

Example:
    >>> hidden = tf.constant([[[1.0, 2.0], [3.0, 0.0], [9.0, 9.0]]])   # the third token is padding
    >>> pool_tokens(hidden, tf.constant([[1, 1, 0]]), "mean").numpy().tolist()
    [[2.0, 1.0]]
    >>> round(float(cosine_similarity([1.0, 0.0], [1.0, 1.0])), 4)
    0.7071
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

TOKEN_POOLINGS = ("cls", "mean", "max", "mean_max")


def pool_tokens(hidden, token_mask, pooling: str):
    """[batch, seq, dim] vectors, [batch, seq] 1/0 mask → [batch, dim] ([batch, 2·dim] for "mean_max").

    Positions where `token_mask` is 0 (padding, and [CLS]/[SEP] when the caller leaves them out)
    do not count; a row with no position left pools to zeros.
    """
    if pooling not in TOKEN_POOLINGS:
        raise ValueError(f"pooling must be one of {TOKEN_POOLINGS}, got {pooling!r}.")
    hidden = tf.convert_to_tensor(hidden)
    if pooling == "cls":
        return hidden[:, 0]
    mask = tf.cast(token_mask, hidden.dtype)[:, :, tf.newaxis]
    count = tf.reduce_sum(mask, axis=1)
    mean = tf.math.divide_no_nan(tf.reduce_sum(hidden * mask, axis=1), count)
    if pooling == "mean":
        return mean
    maximum = tf.reduce_max(tf.where(mask > 0, hidden, hidden.dtype.min), axis=1)
    maximum = tf.where(count > 0, maximum, tf.zeros_like(maximum))
    return maximum if pooling == "max" else tf.concat([mean, maximum], axis=-1)


def l2_normalize(vectors):
    """Each vector (last axis) scaled to length 1; zero vectors stay zero."""
    return tf.math.l2_normalize(vectors, axis=-1)


def cosine_similarity(a, b):
    """Cosine similarity: a number for two vectors, an [n, m] matrix for [n, dim] and [m, dim] arrays."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cosine_similarity: vectors of different sizes {a.shape[-1]} and {b.shape[-1]}.")
    a_unit = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    b_unit = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    return a_unit @ b_unit.T if a.ndim == 2 and b.ndim == 2 else np.sum(a_unit * b_unit, axis=-1)
