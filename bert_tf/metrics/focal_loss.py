"""`SparseCategoricalFocalLoss`: focal loss (Lin et al., 2017) for class ids and logits, for imbalanced classes.

loss = -alpha_t * (1 - p_t)^gamma * log(p_t), where p_t is the softmax probability of
the true class: confident right answers weigh less, so training dwells on the hard ones.
With `gamma=0` and no `alpha` it is sparse categorical cross-entropy.

Written by hand because Keras' `CategoricalFocalCrossentropy` takes one-hot labels and
clips probabilities to [1e-7, 1 - 1e-7] (which caps the loss of a confident mistake);
this one takes class ids and works on log-probabilities from the logits.

Example:
    >>> import numpy as np
    >>> logits, labels = np.array([[2.0, 0.0], [0.0, 2.0]]), np.array([0, 0])
    >>> focal = SparseCategoricalFocalLoss(gamma=2.0)
    >>> round(float(focal(labels, logits)), 4)  # mean of 0.0018 (easy) and 1.6501 (hard)
    0.8259
"""

from __future__ import annotations

from typing import Sequence

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="bert_tf")
class SparseCategoricalFocalLoss(keras.losses.Loss):
    """Focal loss from logits [..., num_classes] and class ids [...].

    Args:
        gamma: focusing strength, >= 0 (the paper's best: 2).
        alpha: None (no weighting), one weight for all classes, or one weight per class
            (e.g. `bert_tf.metrics.class_weights`, as a list in class order).
    """

    def __init__(
        self,
        gamma: float = 2.0,
        alpha: float | Sequence[float] | None = None,
        reduction: str = "sum_over_batch_size",
        name: str = "sparse_categorical_focal_loss",
        dtype=None,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        if gamma < 0:
            raise ValueError(f"SparseCategoricalFocalLoss: gamma must be >= 0, got {gamma!r}.")
        if alpha is not None and not isinstance(alpha, (int, float)):
            alpha = [float(a) for a in alpha]
        self.gamma = float(gamma)
        self.alpha = alpha

    def call(self, y_true, y_pred):
        labels = tf.cast(y_true, tf.int32)
        if labels.shape.rank == y_pred.shape.rank:  # labels [..., 1]
            labels = tf.squeeze(labels, axis=-1)
        cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred)  # -log(p_t)
        p_true = tf.exp(-cross_entropy)
        loss = tf.pow(1.0 - p_true, self.gamma) * cross_entropy
        if self.alpha is None:
            return loss
        if isinstance(self.alpha, list):
            if y_pred.shape[-1] is not None and len(self.alpha) != y_pred.shape[-1]:
                raise ValueError(
                    f"SparseCategoricalFocalLoss: {len(self.alpha)} alpha weights for {y_pred.shape[-1]} classes."
                )
            return tf.gather(tf.constant(self.alpha, loss.dtype), labels) * loss
        return self.alpha * loss

    def get_config(self):
        return {**super().get_config(), "gamma": self.gamma, "alpha": self.alpha}
