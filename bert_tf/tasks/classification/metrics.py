"""Classification scores on label and prediction arrays, in numpy (GLUE: accuracy, F1, MCC).

They match scikit-learn's `accuracy_score`, `precision_recall_fscore_support`,
`f1_score(average="macro")`, `matthews_corrcoef` and `compute_class_weight("balanced")`
(a score whose denominator is 0 is 0), without depending on it.

Example:
    >>> labels, predictions = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    >>> accuracy(labels, predictions)
    0.6
    >>> round(macro_f1(labels, predictions), 4)  # F1 per class: 0.5, 0.8, 0
    0.4333
    >>> class_weights([0, 0, 0, 1])  # n / (k * count)
    {0: 0.6666666666666666, 1: 2.0}
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def _label_arrays(labels, predictions) -> tuple[np.ndarray, np.ndarray]:
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.ndim != 1 or labels.shape != predictions.shape:
        raise ValueError(
            f"labels and predictions must be 1-D arrays of the same length, got shapes {labels.shape} and {predictions.shape}."
        )
    if labels.size == 0:
        raise ValueError("labels and predictions are empty.")
    return labels, predictions


def _classes(labels, predictions, classes) -> np.ndarray:
    """The given classes, or every class seen in the labels or predictions (sorted)."""
    return np.union1d(labels, predictions) if classes is None else np.asarray(classes)


def _ratio(numerator, denominator) -> np.ndarray:
    """numerator / denominator, and 0 where the denominator is 0."""
    numerator, denominator = np.asarray(numerator, float), np.asarray(denominator, float)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator != 0)


def confusion_matrix(labels, predictions, classes: Sequence | None = None) -> np.ndarray:
    """Counts [len(classes), len(classes)]: row = true class, column = predicted class."""
    labels, predictions = _label_arrays(labels, predictions)
    classes = _classes(labels, predictions, classes)
    true_one_hot = (labels[:, None] == classes[None, :]).astype(int)
    predicted_one_hot = (predictions[:, None] == classes[None, :]).astype(int)
    return true_one_hot.T @ predicted_one_hot


def accuracy(labels, predictions) -> float:
    """Share of predictions equal to the label."""
    labels, predictions = _label_arrays(labels, predictions)
    return float(np.mean(labels == predictions))


def precision_recall_f1(labels, predictions, classes: Sequence | None = None) -> dict[str, np.ndarray]:
    """Per class (in the order of `classes`, default: every class seen, sorted): `precision`,
    `recall`, `f1` and `support` (the number of true examples)."""
    labels, predictions = _label_arrays(labels, predictions)
    classes = _classes(labels, predictions, classes)
    # Per class, over every example (not only those whose true class is among `classes`).
    is_true, is_predicted = (labels[:, None] == classes[None, :]), (predictions[:, None] == classes[None, :])
    true_positives = (is_true & is_predicted).sum(axis=0)
    support, predicted = is_true.sum(axis=0), is_predicted.sum(axis=0)
    precision, recall = _ratio(true_positives, predicted), _ratio(true_positives, support)
    return {
        "precision": precision,
        "recall": recall,
        "f1": _ratio(2 * precision * recall, precision + recall),
        "support": support,
    }


def macro_f1(labels, predictions, classes: Sequence | None = None) -> float:
    """The unweighted mean of the per-class F1 scores."""
    return float(np.mean(precision_recall_f1(labels, predictions, classes)["f1"]))


def matthews_corrcoef(labels, predictions) -> float:
    """Matthews correlation coefficient, multi-class form (Gorodkin's R_K); 0 when undefined.

    1 is perfect, 0 is chance, -1 total disagreement (binary). CoLA's GLUE score.
    """
    counts = confusion_matrix(labels, predictions).astype(float)
    total, correct = counts.sum(), np.trace(counts)
    true_counts, predicted_counts = counts.sum(axis=1), counts.sum(axis=0)
    covariance = correct * total - true_counts @ predicted_counts
    spread = np.sqrt((total**2 - predicted_counts @ predicted_counts) * (total**2 - true_counts @ true_counts))
    return float(covariance / spread) if spread else 0.0


def classification_report(labels, predictions, label_names: Sequence[str] | None = None) -> dict:
    """Every score at once: `accuracy`, `macro_f1`, `mcc` and `per_class` {name: precision, recall, f1, support}.

    With `label_names`, the classes are the ids `0 .. len(label_names) - 1` and are reported
    under their names (a class never seen scores 0); otherwise, every class seen, by id.
    """
    labels, predictions = _label_arrays(labels, predictions)
    classes = None if label_names is None else np.arange(len(label_names))
    classes = _classes(labels, predictions, classes)
    names = [str(c) for c in classes.tolist()] if label_names is None else list(label_names)
    scores = precision_recall_f1(labels, predictions, classes)
    return {
        "accuracy": accuracy(labels, predictions),
        "macro_f1": float(np.mean(scores["f1"])),
        "mcc": matthews_corrcoef(labels, predictions),
        "per_class": {
            name: {"precision": float(precision), "recall": float(recall), "f1": float(f1), "support": int(support)}
            for name, precision, recall, f1, support in zip(
                names, scores["precision"], scores["recall"], scores["f1"], scores["support"]
            )
        },
    }


def class_weights(labels) -> dict[int, float]:
    """Weights that balance the classes: n / (k * count) for each of the k classes seen in n labels.

    The result is what `keras.Model.fit(class_weight=...)` takes.
    """
    classes, counts = np.unique(np.asarray(labels), return_counts=True)
    if classes.size == 0:
        raise ValueError("class_weights: labels are empty.")
    weights = counts.sum() / (len(classes) * counts)
    return {int(c): float(w) for c, w in zip(classes, weights)}
