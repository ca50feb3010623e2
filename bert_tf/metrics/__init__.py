"""The Keras losses and metrics that train more than one model: focal loss (imbalanced classes) and accuracy
over the positions a label marks (masked LM, token classification). Each task's evaluation scores live with
the task (`bert_tf/tasks/<task>/metrics.py`)."""

from bert_tf.metrics.focal_loss import SparseCategoricalFocalLoss
from bert_tf.metrics.masked_accuracy import MaskedSparseCategoricalAccuracy

__all__ = ["MaskedSparseCategoricalAccuracy", "SparseCategoricalFocalLoss"]
