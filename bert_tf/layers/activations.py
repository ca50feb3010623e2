"""The activation functions BERT configs name, by their canonical `BertConfig` names.

`ACTIVATIONS` are TensorFlow's own ops, which oneDNN fuses into the preceding matrix multiply at
inference. `TRAINING_ACTIVATIONS` compute the same values for training: written by hand because
TensorFlow differentiates GELU through its ~7 elementwise ops, each a pass over the large
[tokens, intermediate] matrix, and keeps their intermediates for the backward pass. Here XLA fuses
the forward pass into one loop, and the backward pass recomputes the slope from the input in one
more loop (the techniques benchmark measures what it gains).

Example:
    >>> import numpy as np, tensorflow as tf
    >>> x = tf.constant(np.linspace(-4, 4, 9), tf.float32)
    >>> bool(np.allclose(TRAINING_ACTIVATIONS["gelu"](x), ACTIVATIONS["gelu"](x), atol=1e-6))
    True
"""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


def gelu_exact(x):
    """GELU with the exact Gaussian CDF (erf): Hugging Face's "gelu"."""
    return tf.nn.gelu(x, approximate=False)


def gelu_tanh(x):
    """GELU with the tanh approximation: google-research/bert's "gelu", Hugging Face's "gelu_new"."""
    return tf.nn.gelu(x, approximate=True)


# The hand-written forms below stay accurate in the left tail, where 1 + erf and 1 + tanh lose every digit.


def _gaussian_cdf(x):
    return 0.5 * tf.math.erfc(x * (-1.0 / math.sqrt(2.0)))


def _gelu_exact_value(x):
    """x·Φ(x)."""
    return x * _gaussian_cdf(x)


def _gelu_exact_slope(x):
    """d gelu_exact / dx = Φ(x) + x·φ(x)."""
    return _gaussian_cdf(x) + x * tf.exp(-0.5 * tf.square(x)) * (1.0 / math.sqrt(2.0 * math.pi))


def _twice_tanh_argument_and_slope(x):
    """2u and d(2u)/dx for u = c(x + 0.044715x³), c = √(2/π)."""
    squared = tf.square(x)
    return (2.0 * _SQRT_2_OVER_PI * x * (1.0 + _TANH_CUBIC * squared),
            2.0 * _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * squared))


def _gelu_tanh_value(x):
    """½x(1 + tanh(u)), as x·σ(2u)."""
    return x * tf.sigmoid(_twice_tanh_argument_and_slope(x)[0])


def _gelu_tanh_slope(x):
    """d gelu_tanh / dx = σ(2u) + x·σ(2u)·(1 − σ(2u))·(2u)′."""
    twice_u, twice_u_slope = _twice_tanh_argument_and_slope(x)
    sigmoid = tf.sigmoid(twice_u)
    return sigmoid + x * sigmoid * (1.0 - sigmoid) * twice_u_slope


def _fused_for_training(value, slope):
    """`value` with a gradient that recomputes `slope` from the input; each pass one XLA loop.

    Computes in float32 whatever the input dtype (mixed precision), like the LayerNorms.
    """

    # Flat 1-D signatures: one trace, and XLA compiles once per element count.
    @tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None])], autograph=False)
    def forward(flat):
        return value(flat)

    @tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None]), tf.TensorSpec([None])], autograph=False)
    def backward(flat, upstream):
        return upstream * slope(flat)

    @tf.autograph.experimental.do_not_convert  # AutoGraph would turn `gradient` into a tensor
    @tf.custom_gradient
    def fused(x):
        flat = tf.reshape(tf.cast(x, tf.float32), [-1])

        def gradient(upstream):
            flat_upstream = tf.reshape(tf.cast(upstream, tf.float32), [-1])
            return tf.cast(tf.reshape(backward(flat, flat_upstream), tf.shape(x)), x.dtype)

        return tf.cast(tf.reshape(forward(flat), tf.shape(x)), x.dtype), gradient

    return fused


ACTIVATIONS = {"gelu": gelu_exact, "gelu_tanh": gelu_tanh, "relu": tf.nn.relu}
TRAINING_ACTIVATIONS = {
    "gelu": _fused_for_training(_gelu_exact_value, _gelu_exact_slope),
    "gelu_tanh": _fused_for_training(_gelu_tanh_value, _gelu_tanh_slope),
    "relu": tf.nn.relu,
}
