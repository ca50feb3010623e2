"""One post-LayerNorm transformer encoder block, as in BERT."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.activated_dense import ActivatedDense
from bert_tf.layers.attention import SelfAttention
from bert_tf.layers.dropout import Dropout
from bert_tf.layers.initializer import weight_initializer
from bert_tf.layers.layer_norm import LayerNormalization


class TransformerBlock(keras.layers.Layer):
    """attention → dropout → residual → LayerNorm; feed-forward → dropout → residual → LayerNorm."""

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.attention = SelfAttention(config, name="attention")
        self.attention_dropout = Dropout(config.hidden_dropout_prob)
        # LayerNorms run in float32 even under a mixed-precision policy.
        self.attention_layer_norm = LayerNormalization(epsilon=config.layer_norm_eps, name="attention_layer_norm")
        self.intermediate = ActivatedDense(config.intermediate_size, config.hidden_act,
                                           kernel_initializer=weight_initializer(config), name="intermediate")
        self.output_dense = keras.layers.Dense(config.hidden_size, kernel_initializer=weight_initializer(config),
                                               name="output_dense")
        self.output_dropout = Dropout(config.hidden_dropout_prob)
        self.output_layer_norm = LayerNormalization(epsilon=config.layer_norm_eps, name="output_layer_norm")

    def build(self, input_shape=None):
        hidden_shape = (None, None, self.config.hidden_size)
        self.attention.build(hidden_shape)
        self.attention_layer_norm.build(hidden_shape)
        self.intermediate.build(hidden_shape)
        self.output_dense.build((None, None, self.config.intermediate_size))
        self.output_layer_norm.build(hidden_shape)
        self.built = True

    def _add_and_normalize(self, residual, update, layer_norm):
        return tf.cast(layer_norm(tf.cast(residual, tf.float32) + tf.cast(update, tf.float32)), self.compute_dtype)

    def call(self, hidden_states, input_mask, training=None, positions=None, token_rows=None):
        """Returns (output [batch, seq, hidden], attention probabilities [batch, heads, seq, seq]).

        With int `positions` [batch, n], only the outputs at those positions are computed (they
        still attend to every token): output [batch, n, hidden], probabilities [batch, heads, n, seq].
        With `token_rows` (`TokenRows`), `hidden_states` and the output are the [tokens, hidden]
        rows of the real tokens only (`positions` still index the [batch, seq] grid).
        """
        queries = None
        if positions is not None:
            queries = (tf.gather(hidden_states, positions, batch_dims=1) if token_rows is None
                       else token_rows.at_positions(hidden_states, positions))
        attended, probs = self.attention(hidden_states, input_mask, training=training, query_states=queries,
                                         token_rows=token_rows)
        attended = self.attention_dropout(attended, training=training)
        residual = hidden_states if queries is None else queries
        hidden_states = self._add_and_normalize(residual, attended, self.attention_layer_norm)
        # Feed-forward on each token alone, as 2-D matrix multiplies.
        tokens = tf.reshape(hidden_states, [-1, self.config.hidden_size])
        transformed = tf.reshape(self.output_dense(self.intermediate(tokens, training=training)),
                                 tf.shape(hidden_states))
        transformed = self.output_dropout(transformed, training=training)
        return self._add_and_normalize(hidden_states, transformed, self.output_layer_norm), probs

    def google_weights(self) -> dict:
        """Variables under Google's names (after `bert/encoder/layer_N/`)."""
        weights = {f"attention/{name}": var for name, var in self.attention.google_weights().items()}
        weights.update(
            {
                "attention/output/LayerNorm/gamma": self.attention_layer_norm.gamma,
                "attention/output/LayerNorm/beta": self.attention_layer_norm.beta,
                "intermediate/dense/kernel": self.intermediate.kernel,
                "intermediate/dense/bias": self.intermediate.bias,
                "output/dense/kernel": self.output_dense.kernel,
                "output/dense/bias": self.output_dense.bias,
                "output/LayerNorm/gamma": self.output_layer_norm.gamma,
                "output/LayerNorm/beta": self.output_layer_norm.beta,
            }
        )
        return weights
