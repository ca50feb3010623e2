import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_tasks import compiled_task, tiny_encoder, token_data

from bert_tf.metrics import MaskedSparseCategoricalAccuracy
from bert_tf.tasks.ner.model import BertTokenClassifier

LABELS = np.array([[-100, 1, 0, -100], [-100, 2, -100, -100]])


def test_outputs_logits_per_token():
    model = BertTokenClassifier(tiny_encoder(), num_labels=5)
    inputs, _ = token_data(n=3)
    logits = model(inputs)
    assert tuple(logits.shape) == (3, 8, 5) and logits.dtype == "float32"


def test_loss_is_the_mean_cross_entropy_over_labelled_positions_only():
    loss = BertTokenClassifier(tiny_encoder(), num_labels=3).default_loss()
    logits = np.random.default_rng(0).normal(size=(2, 4, 3)).astype("float32")
    log_probs = tf.nn.log_softmax(logits).numpy()
    expected = -np.mean([log_probs[0, 1, 1], log_probs[0, 2, 0], log_probs[1, 1, 2]])
    np.testing.assert_allclose(float(loss(LABELS, logits)), expected, rtol=1e-6)
    changed = logits.copy()
    changed[LABELS == -100] = 100.0  # whatever the model says at ignored positions
    np.testing.assert_allclose(float(loss(LABELS, changed)), expected, rtol=1e-6)


def test_masked_accuracy_counts_labelled_positions_only():
    # argmax per position: [[0, 1, 1, 0], [2, 0, 2, 2]] → right at (0, 1) and nowhere else: 1 of 3.
    predicted = np.array([[0, 1, 1, 0], [2, 0, 2, 2]])
    logits = np.eye(3, dtype="float32")[predicted]
    metric = MaskedSparseCategoricalAccuracy()
    metric.update_state(LABELS, logits)
    assert float(metric.result()) == pytest.approx(1 / 3)
    weighted = MaskedSparseCategoricalAccuracy()
    weighted.update_state(LABELS, logits, sample_weight=np.array([3.0, 1.0]))  # per example
    assert float(weighted.result()) == pytest.approx(3 / 7)
    restored = MaskedSparseCategoricalAccuracy.from_config(MaskedSparseCategoricalAccuracy(ignore_class=-1).get_config())
    assert restored.ignore_class == -1


def test_fit_learns_a_separable_task_and_saves_and_loads(tmp_path):
    keras.utils.set_random_seed(0)
    model, inputs, labels = compiled_task(
        "token_classifier", learning_rate=1e-2, num_train_steps=20, label_names=["low", "high"]
    )
    before = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    model.fit(inputs, labels, batch_size=8, epochs=3, verbose=0)
    after = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    assert after["loss"] < 0.5 * before["loss"] and after["accuracy"] > 0.9

    path = tmp_path / "token_classifier.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertTokenClassifier)
    assert (loaded.num_labels, loaded.label_names) == (2, ["low", "high"])
    np.testing.assert_allclose(loaded.predict(inputs, verbose=0), model.predict(inputs, verbose=0), atol=1e-6)
    assert int(loaded.optimizer.iterations) == 12  # compiled again, with the optimizer state


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_labels=1), "num_labels must be an integer >= 2"),
        (dict(num_labels=3, label_names=["O", "B-PER"]), "2 label_names for num_labels=3"),
        (dict(num_labels=3, dropout=-0.1), "dropout must be in"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertTokenClassifier(tiny_encoder(), **kwargs)
