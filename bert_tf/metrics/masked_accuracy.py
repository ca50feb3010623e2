"""`MaskedSparseCategoricalAccuracy`: token accuracy that skips positions labelled `IGNORE_LABEL` (-100).

Written by hand because Keras' `SparseCategoricalAccuracy` has no `ignore_class`
(its cross-entropy loss has one).

Example:
    >>> import numpy as np
    >>> metric = MaskedSparseCategoricalAccuracy()
    >>> labels = np.array([[-100, 1, -100, 0]])
    >>> logits = np.array([[[9.0, 0.0], [0.0, 1.0], [9.0, 0.0], [0.0, 1.0]]])
    >>> metric.update_state(labels, logits)
    >>> float(metric.result())  # 1 of the 2 labelled tokens is right
    0.5
"""

import keras
import tensorflow as tf

# Label of the positions that do not count (token classification: later pieces of a word, special and padding
# tokens). -100 is also Hugging Face's value, so their label arrays work unchanged.
IGNORE_LABEL = -100


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedSparseCategoricalAccuracy(keras.metrics.Mean):
    """Share of positions whose argmax logit is the label, over positions whose label is not `ignore_class`."""

    def __init__(self, ignore_class: int = IGNORE_LABEL, name: str = "masked_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_class = int(ignore_class)

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = tf.cast(y_true, tf.int64)
        y_pred = tf.convert_to_tensor(y_pred)
        if labels.shape.rank == y_pred.shape.rank:  # labels [..., 1]
            labels = tf.squeeze(labels, axis=-1)
        correct = tf.cast(tf.equal(tf.argmax(y_pred, axis=-1), labels), self.dtype)
        weight = tf.cast(tf.not_equal(labels, self.ignore_class), self.dtype)
        if sample_weight is not None:  # per example [batch] or per position
            sample_weight = tf.cast(sample_weight, self.dtype)
            while sample_weight.shape.rank < weight.shape.rank:
                sample_weight = sample_weight[..., tf.newaxis]
            weight *= sample_weight
        return super().update_state(correct, sample_weight=weight)

    def get_config(self):
        return {**super().get_config(), "ignore_class": self.ignore_class}
