"""Multi-head scaled dot-product self-attention with a padding mask."""

import math

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.dropout import Dropout
from bert_tf.layers.initializer import weight_initializer

# Added to the scores of padded key positions: exp() of it is exactly 0 in float32.
MASKED_SCORE = -1e9


def padding_bias(input_mask):
    """[batch, seq] 1/0 mask → float32 additive bias [batch, 1, 1, seq] for the attention scores."""
    # expand_dims, not [:, newaxis, newaxis, :]: TFLite's builtin StridedSlice has no new-axis mask,
    # and a text model whose sequence length is only known at run time would need it.
    keep = tf.expand_dims(tf.expand_dims(tf.cast(input_mask, tf.float32), 1), 1)
    return (1.0 - keep) * MASKED_SCORE


def _as_is(rows):
    return rows


class SelfAttention(keras.layers.Layer):
    """`softmax(Q Kᵀ / sqrt(d_k) + mask) V` over `num_attention_heads` heads, then the output projection.

    The softmax is computed in float32 whatever the layer's dtype policy, so mixed
    precision cannot overflow it.
    """

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        hidden = config.hidden_size
        self.query = keras.layers.Dense(hidden, kernel_initializer=weight_initializer(config), name="query")
        self.key = keras.layers.Dense(hidden, kernel_initializer=weight_initializer(config), name="key")
        self.value = keras.layers.Dense(hidden, kernel_initializer=weight_initializer(config), name="value")
        self.output_dense = keras.layers.Dense(hidden, kernel_initializer=weight_initializer(config),
                                               name="output_dense")
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

    def call(self, hidden_states, input_mask, training=None, query_states=None, token_rows=None):
        """Returns (output [batch, queries, hidden], probabilities [batch, heads, queries, seq]).

        `input_mask` is the integer [batch, seq] padding mask (1 = real token): passed as
        integers, it is never auto-cast to float16 under mixed precision. `query_states`
        [batch, queries, hidden] (default: `hidden_states`) are the rows that attend to all
        of `hidden_states`, e.g. only those whose output is needed. With `token_rows`
        (`TokenRows`), `hidden_states` are the [tokens, hidden] rows of the real tokens only;
        the output is then [tokens, hidden] too (or as `query_states` when given).
        """
        hidden = self.config.hidden_size
        if token_rows is None:
            batch, seq = tf.shape(hidden_states)[0], tf.shape(hidden_states)[1]
            to_grid = _as_is  # the [batch·seq, hidden] rows already are the grid
        else:
            batch, seq = token_rows.batch, token_rows.seq
            to_grid = token_rows.to_grid
        # The projections act on each token alone: as one 2-D [rows, hidden] matrix multiply,
        # which oneDNN runs with the bias add fused in (a 3-D input would add it in a separate pass).
        tokens = tf.reshape(hidden_states, [-1, hidden])
        if query_states is None:
            query_grid, num_queries = to_grid, seq
            query_tokens = tokens
        else:
            query_grid, num_queries = _as_is, tf.shape(query_states)[1]
            query_tokens = tf.reshape(query_states, [-1, hidden])
        # Scaling the queries first is the same product as scaling the scores, on fewer numbers.
        query = self._split_heads(query_grid(self.query(query_tokens) * (1.0 / math.sqrt(self.config.head_size))),
                                  batch, num_queries)
        key = self._split_heads(to_grid(self.key(tokens)), batch, seq)
        value = self._split_heads(to_grid(self.value(tokens)), batch, seq)
        # Heads first, then plain batched matrix multiplies: with oneDNN they run faster than the same
        # products written as einsums (benchmarks/techniques.py measures it).
        scores = tf.matmul(query, key, transpose_b=True)
        probs = tf.nn.softmax(tf.cast(scores, tf.float32) + padding_bias(input_mask), axis=-1)
        dropped = self.probs_dropout(tf.cast(probs, self.compute_dtype), training=training)
        context = tf.reshape(tf.transpose(tf.matmul(dropped, value), [0, 2, 1, 3]), [-1, hidden])
        if token_rows is not None and query_states is None:
            context = token_rows.gather(context)
        output_shape = tf.shape(hidden_states if query_states is None else query_states)
        return tf.reshape(self.output_dense(context), output_shape), probs

    def google_weights(self) -> dict:
        """Variables under Google's names (after `bert/encoder/layer_N/attention/`)."""
        names = {"self/query": self.query, "self/key": self.key, "self/value": self.value, "output/dense": self.output_dense}
        return {f"{name}/{var}": getattr(dense, var) for name, dense in names.items() for var in ("kernel", "bias")}
