"""The building blocks of the BERT encoder."""

from bert_tf.layers.activated_dense import ActivatedDense
from bert_tf.layers.attention import SelfAttention, padding_bias
from bert_tf.layers.embeddings import BertEmbeddings
from bert_tf.layers.initializer import weight_initializer, weights_loaded_next
from bert_tf.layers.layer_norm import LayerNormalization
from bert_tf.layers.token_rows import TokenRows
from bert_tf.layers.transformer_block import TransformerBlock

__all__ = ["ActivatedDense", "BertEmbeddings", "LayerNormalization", "SelfAttention", "TokenRows", "TransformerBlock",
           "padding_bias", "weight_initializer", "weights_loaded_next"]
