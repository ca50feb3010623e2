"""LayerNormalization over the last axis, computed in float32, faster than Keras' on a CPU.

Same variables, names and results as `keras.layers.LayerNormalization(axis=-1)` (a subclass: it saves,
loads and converts as that layer). Only `call` differs, for speed, because Keras computes the variance
with a SquaredDifference against a stop-gradient mean and sums through an AddN:
- at inference, the same formula in nine plain ops (no XLA: serving sees a new shape per request);
- in training, XLA fuses the forward pass into one loop and the backward pass (recomputed from the
  input, nothing kept between the passes) into one more.
The techniques benchmark measures what both gain in whole encoders.

Example:
    >>> import numpy as np, keras
    >>> x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    >>> ours, theirs = LayerNormalization(epsilon=1e-12), keras.layers.LayerNormalization(epsilon=1e-12)
    >>> bool(np.allclose(ours(x), theirs(x), atol=1e-6))
    True
"""

import keras
import tensorflow as tf


def _centered_and_variance(x):
    """(x − mean, variance) over the last axis of a float32 `x`."""
    centered = x - tf.reduce_mean(x, axis=-1, keepdims=True)
    return centered, tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)


def _normalize(x, gamma, beta, epsilon):
    """(x − mean) / √(variance + ε) · γ + β over the last axis of a float32 `x`."""
    centered, variance = _centered_and_variance(x)
    return beta + centered * (tf.math.rsqrt(variance + epsilon) * gamma)


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _normalize_fused(rows, gamma, beta, epsilon):
    return _normalize(rows, gamma, beta, epsilon)


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _normalize_gradients(rows, gamma, upstream, epsilon):
    """Gradients for rows, γ and β of `_normalize`, given the upstream gradient; rows [n, hidden]."""
    centered, variance = _centered_and_variance(rows)
    inverse_std = tf.math.rsqrt(variance + epsilon)
    normalized = centered * inverse_std
    upstream_normalized = upstream * gamma
    rows_gradient = inverse_std * (
        upstream_normalized
        - tf.reduce_mean(upstream_normalized, axis=-1, keepdims=True)
        - normalized * tf.reduce_mean(upstream_normalized * normalized, axis=-1, keepdims=True)
    )
    return rows_gradient, tf.reduce_sum(upstream * normalized, axis=0), tf.reduce_sum(upstream, axis=0)


@tf.autograph.experimental.do_not_convert  # AutoGraph would turn `gradient` into a tensor
@tf.custom_gradient
def _normalize_for_training(x, gamma, beta, epsilon):
    rows = tf.reshape(x, [-1, tf.shape(x)[-1]])

    def gradient(upstream):
        rows_gradient, gamma_gradient, beta_gradient = _normalize_gradients(
            rows, gamma, tf.reshape(upstream, tf.shape(rows)), epsilon)
        return tf.reshape(rows_gradient, tf.shape(x)), gamma_gradient, beta_gradient, None

    return tf.reshape(_normalize_fused(rows, gamma, beta, epsilon), tf.shape(x)), gradient


@keras.saving.register_keras_serializable(package="bert_tf")
class LayerNormalization(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis, in float32 whatever the dtype policy."""

    def __init__(self, epsilon: float = 1e-12, **kwargs):
        super().__init__(axis=-1, epsilon=epsilon, dtype="float32", **kwargs)

    def call(self, inputs, training=None):
        x = tf.cast(inputs, tf.float32)
        gamma, beta = tf.convert_to_tensor(self.gamma), tf.convert_to_tensor(self.beta)
        epsilon = tf.constant(self.epsilon, tf.float32)
        normalize = _normalize_for_training if training else _normalize
        return normalize(x, gamma, beta, epsilon)

    def get_config(self):
        config = super().get_config()
        for fixed in ("axis", "dtype"):
            config.pop(fixed, None)
        return config
