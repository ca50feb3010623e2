"""Distilling a sentence-embedding teacher (`bert-tf distill`): the student's vectors matched to the teacher's.

The term is the squared distance of each student vector to its teacher's, averaged over the texts:

    mean over texts of ‖student − teacher‖²   (= sentence-transformers' MSELoss × the vectors' size)

as in sentence-transformers' model distillation and "Making Monolingual Sentence Embeddings Multilingual"
(Reimers and Gurevych, 2020), which train the student on the mean squared error to the teacher's vectors. Summed
over the values rather than averaged, the term does not shrink with the width: a teacher's unit vectors of 256
values would give an MSE of 2(1 − cos) / 256, about a hundredth of the student's own loss (in-batch negatives,
CoSENT) it is mixed with (`--soft-weight`). For unit vectors (`normalize`, the default) it is 2(1 − cos): the
cosine term, so the two choices agree; for unnormalised ones it also matches the length, which inner-product
search ranks by. A student narrower than the teacher's vectors maps its pooled vector into the teacher's space
through a learned projection (`BertEmbedder(embedding_size=...)`), which it keeps: the exported student answers
vectors of the teacher's size, in its space as far as it learnt it (an index is best rebuilt with the student:
the teacher's vectors of different sentences often lie closer together than the student comes to them).

Example:
    >>> import numpy as np
    >>> teacher = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> round(float(vector_distance(teacher, np.array([[0.6, 0.8], [0.0, 1.0]]))), 6)  # ((0.4² + 0.8²) + 0) / 2
    0.4
"""

from __future__ import annotations

import tensorflow as tf


def vector_distance(teacher_vectors, student_vectors) -> tf.Tensor:
    """The squared Euclidean distance of each student vector to the teacher's (last axis), averaged over the rest;
    float32."""
    difference = tf.cast(student_vectors, tf.float32) - tf.cast(teacher_vectors, tf.float32)
    return tf.reduce_mean(tf.reduce_sum(tf.square(difference), axis=-1))
