"""`TokenPooling`: token vectors → one vector per text, counting only the real tokens (the padding mask).

The one pooling of the package: `BertEmbedder` (`bert-tf finetune --task embed`, `bert-tf embed`,
`bert_tf.load_embedder`) and `ExportedEmbedder` (an exported encoder's vectors) use it. `POOLINGS` (bert-as-service's names in brackets):
"mean" the average over real tokens [REDUCE_MEAN] (Sentence-BERT's default), "cls" the first token's vector
[CLS_TOKEN], "max" the element-wise maximum over real tokens [REDUCE_MAX], "mean_max" both concatenated
[REDUCE_MEAN_MAX]. A row without any real token pools to zeros. The result is float32 whatever the vectors' type.

Example:
    >>> import tensorflow as tf
    >>> vectors = tf.constant([[[1.0, 2.0], [3.0, 0.0], [9.0, 9.0]]])   # the third token is padding
    >>> TokenPooling("mean")(vectors, tf.constant([[1, 1, 0]])).numpy().tolist()
    [[2.0, 1.0]]
    >>> TokenPooling("mean_max")(vectors, tf.constant([[1, 1, 0]])).numpy().tolist()
    [[2.0, 1.0, 3.0, 2.0]]
"""

from __future__ import annotations

import keras
import tensorflow as tf

POOLINGS = ("mean", "cls", "max", "mean_max")


def pooled_width(pooling: str, width: int) -> int:
    """The size of a pooled vector of `width`-wide token vectors."""
    return 2 * width if pooling == "mean_max" else width


@keras.saving.register_keras_serializable(package="bert_tf")
class TokenPooling(keras.layers.Layer):
    """[batch, seq, width] vectors and a [batch, seq] 1/0 mask → [batch, width] ([batch, 2·width] for "mean_max")."""

    def __init__(self, pooling: str = "mean", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {pooling!r}; use one of {list(POOLINGS)}.")
        self.pooling = pooling

    def call(self, vectors, mask):
        vectors = tf.cast(vectors, tf.float32)
        if self.pooling == "cls":
            return vectors[:, 0]
        mask = tf.expand_dims(tf.cast(mask, tf.float32), -1)  # not [:, :, None]: TFLite's StridedSlice has no new axes
        count = tf.reduce_sum(mask, axis=1)
        mean = tf.reduce_sum(vectors * mask, axis=1) / tf.maximum(count, 1.0)
        if self.pooling == "mean":
            return mean
        maximum = tf.reduce_max(tf.where(mask > 0, vectors, tf.float32.min), axis=1)
        maximum = tf.where(count > 0, maximum, tf.zeros_like(maximum))
        return maximum if self.pooling == "max" else tf.concat([mean, maximum], axis=-1)

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling}
