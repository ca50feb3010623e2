"""bert_tf's LayerNormalization against keras.layers.LayerNormalization: values, gradients, saving."""

import numpy as np
import keras
import pytest
import tensorflow as tf

from bert_tf.layers.layer_norm import LayerNormalization


def layer_pair(hidden):
    ours, theirs = LayerNormalization(epsilon=1e-12), keras.layers.LayerNormalization(epsilon=1e-12)
    ours.build((None, hidden))
    theirs.build((None, hidden))
    rng = np.random.default_rng(1)
    ours.gamma.assign(1.0 + 0.1 * rng.normal(size=hidden).astype("float32"))
    ours.beta.assign(0.1 * rng.normal(size=hidden).astype("float32"))
    theirs.set_weights(ours.get_weights())
    return ours, theirs


def values_and_gradients(layer, x, training):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=training)
        # A non-uniform upstream gradient exercises every term of the backward pass.
        loss = tf.reduce_sum(y * tf.reshape(tf.sin(tf.range(tf.size(y), dtype=tf.float32)), tf.shape(y)))
    return (y, *tape.gradient(loss, [x, layer.gamma, layer.beta]))


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("shape", [(3, 16), (2, 5, 16), (4, 7, 48)])
def test_same_values_and_gradients_as_keras(training, shape):
    ours, theirs = layer_pair(shape[-1])
    x = tf.constant(np.random.default_rng(0).normal(3.0, 2.0, shape), tf.float32)
    run = tf.function(values_and_gradients, reduce_retracing=True)
    for mine, reference in zip(run(ours, x, training), values_and_gradients(theirs, x, False)):
        np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-5)


def test_computes_in_float32_under_mixed_precision():
    ours, theirs = layer_pair(16)
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 16)), tf.bfloat16)
    for training in (False, True):
        y = ours(x, training=training)
        assert y.dtype == tf.float32
        np.testing.assert_allclose(y, theirs(tf.cast(x, tf.float32)), atol=1e-5)


def test_saves_and_loads_as_a_layer(tmp_path):
    ours, _ = layer_pair(16)
    model = keras.Sequential([keras.Input((16,)), ours])
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert isinstance(loaded.layers[0], LayerNormalization) and loaded.layers[0].dtype == "float32"
    x = np.random.default_rng(2).normal(size=(3, 16)).astype("float32")
    np.testing.assert_allclose(loaded(x), model(x), atol=0)
