"""A dense layer followed by one of BERT's activations, in the forms that fuse on a CPU.

`keras.layers.Dense` with its variables and names (a subclass: weights load and save as that
layer's); only `call` differs:
- at inference the bias is added with `tf.nn.bias_add`, so that oneDNN fuses the multiply, bias and
  GELU into one kernel (after Keras' `+`, the tanh form of GELU runs as ~7 separate passes over the
  output);
- in training the activation is `TRAINING_ACTIVATIONS`' XLA-fused GELU and gradient.
The techniques benchmark measures both.

Example:
    >>> import numpy as np
    >>> layer = ActivatedDense(4, "gelu_tanh")
    >>> layer(np.ones((2, 3), "float32")).shape
    TensorShape([2, 4])
"""

import keras
import tensorflow as tf

from bert_tf.layers.activations import ACTIVATIONS, TRAINING_ACTIVATIONS


class ActivatedDense(keras.layers.Dense):
    """activation(inputs · kernel + bias) for 2-D [rows, features] inputs; `hidden_act` as `BertConfig` names it."""

    def __init__(self, units: int, hidden_act: str, **kwargs):
        super().__init__(units, **kwargs)
        self.hidden_act = hidden_act
        self.inference_activation = ACTIVATIONS[hidden_act]
        self.training_activation = TRAINING_ACTIVATIONS[hidden_act]

    def call(self, inputs, training=None):
        kernel = tf.cast(self.kernel, self.compute_dtype)
        pre_activation = tf.nn.bias_add(tf.matmul(inputs, kernel), tf.cast(self.bias, self.compute_dtype))
        return (self.training_activation if training else self.inference_activation)(pre_activation)

    def get_config(self):
        return {**super().get_config(), "hidden_act": self.hidden_act}
