"""Multi-head scaled dot-product self-attention with a padding mask."""

import math

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.dropout import Dropout

# Added to the scores of padded key positions: exp() of it is exactly 0 in float32.
MASKED_SCORE = -1e9


def padding_bias(input_mask):
    """[batch, seq] 1/0 mask → float32 additive bias [batch, 1, 1, seq] for the attention scores."""
    keep = tf.cast(input_mask, tf.float32)[:, tf.newaxis, tf.newaxis, :]
    return (1.0 - keep) * MASKED_SCORE


class SelfAttention(keras.layers.Layer):
    """`softmax(Q Kᵀ / sqrt(d_k) + mask) V` over `num_attention_heads` heads, then the output projection.

    The softmax is computed in float32 whatever the layer's dtype policy, so mixed
    precision cannot overflow it.
    """

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
        hidden = config.hidden_size
        self.query = keras.layers.Dense(hidden, kernel_initializer=init, name="query")
        self.key = keras.layers.Dense(hidden, kernel_initializer=init, name="key")
        self.value = keras.layers.Dense(hidden, kernel_initializer=init, name="value")
        self.output_dense = keras.layers.Dense(hidden, kernel_initializer=init, name="output_dense")
        self.probs_dropout = Dropout(config.attention_probs_dropout_prob)

    def build(self, input_shape=None):
        shape = (None, None, self.config.hidden_size)
        for dense in (self.query, self.key, self.value, self.output_dense):
            dense.build(shape)
        self.built = True

    def _split_heads(self, x, batch, seq):
        """[batch·seq, hidden] → [batch, heads, seq, head_size]."""
        heads = tf.reshape(x, [batch, seq, self.config.num_attention_heads, self.config.head_size])
        return tf.transpose(heads, [0, 2, 1, 3])

    def call(self, hidden_states, input_mask, training=None, query_states=None):
        """Returns (output [batch, queries, hidden], probabilities [batch, heads, queries, seq]).

        `input_mask` is the integer [batch, seq] padding mask (1 = real token): passed as
        integers, it is never auto-cast to float16 under mixed precision. `query_states`
        [batch, queries, hidden] (default: `hidden_states`) are the rows that attend to all
        of `hidden_states`, e.g. only those whose output is needed.
        """
        if query_states is None:
            query_states = hidden_states
        batch, seq = tf.shape(hidden_states)[0], tf.shape(hidden_states)[1]
        # The projections act on each token alone: as one 2-D [batch·seq, hidden] matrix multiply,
        # which oneDNN runs with the bias add fused in (a 3-D input would add it in a separate pass).
        tokens = tf.reshape(hidden_states, [-1, self.config.hidden_size])
        query_tokens = tf.reshape(query_states, [-1, self.config.hidden_size])
        # Scaling the queries first is the same product as scaling the scores, on fewer numbers.
        query = self._split_heads(self.query(query_tokens) * (1.0 / math.sqrt(self.config.head_size)), batch,
                                  tf.shape(query_states)[1])
        key = self._split_heads(self.key(tokens), batch, seq)
        value = self._split_heads(self.value(tokens), batch, seq)
        # Heads first, then plain batched matrix multiplies: with oneDNN they run faster than the same
        # products written as einsums (a mini pre-training step 4% faster; benchmarks/techniques.py).
        scores = tf.matmul(query, key, transpose_b=True)
        probs = tf.nn.softmax(tf.cast(scores, tf.float32) + padding_bias(input_mask), axis=-1)
        dropped = self.probs_dropout(tf.cast(probs, self.compute_dtype), training=training)
        context = tf.transpose(tf.matmul(dropped, value), [0, 2, 1, 3])
        context = tf.reshape(context, [-1, self.config.hidden_size])
        return tf.reshape(self.output_dense(context), tf.shape(query_states)), probs

    def google_weights(self) -> dict:
        """Variables under Google's names (after `bert/encoder/layer_N/attention/`)."""
        names = {"self/query": self.query, "self/key": self.key, "self/value": self.value, "output/dense": self.output_dense}
        return {f"{name}/{var}": getattr(dense, var) for name, dense in names.items() for var in ("kernel", "bias")}
