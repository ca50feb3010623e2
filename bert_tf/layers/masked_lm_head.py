"""BERT's masked-LM head: transform the vectors at masked positions, then score every vocabulary word."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.activated_dense import ActivatedDense
from bert_tf.layers.initializer import weight_initializer
from bert_tf.layers.layer_norm import LayerNormalization


class MaskedLMHead(keras.layers.Layer):
    """dense + activation + LayerNorm, then logits through the (tied) word-embedding matrix plus a bias.

    It takes the encoder's outputs at the masked positions only: for seq 128 with 20
    predictions, projecting those onto the vocabulary is 6x less work than projecting
    every position.
    """

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.dense = ActivatedDense(
            config.hidden_size,
            config.hidden_act,
            kernel_initializer=weight_initializer(config),
            name="transform_dense",
        )
        self.layer_norm = LayerNormalization(epsilon=config.layer_norm_eps, name="layer_norm")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.config.hidden_size))
        self.layer_norm.build((None, None, self.config.hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.config.vocab_size,), initializer="zeros")
        self.built = True

    def call(self, masked_states, word_embeddings):
        """Encoder outputs at the masked positions [batch, predictions, hidden], [vocab, hidden] → float32
        logits [batch, predictions, vocab]."""
        # As one [batch·predictions, hidden] matrix, the vocabulary projection and its gradient for the
        # embeddings are single matrix multiplies; a batched multiply against the shared matrix would
        # make a [vocab, hidden] gradient per example and then sum them (several times slower).
        rows = tf.reshape(masked_states, [-1, self.config.hidden_size])
        transformed = self.layer_norm(self.dense(rows))
        logits = tf.matmul(transformed, tf.cast(word_embeddings, tf.float32), transpose_b=True)
        logits = logits + tf.cast(self.output_bias, tf.float32)
        return tf.reshape(logits, tf.concat([tf.shape(masked_states)[:2], [self.config.vocab_size]], axis=0))

    def google_weights(self) -> dict:
        """Variables under Google's names (after `cls/predictions/`)."""
        return {
            "transform/dense/kernel": self.dense.kernel,
            "transform/dense/bias": self.dense.bias,
            "transform/LayerNorm/gamma": self.layer_norm.gamma,
            "transform/LayerNorm/beta": self.layer_norm.beta,
            "output_bias": self.output_bias,
        }
