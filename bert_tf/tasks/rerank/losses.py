"""The losses a reranker trains with, as sentence-transformers' CrossEncoder defines them (Keras losses).

Each reads the logits of a batch's groups of pairs, `y_pred` float [batch, pairs] (`BertReranker` on ids
[batch, pairs, seq]: a query with its positive first, then its negatives; or one labelled pair), and `y_true`
float [batch, pairs], and gives one loss per example (Keras averages them over the batch):
- `ListwiseLoss`: cross-entropy of the positive (pair 0) against the group, over `sigmoid(logit) × scale` (scale
  10: sentence-transformers' `MultipleNegativesRankingLoss` for cross-encoders, its hard negatives as the
  candidates) or, without `sigmoid`, over the raw logits (a softmax over the group, `CrossEntropyLoss` of the
  group's index 0). `y_true` is not read.
- `PairBinaryCrossEntropyLoss`: binary cross-entropy of each pair's logit against its label (1 positive, 0
  negative, or a soft label in between), averaged over the pairs (`BinaryCrossEntropyLoss`,
  torch's `BCEWithLogitsLoss`).
- `MarginMSELoss`: the squared difference of each margin (positive − negative i) and the teacher's, `y_true`
  being the teacher's scores of the same pairs, averaged over the negatives (`MarginMSELoss`; Hofstätter et al.,
  2020).

Example:
    >>> import numpy as np
    >>> logits = np.array([[2.0, 0.0]])  # a query: its positive, one negative
    >>> round(float(ListwiseLoss(sigmoid=False)(np.zeros((1, 2)), logits)), 6)  # -log(e^2 / (e^2 + 1))
    0.126928
    >>> round(float(MarginMSELoss()(np.array([[5.0, 4.0]]), logits)), 6)  # ((2 - 0) - (5 - 4))^2
    1.0
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="bert_tf")
class ListwiseLoss(keras.losses.Loss):
    """Softmax cross-entropy of each group's first pair (the positive) against the group (module docstring)."""

    def __init__(self, scale: float = 10.0, sigmoid: bool = True, name: str = "listwise", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale, self.sigmoid = float(scale), bool(sigmoid)

    def call(self, y_true, y_pred):
        logits = tf.cast(y_pred, tf.float32)
        scores = tf.sigmoid(logits) * self.scale if self.sigmoid else logits
        return -tf.nn.log_softmax(scores, axis=-1)[:, 0]

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "sigmoid": self.sigmoid}


@keras.saving.register_keras_serializable(package="bert_tf")
class PairBinaryCrossEntropyLoss(keras.losses.Loss):
    """Binary cross-entropy of every pair's logit against its label, averaged over the pairs of each example."""

    def __init__(self, name: str = "bce", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels, logits = tf.cast(y_true, tf.float32), tf.cast(y_pred, tf.float32)
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits), axis=-1)


@keras.saving.register_keras_serializable(package="bert_tf")
class MarginMSELoss(keras.losses.Loss):
    """The squared error of each margin (positive − negative) against the teacher's margin, averaged per example."""

    def __init__(self, name: str = "margin_mse", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        teacher, logits = tf.cast(y_true, tf.float32), tf.cast(y_pred, tf.float32)
        margins = logits[:, :1] - logits[:, 1:]
        teacher_margins = teacher[:, :1] - teacher[:, 1:]
        return tf.reduce_mean(tf.square(margins - teacher_margins), axis=-1)
