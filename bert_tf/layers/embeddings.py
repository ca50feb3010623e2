"""BERT's input embeddings: word + learned position + segment, then LayerNorm and dropout."""

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers.dropout import Dropout
from bert_tf.layers.initializer import weight_initializer
from bert_tf.layers.layer_norm import LayerNormalization


class BertEmbeddings(keras.layers.Layer):
    """Maps `input_word_ids` and `input_type_ids` [batch, seq] to vectors [batch, seq, hidden]."""

    def __init__(self, config: BertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.word_embeddings = keras.layers.Embedding(
            config.vocab_size, config.hidden_size, embeddings_initializer=weight_initializer(config),
            name="word_embeddings"
        )
        self.token_type_embeddings = keras.layers.Embedding(
            config.type_vocab_size, config.hidden_size, embeddings_initializer=weight_initializer(config),
            name="token_type_embeddings"
        )
        self.position_initializer = weight_initializer(config)
        # LayerNorm runs in float32 even under a mixed-precision policy.
        self.layer_norm = LayerNormalization(epsilon=config.layer_norm_eps, name="layer_norm")
        self.dropout = Dropout(config.hidden_dropout_prob)

    def build(self, input_shape=None):
        hidden = self.config.hidden_size
        self.word_embeddings.build((None, None))
        self.token_type_embeddings.build((None, None))
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.config.max_position_embeddings, hidden),
            initializer=self.position_initializer,
        )
        self.layer_norm.build((None, None, hidden))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = tf.shape(input_word_ids)[1]
        positions = tf.cast(self.position_embeddings[:seq_length], self.compute_dtype)
        summed = self.word_embeddings(input_word_ids) + self.token_type_embeddings(input_type_ids) + positions
        normalized = tf.cast(self.layer_norm(summed), self.compute_dtype)
        return self.dropout(normalized, training=training)

    def google_weights(self) -> dict:
        """This layer's variables under the names of Google's checkpoints (after `bert/embeddings/`)."""
        return {
            "word_embeddings": self.word_embeddings.embeddings,
            "token_type_embeddings": self.token_type_embeddings.embeddings,
            "position_embeddings": self.position_embeddings,
            "LayerNorm/gamma": self.layer_norm.gamma,
            "LayerNorm/beta": self.layer_norm.beta,
        }
