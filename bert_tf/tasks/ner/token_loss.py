"""`TokenCrossEntropy`: the token classifier's loss, the mean cross-entropy over the labelled tokens of the global
batch (positions labelled `IGNORE_LABEL` skipped).

On one device it equals Keras' `SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)`. Keras
divides each replica's mean over its own tokens by the replicas, which is the global mean only when every replica
got as many labelled tokens; here each replica divides the sum over its tokens by the global batch's count
(`all_replicas_sum`), so the replicas' shares add up to the one-device loss however the tokens fall.

Example:
    >>> import numpy as np
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1]]]))   # one sentence, two tokens, two labels
    >>> round(float(TokenCrossEntropy()(np.array([[0, IGNORE_LABEL]]), logits)), 4)   # -log 0.5
    0.6931
"""

from __future__ import annotations

import keras
import tensorflow as tf

from bert_tf.replicas import all_replicas_sum
from bert_tf.tasks.ner.word_alignment import IGNORE_LABEL


@keras.saving.register_keras_serializable(package="bert_tf")
class TokenCrossEntropy(keras.losses.Loss):
    """Sparse categorical cross-entropy from logits [batch, seq, labels], averaged over the global batch's tokens not
    labelled `IGNORE_LABEL`."""

    def __init__(self, name: str = "token_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels = tf.cast(y_true, tf.int32)
        labelled = tf.cast(labels != IGNORE_LABEL, tf.float32)
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.maximum(labels, 0), tf.cast(y_pred, tf.float32))
        return tf.reduce_sum(losses * labelled) / tf.maximum(all_replicas_sum(tf.reduce_sum(labelled)), 1.0)
