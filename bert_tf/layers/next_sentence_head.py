"""BERT's next-sentence-prediction head: a 2-way classifier on the pooled output."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.initializer import weight_initializer


class NextSentenceHead(keras.layers.Layer):
    """pooled_output [batch, hidden] → float32 logits [batch, 2] (0 = IsNext, 1 = NotNext, as Google's).

    The weights keep Google's layout, [2, hidden], so checkpoints load without transposing.
    """

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights",
            shape=(2, self.config.hidden_size),
            initializer=weight_initializer(self.config),
        )
        self.output_bias = self.add_weight(name="output_bias", shape=(2,), initializer="zeros")
        self.built = True

    def call(self, pooled_output):
        logits = tf.matmul(tf.cast(pooled_output, tf.float32), tf.cast(self.output_weights, tf.float32), transpose_b=True)
        return logits + tf.cast(self.output_bias, tf.float32)

    def google_weights(self) -> dict:
        """Variables under Google's names (after `cls/seq_relationship/`)."""
        return {"output_weights": self.output_weights, "output_bias": self.output_bias}
