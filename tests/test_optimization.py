import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_tasks import tiny_encoder

from bert_tf.optimization import AdamW, Lamb, OptimizerConfig, WarmupLinearDecay, create_optimizer


def test_schedule_warms_up_then_decays_linearly_to_zero():
    schedule = WarmupLinearDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    steps = [0, 5, 10, 55, 100, 150]
    np.testing.assert_allclose([float(schedule(step)) for step in steps], [0, 5e-4, 1e-3, 5e-4, 0, 0], atol=1e-9)


def test_schedule_without_warmup_starts_at_peak():
    schedule = WarmupLinearDecay(1e-3, num_train_steps=4)
    np.testing.assert_allclose([float(schedule(step)) for step in range(5)], [1e-3, 7.5e-4, 5e-4, 2.5e-4, 0], atol=1e-9)


def test_schedule_round_trips_through_keras_serialization():
    schedule = WarmupLinearDecay(2e-5, num_train_steps=1000, num_warmup_steps=100)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert isinstance(restored, WarmupLinearDecay)
    assert restored.get_config() == schedule.get_config()


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(learning_rate=1e-3, num_train_steps=10, num_warmup_steps=10), "num_warmup_steps < num_train_steps"),
        (dict(learning_rate=0.0, num_train_steps=10), "peak_learning_rate must be positive"),
        (dict(learning_rate=1e-3, num_train_steps=10, optimizer="sgd"), "unknown optimizer 'sgd'"),
        (dict(learning_rate=1e-3, num_train_steps=10, gradient_accumulation_steps=0), "gradient_accumulation_steps"),
        (dict(learning_rate=1e-3, num_train_steps=10, clipnorm=0.0), "clipnorm must be positive"),
        (dict(learning_rate=1e-3, num_train_steps=10, exclude_from_weight_decay="bias"), "not one string"),
    ],
)
def test_bad_settings_raise_clear_errors(settings, message):
    with pytest.raises(ValueError, match=message):
        OptimizerConfig(**settings)


def test_defaults_are_berts_recipe():
    optimizer = create_optimizer(2e-5, num_train_steps=1000, num_warmup_steps=100)
    assert isinstance(optimizer, AdamW)
    assert optimizer.weight_decay == 0.01
    assert optimizer.global_clipnorm == 1.0 and optimizer.clipnorm is None
    assert (optimizer.epsilon, optimizer.beta_1, optimizer.beta_2) == (1e-6, 0.9, 0.999)
    assert optimizer.gradient_accumulation_steps is None
    assert create_optimizer(2e-5, 1000, clipnorm=None).global_clipnorm is None
    assert isinstance(create_optimizer(1e-3, 1000, optimizer="lamb"), Lamb)


def _one_step_with_zero_gradients(optimizer):
    """Applies zero gradients to a tiny encoder: only weight decay can change a variable.

    Returns {variable path: (value before, value after, name)}.
    """
    variables = tiny_encoder().trainable_variables
    before = [np.array(v) for v in variables]
    optimizer.apply_gradients([(np.zeros(v.shape, "float32"), v) for v in variables])
    return {v.path: (b, np.array(v), v.name) for v, b in zip(variables, before)}


@pytest.mark.parametrize("name", ["adamw", "lamb"])
@pytest.mark.parametrize("restored", [False, True], ids=["fresh", "restored"])
def test_weight_decay_skips_biases_and_layer_norms(name, restored):
    # No warm-up: the first update uses the peak rate 0.1; decay multiplies by 1 - 0.1 * 0.5.
    optimizer = create_optimizer(0.1, num_train_steps=10, optimizer=name, weight_decay=0.5)
    if restored:  # as when a compiled .keras model is loaded to resume training
        optimizer = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    changes = _one_step_with_zero_gradients(optimizer)
    names = {name for _, _, name in changes.values()}
    assert {"kernel", "bias", "gamma", "beta", "embeddings", "position_embeddings"} <= names
    for path, (before, after, variable_name) in changes.items():
        if variable_name in ("bias", "gamma", "beta"):
            np.testing.assert_array_equal(after, before, err_msg=path)
        else:
            np.testing.assert_allclose(after, before * 0.95, rtol=1e-5, err_msg=path)


def test_gradient_accumulation_updates_every_n_batches():
    optimizer = create_optimizer(0.1, num_train_steps=10, gradient_accumulation_steps=2, weight_decay=0.0)
    variable = keras.Variable(np.ones(3, "float32"), name="kernel")
    optimizer.apply_gradients([(np.ones(3, "float32"), variable)])
    np.testing.assert_array_equal(np.array(variable), np.ones(3))
    optimizer.apply_gradients([(np.ones(3, "float32"), variable)])
    assert np.all(np.array(variable) < 1.0)
    assert int(optimizer.iterations) == 1  # the schedule counts updates, not batches
    assert float(optimizer.learning_rate) == pytest.approx(0.09)  # the rate after 1 update of 10 (Keras': 2 batches)


def test_adamw_adds_epsilon_after_the_bias_correction_as_pytorch_does():
    """Small gradients, where epsilon counts: the weights follow PyTorch's AdamW formula step by step."""
    lr, decay, epsilon, beta_1, beta_2 = 1e-2, 0.01, 1e-6, 0.9, 0.999
    optimizer = create_optimizer(lr, num_train_steps=1000, weight_decay=decay, epsilon=epsilon, clipnorm=None)
    variable = keras.Variable(np.array([0.5, -0.3, 0.2], "float32"), name="kernel")
    expected, m, v = np.array(variable, np.float64), 0.0, 0.0
    for step, gradient in enumerate(([3e-6, -1e-5, 1e-4], [1e-6, 2e-6, -3e-5], [-2e-6, 1e-5, 1e-4]), start=1):
        optimizer.apply_gradients([(np.array(gradient, "float32"), variable)])
        rate = lr * (1 - (step - 1) / 1000)  # the schedule, read at the step's start
        expected *= 1 - rate * decay
        m, v = beta_1 * m + (1 - beta_1) * np.array(gradient), beta_2 * v + (1 - beta_2) * np.square(gradient)
        expected -= rate * (m / (1 - beta_1 ** step)) / (np.sqrt(v / (1 - beta_2 ** step)) + epsilon)
        np.testing.assert_allclose(np.array(variable), expected, rtol=1e-6, err_msg=f"step {step}")


def test_global_norm_is_the_norm_of_the_dense_gradient():
    """An embedding's gradient rows for a repeated token add up before the norm is taken, as in PyTorch."""
    optimizer = create_optimizer(0.1, num_train_steps=10)
    repeated_rows = tf.IndexedSlices(tf.constant([[0.6, 0.0], [0.6, 0.0]]), tf.constant([1, 1]), tf.constant([3, 2]))
    clipped, = optimizer._clip_gradients([repeated_rows])
    # Dense: row 1 is [1.2, 0], norm 1.2 > 1, clipped to norm 1 (the rows' own norm, 0.85, would not clip).
    np.testing.assert_allclose(np.array(clipped), [[0, 0], [1, 0], [0, 0]], atol=1e-6)


def test_repeated_embedding_rows_update_as_their_summed_gradient():
    """A token twice in a batch: its row moves as under PyTorch's dense Adam (Keras' own sparse step
    applies the moments' decay once per repetition)."""
    def fit(gradient):
        optimizer = create_optimizer(0.1, num_train_steps=10, weight_decay=0.0, clipnorm=None)
        variable = keras.Variable(np.ones((3, 2), "float32"), name="embeddings")
        for _ in range(2):
            optimizer.apply_gradients([(gradient, variable)])
        return np.array(variable)

    repeated = tf.IndexedSlices(tf.fill([2, 2], 0.1), tf.constant([1, 1]), tf.constant([3, 2]))
    np.testing.assert_allclose(fit(repeated), fit(tf.constant([[0, 0], [0.2, 0.2], [0, 0]])), rtol=1e-6)
