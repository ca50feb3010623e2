"""`BertScorer`: the encoder's pooled output → one score per text."""

import keras
import tensorflow as tf

from bert_tf.tasks.task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="bert_tf_toy")
class BertScorer(BertTaskModel):
    def __init__(self, encoder, **kwargs):
        super().__init__(encoder, **kwargs)
        self.scorer = keras.layers.Dense(1, kernel_initializer=self.head_initializer(), dtype="float32", name="scorer")
        self.scorer.build((None, encoder.config.hidden_size))
        self.built = True

    def head(self, features, inputs, training=None):
        return tf.squeeze(self.scorer(tf.cast(features, tf.float32)), -1)

    def default_loss(self):
        return keras.losses.MeanSquaredError()

    def default_metrics(self):
        return []
