"""The initializer of BERT's weights: truncated normal with the config's `initializer_range`."""

import keras

from bert_tf.config import BertConfig


def weight_initializer(config: BertConfig) -> keras.initializers.Initializer:
    """A new initializer, for one weight only.

    Never share one instance between weights: Keras 3 gives every call of an unseeded
    initializer instance the same values, so a shared one would make, e.g., a layer's
    query, key and value kernels identical (seeds still follow `keras.utils.set_random_seed`).

    Example:
        >>> kernel = keras.layers.Dense(4, kernel_initializer=weight_initializer(BertConfig()))
    """
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)
