"""The activation functions BERT configs name, by their canonical `BertConfig` names."""

import tensorflow as tf


def gelu_exact(x):
    """GELU with the exact Gaussian CDF (erf), as the original BERT."""
    return tf.nn.gelu(x, approximate=False)


def gelu_tanh(x):
    """GELU with the tanh approximation (Hugging Face's "gelu_new")."""
    return tf.nn.gelu(x, approximate=True)


ACTIVATIONS = {"gelu": gelu_exact, "gelu_tanh": gelu_tanh, "relu": tf.nn.relu}
