import keras
import numpy as np
import pytest

from bert_tf.optimization import AdamW, Lamb, OptimizerConfig, WarmupLinearDecay, create_optimizer
from tiny_tasks import adamw_difference, tiny_encoder


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


def test_fused_adamw_update_equals_keras_adamw():
    # bert_tf's AdamW applies Keras' Adam arithmetic in one fused kernel; weight decay and sparse
    # (embedding) gradients go through Keras' own code. Four steps of fit at a large rate.
    assert adamw_difference() < 1e-5
