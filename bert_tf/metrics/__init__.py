"""Evaluation metrics for fine-tuning tasks (numpy), and the Keras losses and metrics that train them."""

from bert_tf.metrics.classification import (
    accuracy,
    class_weights,
    classification_report,
    confusion_matrix,
    macro_f1,
    matthews_corrcoef,
    precision_recall_f1,
)
from bert_tf.metrics.focal_loss import SparseCategoricalFocalLoss
from bert_tf.metrics.masked_accuracy import MaskedSparseCategoricalAccuracy
from bert_tf.metrics.ner import extract_entities, ner_scores
from bert_tf.metrics.squad import exact_match, f1_score, normalize_answer, squad_scores

__all__ = [
    "MaskedSparseCategoricalAccuracy",
    "SparseCategoricalFocalLoss",
    "accuracy",
    "class_weights",
    "classification_report",
    "confusion_matrix",
    "exact_match",
    "extract_entities",
    "f1_score",
    "macro_f1",
    "matthews_corrcoef",
    "ner_scores",
    "normalize_answer",
    "precision_recall_f1",
    "squad_scores",
]
