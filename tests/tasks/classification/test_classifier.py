import keras
import numpy as np
import pytest
from tiny_tasks import classification_data, compiled_task, tiny_encoder

from bert_tf.tasks.classification.model import BertClassifier


@pytest.mark.parametrize(
    "mode, num_classes, loss_class",
    [
        ("single_label", 3, keras.losses.SparseCategoricalCrossentropy),
        ("multi_label", 4, keras.losses.BinaryCrossentropy),
        ("regression", 1, keras.losses.MeanSquaredError),
    ],
)
def test_outputs_logits_per_class_and_picks_the_loss_by_mode(mode, num_classes, loss_class):
    model = BertClassifier(tiny_encoder(), num_classes=num_classes, mode=mode)
    inputs, _ = classification_data(n=3)
    logits = model(inputs)
    assert tuple(logits.shape) == (3, num_classes) and logits.dtype == "float32"
    loss = model.default_loss()
    assert isinstance(loss, loss_class)
    if mode != "regression":
        assert loss.get_config()["from_logits"]


@pytest.mark.parametrize("mode, labels", [("multi_label", [[1, 0], [0, 1], [1, 1]]), ("regression", [0.5, -1.0, 2.0])])
def test_other_modes_take_their_labels(mode, labels):
    model = BertClassifier(tiny_encoder(), num_classes=2 if mode == "multi_label" else 1, mode=mode)
    inputs, _ = classification_data(n=3)
    logits, labels = model(inputs), np.array(labels, "float32")
    assert np.isfinite(float(model.default_loss()(labels, logits)))
    (metric,) = model.default_metrics()
    metric.update_state(labels, logits)
    assert np.isfinite(float(metric.result()))


def test_fit_learns_a_separable_task_and_saves_and_loads(tmp_path):
    keras.utils.set_random_seed(0)
    model, inputs, labels = compiled_task("classifier", learning_rate=1e-2, num_train_steps=20, label_names=["low", "high"])
    before = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    model.fit(inputs, labels, batch_size=8, epochs=4, verbose=0)
    after = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    assert after["loss"] < 0.5 * before["loss"] and after["accuracy"] == 1.0

    path = tmp_path / "classifier.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertClassifier)
    assert (loaded.num_classes, loaded.mode, loaded.label_names) == (2, "single_label", ["low", "high"])
    np.testing.assert_allclose(loaded.predict(inputs, verbose=0), model.predict(inputs, verbose=0), atol=1e-6)
    # The optimizer comes back with its state, ready to resume training.
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) == 16
    assert loaded.optimizer.weight_decay_exclusions == ("bias", "gamma", "beta")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(num_classes=2, mode="binary"), ValueError, "unknown mode 'binary'"),
        (dict(num_classes=0), ValueError, "num_classes must be a positive integer"),
        (dict(num_classes=2.0), ValueError, "num_classes must be a positive integer"),
        (dict(num_classes=1), ValueError, "mode='multi_label' with num_classes=1"),
        (dict(num_classes=3, label_names=["a", "b"]), ValueError, "2 label_names for num_classes=3"),
        (dict(num_classes=2, dropout=1.0), ValueError, "dropout must be in"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        BertClassifier(tiny_encoder(), **kwargs)


def test_encoder_must_be_a_bert_model():
    with pytest.raises(TypeError, match="encoder must be a bert_tf.BertModel"):
        BertClassifier(keras.layers.Dense(2), num_classes=2)
