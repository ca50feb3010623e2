"""The initializer of BERT's weights: truncated normal with the config's `initializer_range`, or zeros
while `weights_loaded_next` says that every weight is about to be overwritten."""

import contextlib
import contextvars

import keras

from bert_tf.config import BertConfig

_LOADING = contextvars.ContextVar("bert_tf_weights_loaded_next", default=False)


def weight_initializer(config: BertConfig) -> keras.initializers.Initializer:
    """A new initializer, for one weight only.

    Never share one instance between weights: Keras 3 gives every call of an unseeded
    initializer instance the same values, so a shared one would make, e.g., a layer's
    query, key and value kernels identical (seeds still follow `keras.utils.set_random_seed`).

    Example:
        >>> kernel = keras.layers.Dense(4, kernel_initializer=weight_initializer(BertConfig()))
    """
    if _LOADING.get():
        return keras.initializers.Zeros()
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


@contextlib.contextmanager
def weights_loaded_next(every_weight: bool = True):
    """Within it, bert-tf layers are made to start from zeros instead of random draws.

    Only for models whose every weight is loaded right after they are built (from a checkpoint,
    a model file, another model): the draws would be thrown away, and they are most of the
    time a build takes. Keras has no public way to build a model without initializing it;
    this is bert-tf's own initializer choosing not to draw. `every_weight=False` (some are
    not in the checkpoint and keep their random start) changes nothing.

    Example:
        >>> with weights_loaded_next():
        ...     layer = keras.layers.Dense(4, kernel_initializer=weight_initializer(BertConfig()))
    """
    token = _LOADING.set(every_weight)
    try:
        yield
    finally:
        _LOADING.reset(token)
