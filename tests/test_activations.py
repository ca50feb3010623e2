"""The training activations (XLA-fused GELU with a recomputing gradient) against TensorFlow's own."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.layers.activations import ACTIVATIONS, TRAINING_ACTIVATIONS


def values_and_slopes(activation, x):
    """activation(x) and its derivative at each element."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = activation(x)
    return y, tape.gradient(y, x)


def float64_truth(name, x):
    return values_and_slopes(ACTIVATIONS[name], tf.cast(x, tf.float64))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("shape", [(7,), (3, 50), (2, 5, 33)])
def test_values_and_slopes_in_float32(name, shape):
    x = tf.constant(np.random.default_rng(0).normal(0.0, 3.0, shape), tf.float32)
    y, slope = tf.function(values_and_slopes, reduce_retracing=True)(TRAINING_ACTIVATIONS[name], x)
    assert y.shape == slope.shape == shape and y.dtype == slope.dtype == tf.float32
    true_y, true_slope = float64_truth(name, x)
    np.testing.assert_allclose(y, true_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(slope, true_slope, rtol=1e-6, atol=1e-6)
    # TensorFlow's own float32 ops agree to their precision: the tanh form's slope loses digits in the tails.
    tf_y, tf_slope = values_and_slopes(ACTIVATIONS[name], x)
    np.testing.assert_allclose(y, tf_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(slope, tf_slope, rtol=1e-5, atol=3e-5)


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh"])
def test_bfloat16_in_and_out_computed_in_float32(name):
    x = tf.constant(np.linspace(-6.0, 6.0, 301), tf.bfloat16)
    y, slope = values_and_slopes(TRAINING_ACTIVATIONS[name], x)
    assert y.dtype == slope.dtype == tf.bfloat16
    true_y, true_slope = float64_truth(name, x)
    # The float64 truth rounded once to bfloat16 (8 significant bits): within half a unit in the last place.
    np.testing.assert_allclose(tf.cast(y, tf.float64), true_y, rtol=2**-8, atol=1e-30)
    np.testing.assert_allclose(tf.cast(slope, tf.float64), true_slope, rtol=2**-8, atol=1e-30)


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_tanh"])
def test_encoder_training_gradients_equal_those_through_tensorflows_gelu(hidden_act):
    config = bert_tf.BertConfig.preset("tiny", hidden_act=hidden_act, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0)
    model = bert_tf.BertModel(config)
    inputs = {"input_word_ids": tf.constant([[2, 7, 9, 3, 0]]), "input_mask": tf.constant([[1, 1, 1, 1, 0]])}

    def training_gradients():
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=True)["sequence_output"]
            loss = tf.reduce_sum(outputs * tf.range(1.0, 1.0 + outputs.shape[-1]))
        gradients = tape.gradient(loss, model.trainable_variables)
        return outputs, [None if g is None else tf.convert_to_tensor(g) for g in gradients]

    fused_outputs, fused_gradients = training_gradients()
    for block in model.blocks:
        block.intermediate.training_activation = block.intermediate.inference_activation
    plain_outputs, plain_gradients = training_gradients()
    np.testing.assert_allclose(fused_outputs, plain_outputs, atol=1e-5)
    np.testing.assert_allclose(fused_outputs, model(inputs, training=False)["sequence_output"], atol=1e-5)
    # Float32 sums of terms up to ~300 (and the keys' bias, whose true gradient is 0): equal to a
    # millionth of the largest gradient.
    tolerance = 1e-6 * max(np.abs(plain).max() for plain in plain_gradients if plain is not None)
    for fused, plain, variable in zip(fused_gradients, plain_gradients, model.trainable_variables):
        if plain is None:  # the pooler: not on this loss's path
            assert fused is None, variable.path
            continue
        np.testing.assert_allclose(fused, plain, rtol=1e-4, atol=tolerance, err_msg=variable.path)
