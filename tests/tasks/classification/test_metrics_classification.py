import math

import numpy as np
import pytest

from bert_tf.tasks.classification.metrics import accuracy, class_weights, classification_report, confusion_matrix
from bert_tf.tasks.classification.metrics import macro_f1, matthews_corrcoef, precision_recall_f1

# Confusion (rows true, columns predicted) for classes 0, 1, 2:
#   [[1, 1, 0],
#    [0, 2, 0],
#    [1, 0, 0]]
LABELS = [0, 0, 1, 1, 2]
PREDICTIONS = [0, 1, 1, 1, 0]


def test_confusion_matrix_rows_are_true_classes():
    assert confusion_matrix(LABELS, PREDICTIONS).tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    assert confusion_matrix(LABELS, PREDICTIONS, classes=[1, 3]).tolist() == [[2, 0], [0, 0]]


def test_per_class_scores_by_hand():
    scores = precision_recall_f1(LABELS, PREDICTIONS)
    np.testing.assert_allclose(scores["precision"], [1 / 2, 2 / 3, 0])
    np.testing.assert_allclose(scores["recall"], [1 / 2, 1, 0])
    np.testing.assert_allclose(scores["f1"], [1 / 2, 4 / 5, 0])  # class 2 was never predicted: 0, not NaN
    assert scores["support"].tolist() == [2, 2, 1]
    assert accuracy(LABELS, PREDICTIONS) == 0.6
    assert macro_f1(LABELS, PREDICTIONS) == pytest.approx((1 / 2 + 4 / 5 + 0) / 3)


def test_matthews_correlation():
    # Binary: tp=2, tn=1, fp=1, fn=1 → (2*1 - 1*1) / sqrt(3*3*2*2) = 1/6.
    assert matthews_corrcoef([1, 1, 1, 0, 0], [1, 1, 0, 1, 0]) == pytest.approx(1 / 6)
    # Multi-class (Gorodkin): c=3, s=5, t=(2,2,1), p=(2,3,0) → (15 - 10) / sqrt((25 - 13) * (25 - 9)).
    assert matthews_corrcoef(LABELS, PREDICTIONS) == pytest.approx(5 / math.sqrt(12 * 16))
    assert matthews_corrcoef([0, 1, 2], [0, 1, 2]) == pytest.approx(1.0)
    assert matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    assert matthews_corrcoef([0, 1, 0, 1], [1, 1, 1, 1]) == 0.0  # constant predictions: undefined → 0


def test_report_names_classes_and_includes_unseen_ones():
    report = classification_report(LABELS, PREDICTIONS, label_names=["neg", "pos", "neutral", "other"])
    assert report["accuracy"] == 0.6
    assert list(report["per_class"]) == ["neg", "pos", "neutral", "other"]
    assert report["per_class"]["pos"] == pytest.approx({"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2})
    assert report["per_class"]["other"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert report["macro_f1"] == pytest.approx((0.5 + 0.8) / 4)
    assert report["mcc"] == pytest.approx(matthews_corrcoef(LABELS, PREDICTIONS))
    assert list(classification_report(LABELS, PREDICTIONS)["per_class"]) == ["0", "1", "2"]


def test_class_weights_are_n_over_k_times_count():
    assert class_weights([0, 0, 0, 1, 2, 2]) == pytest.approx({0: 6 / 9, 1: 2.0, 2: 1.0})


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: accuracy([0, 1], [0]), "same length"),
        (lambda: accuracy([], []), "empty"),
        (lambda: macro_f1([[0, 1]], [[0, 1]]), "1-D"),
        (lambda: class_weights([]), "empty"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_scores_of_some_classes_count_every_prediction_of_them():
    """A class's precision counts all its predictions, also those whose true class is not among `classes`
    (multi-label scoring asks for class True alone: precision was 1 whenever any prediction was right)."""
    scores = precision_recall_f1([1, 0, 0, 2], [1, 1, 0, 1], classes=[1])
    np.testing.assert_allclose(scores["precision"], [1 / 3])
    np.testing.assert_allclose(scores["recall"], [1.0])
    np.testing.assert_allclose(scores["f1"], [0.5])
    np.testing.assert_array_equal(scores["support"], [1])
    truth, predicted = np.array([True, False, False]), np.array([True, True, False])
    np.testing.assert_allclose(precision_recall_f1(truth, predicted, classes=[True])["precision"], [0.5])


def test_the_report_names_the_class_whose_f1_it_gives():
    from bert_tf.tasks.classification.task import ClassificationTask

    scores = classification_report([0, 1, 1, 0], [0, 1, 0, 0], ["negative", "positive"])
    scores["f1"] = scores["per_class"]["positive"]["f1"]
    head = ClassificationTask.format_scores(scores).splitlines()[0]
    assert "F1 of 'positive' 0.6667" in head and "second class" not in head
