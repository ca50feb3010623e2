"""Dropout that draws 16 random bits per element (half the random-number work of Keras' dropout), masked by XLA.

Example:
    >>> import numpy as np
    >>> dropout = Dropout(0.1, seed=0)
    >>> kept = np.asarray(dropout(np.ones((1000, 100), "float32"), training=True)) > 0
    >>> bool(0.89 < kept.mean() < 0.91)
    True
    >>> np.asarray(dropout(np.ones(3, "float32"))).tolist()  # no dropout outside training
    [1.0, 1.0, 1.0]
"""

import keras
import tensorflow as tf

# Each element's random number: a 16-bit half of one 32-bit draw.
_LEVELS = 1 << 16


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _zero_below_threshold_and_scale(values, halves, threshold, scale):
    """values · scale where halves ≥ threshold, else 0; one XLA loop (`halves` may be one longer)."""
    kept = halves[: tf.size(values)] >= tf.cast(threshold, tf.uint16)
    return tf.where(kept, values * tf.cast(scale, values.dtype), tf.zeros_like(values))


@tf.autograph.experimental.do_not_convert  # AutoGraph would turn `gradient` into a tensor
@tf.custom_gradient
def _drop(values, halves, threshold, scale):
    """Dropout of flat `values` by their random `halves`. Linear in `values`: the gradient is the
    same masking of the upstream gradient, with no mask kept between the passes."""

    def gradient(upstream):
        return _zero_below_threshold_and_scale(upstream, halves, threshold, scale), None, None, None

    return _zero_below_threshold_and_scale(values, halves, threshold, scale), gradient


@keras.saving.register_keras_serializable(package="bert_tf")
class Dropout(keras.layers.Layer):
    """Inverted dropout, as `keras.layers.Dropout`: in training, each element is zeroed with probability
    `rate` and the others are scaled so that the expected output equals the input.

    Written by hand for speed: on a CPU, generating random numbers is most of dropout's cost,
    and TensorFlow's Philox generator (behind Keras' dropout) makes one 32-bit number per
    element. Here each 32-bit number serves two elements, and XLA fuses the masking and scaling
    into one loop in each pass (the techniques benchmark measures both against Keras' dropout).
    An element is dropped when its 16 bits fall below round(rate · 65536), so the dropped share
    equals `rate` to within 1/131072, and kept elements are scaled by the exact inverse of the
    kept share.
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}.")
        self.rate = float(rate)
        self.seed = seed
        self._threshold = round(self.rate * _LEVELS)
        if self._threshold > 0:  # as Keras' Dropout: a seed generator (a variable) only when it drops anything
            self.seed_generator = keras.random.SeedGenerator(seed)
        self.built = True

    def call(self, inputs, training=False):
        if not training or self._threshold == 0:
            return inputs
        count = tf.size(inputs)
        seed = tf.cast(self.seed_generator.next(), tf.int64)
        # TensorFlow's random kernel, not XLA's: XLA's random numbers are far slower on a CPU.
        bits = tf.random.stateless_uniform([(count + 1) // 2], seed, dtype=tf.uint32, minval=None, maxval=None)
        halves = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])
        scale = _LEVELS / (_LEVELS - self._threshold)
        return tf.reshape(_drop(tf.reshape(inputs, [-1]), halves, self._threshold, scale), tf.shape(inputs))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
