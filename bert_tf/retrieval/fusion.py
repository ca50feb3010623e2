"""Hybrid search: one ranking from a dense and a lexical retriever's scores, in the graph.

Each retriever proposes its `depth` best documents (a lexical candidate must score above 0: share a word with the
query). Their fused score is
- "rrf", reciprocal-rank fusion (Cormack et al., 2009): the sum over the lists holding the document of
  1 / (RRF_K + rank), ranks from 1, RRF_K = 60;
- "weighted": dense_weight × the dense score + (1 − dense_weight) × the lexical score, each min-max normalised over
  its list's candidates ((score − lowest) / (highest − lowest); 1 where they are all equal), 0 outside the list.
The `k` best fused documents come first; of equal fused scores, the lower index first.

>>> dense = tf.constant([[0.9, 0.1, 0.5]]); lexical = tf.constant([[0.0, 2.0, 1.0]])
>>> scores, indices = fused_top_k(dense, lexical, k=3, fusion="rrf", dense_weight=0.5, depth=3)
>>> indices.numpy().tolist(), [round(float(value), 5) for value in scores[0]]  # 1/61 + 1/63, 2/62, 1/61
([[1, 2, 0]], [0.03227, 0.03226, 0.01639])
"""

import tensorflow as tf

RRF_K = 60  # reciprocal-rank fusion's constant, as its paper and most search engines set it
FUSIONS = ("rrf", "weighted")


def _normalised(scores: tf.Tensor, candidate: tf.Tensor) -> tf.Tensor:
    """Min-max over each row's candidates; 1 where a row's candidates all score alike; 0 for non-candidates."""
    lowest = tf.reduce_min(tf.where(candidate, scores, scores.dtype.max), axis=1, keepdims=True)
    highest = tf.reduce_max(tf.where(candidate, scores, scores.dtype.min), axis=1, keepdims=True)
    span = highest - lowest
    scaled = tf.where(span > 0, (scores - lowest) / tf.where(span > 0, span, 1.0), 1.0)
    return tf.where(candidate, scaled, 0.0)


def fused_top_k(dense: tf.Tensor, lexical: tf.Tensor, k: int, fusion, dense_weight, depth: int):
    """(scores float32 [queries, k], indices int32 [queries, k]) of the fusion (module docstring) of `dense` and
    `lexical` (float32 [queries, documents]); `fusion` a string tensor ("rrf" or "weighted"), `dense_weight` a
    float in [0, 1]."""
    dense_scores, dense_indices = tf.math.top_k(dense, k=depth)
    lexical_scores, lexical_indices = tf.math.top_k(lexical, k=depth)
    dense_candidate = tf.ones_like(dense_scores, tf.bool)
    lexical_candidate = lexical_scores > 0
    ranks = tf.range(1, depth + 1, dtype=tf.float32)[tf.newaxis]
    weight = tf.cast(dense_weight, tf.float32)
    rrf = tf.equal(fusion, "rrf")
    dense_part = tf.cond(rrf, lambda: tf.broadcast_to(1.0 / (RRF_K + ranks), tf.shape(dense_scores)),
                         lambda: weight * _normalised(dense_scores, dense_candidate))
    lexical_part = tf.cond(rrf, lambda: tf.where(lexical_candidate, 1.0 / (RRF_K + ranks), 0.0),
                           lambda: (1.0 - weight) * _normalised(lexical_scores, lexical_candidate))
    rows = tf.broadcast_to(tf.range(tf.shape(dense)[0])[:, tf.newaxis], tf.shape(dense_indices))
    fused = tf.tensor_scatter_nd_add(tf.zeros_like(dense), tf.stack([rows, dense_indices], axis=-1), dense_part)
    fused = tf.tensor_scatter_nd_add(fused, tf.stack([rows, lexical_indices], axis=-1), lexical_part)
    return tf.math.top_k(fused, k=k)
