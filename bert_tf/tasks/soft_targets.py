"""The softened KL divergence every task's distillation term is made of (Hinton et al., 2015).

Example:
    >>> import numpy as np
    >>> logits = np.array([[2.0, 0.0]])
    >>> float(softened_kl(logits, logits, temperature=2.0))
    0.0
"""

from __future__ import annotations

import tensorflow as tf


def softened_kl(teacher_logits, student_logits, temperature: float, mask=None) -> tf.Tensor:
    """T² · KL(softmax(teacher / T) ‖ softmax(student / T)) over the last axis, averaged over the rest (where `mask`)."""
    teacher_log_p = tf.nn.log_softmax(tf.cast(teacher_logits, tf.float32) / temperature)
    student_log_p = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / temperature)
    kl = tf.reduce_sum(tf.exp(teacher_log_p) * (teacher_log_p - student_log_p), axis=-1)
    if mask is None:
        return temperature**2 * tf.reduce_mean(kl)
    weights = tf.cast(mask, tf.float32)
    return temperature**2 * tf.reduce_sum(kl * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)
