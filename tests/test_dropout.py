"""bert_tf's Dropout (16 random bits per element): the statistics and the behaviour of keras.layers.Dropout."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers.dropout import Dropout


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_drops_the_rate_and_keeps_the_expected_value(rate):
    outputs = np.asarray(Dropout(rate, seed=1)(np.ones((1000, 1000), "float32"), training=True))
    dropped = np.mean(outputs == 0)
    assert abs(dropped - rate) < 0.002  # 1M elements: the standard error is at most 0.0005
    assert abs(outputs.mean() - 1.0) < 0.01
    kept_values = np.unique(outputs[outputs != 0])
    assert len(kept_values) == 1 and kept_values[0] == pytest.approx(1 / (1 - rate), rel=1e-4)


def test_identity_outside_training_and_at_rate_zero():
    inputs = np.random.default_rng(0).normal(size=(4, 5)).astype("float32")
    np.testing.assert_array_equal(Dropout(0.3)(inputs), inputs)
    np.testing.assert_array_equal(Dropout(0.3)(inputs, training=False), inputs)
    np.testing.assert_array_equal(Dropout(0.0)(inputs, training=True), inputs)


def test_new_mask_on_every_call_and_odd_sizes():
    dropout = Dropout(0.5, seed=3)
    first, second = (np.asarray(dropout(np.ones((7, 3, 5), "float32"), training=True)) for _ in range(2))
    assert first.shape == (7, 3, 5) and not np.array_equal(first, second)


def test_gradient_is_the_mask_times_the_scale():
    dropout = Dropout(0.25, seed=2)
    inputs = tf.ones([64, 32])
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = dropout(inputs, training=True)
    np.testing.assert_allclose(tape.gradient(outputs, inputs), np.asarray(outputs), rtol=1e-6)


def test_in_a_compiled_function_with_xla_and_bfloat16():
    dropout = Dropout(0.1, seed=0)
    run = tf.function(lambda x: dropout(x, training=True), jit_compile=True)
    outputs = np.asarray(tf.cast(run(tf.ones([256, 256], tf.bfloat16)), tf.float32))
    assert abs(np.mean(outputs == 0) - 0.1) < 0.01


def test_rate_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
        Dropout(1.0)
