import keras
import numpy as np
import pytest

from bert_tf.metrics import SparseCategoricalFocalLoss

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(scale=3.0, size=(6, 4)).astype("float32")
LABELS = np.array([0, 1, 2, 3, 1, 0])


def _probability_of_truth():
    probabilities = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=-1, keepdims=True)
    return probabilities[np.arange(len(LABELS)), LABELS]


def test_gamma_zero_is_sparse_categorical_cross_entropy():
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    focal = SparseCategoricalFocalLoss(gamma=0.0)
    np.testing.assert_allclose(float(focal(LABELS, LOGITS)), float(cross_entropy(LABELS, LOGITS)), rtol=1e-6)


def test_matches_the_formula_with_per_class_alpha():
    alpha = [0.25, 0.5, 1.0, 2.0]
    p_true = _probability_of_truth()
    expected = np.mean(np.take(alpha, LABELS) * (1 - p_true) ** 2 * -np.log(p_true))
    loss = SparseCategoricalFocalLoss(gamma=2.0, alpha=alpha)
    np.testing.assert_allclose(float(loss(LABELS, LOGITS)), expected, rtol=1e-5)
    np.testing.assert_allclose(float(loss(LABELS[:, None], LOGITS)), expected, rtol=1e-5)  # labels [batch, 1]
    scalar = SparseCategoricalFocalLoss(gamma=2.0, alpha=0.25)
    np.testing.assert_allclose(float(scalar(LABELS, LOGITS)), np.mean(0.25 * (1 - p_true) ** 2 * -np.log(p_true)), rtol=1e-5)


def test_confident_mistakes_are_not_capped():
    logits = np.array([[60.0, 0.0]], "float32")  # p(true class 1) = e^-60
    assert float(SparseCategoricalFocalLoss(gamma=0.0)(np.array([1]), logits)) == pytest.approx(60.0, rel=1e-5)


def test_round_trips_through_keras_serialization():
    loss = SparseCategoricalFocalLoss(gamma=1.5, alpha=[1.0, 3.0])
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(restored, SparseCategoricalFocalLoss)
    assert (restored.gamma, restored.alpha) == (1.5, [1.0, 3.0])


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        SparseCategoricalFocalLoss(gamma=-1.0)
    with pytest.raises(ValueError, match="2 alpha weights for 4 classes"):
        SparseCategoricalFocalLoss(alpha=[1.0, 2.0])(LABELS, LOGITS)
