"""`BertTaskModel`: what every fine-tuning model shares — an encoder, its saving, and default losses.

Subclasses add a head in `__init__`, compute it in `head` from the encoder output they
read (`encoder_output`: `pooled_output` or `sequence_output`), and name their loss and
metrics in `default_loss()` / `default_metrics()`, which `compile(loss="auto",
metrics="auto")` (the defaults) uses.

Example:
    >>> import bert_tf
    >>> from bert_tf.tasks.classification.model import BertClassifier
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertClassifier(encoder, num_classes=3)
    >>> model.compile(optimizer="adam")  # loss: sparse categorical cross-entropy from logits
    >>> type(model.loss).__name__
    'SparseCategoricalCrossentropy'
"""

from __future__ import annotations

import abc

import keras

from bert_tf.layers import weight_initializer
from bert_tf.model import BertModel


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


class BertTaskModel(keras.Model, metaclass=abc.ABCMeta):
    """A Keras model made of a `BertModel` (`encoder`) and a task head."""

    encoder_output = "pooled_output"  # the encoder output the head reads: "pooled_output" or "sequence_output"

    def __init__(self, encoder: BertModel, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(encoder, BertModel):
            raise TypeError(f"{type(self).__name__}: encoder must be a bert_tf.BertModel, got {type(encoder).__name__}.")
        self.encoder = encoder

    def call(self, inputs, training=None):
        # The encoder's method of that name computes only what the head reads (bert_tf.model.BertModel).
        features = getattr(self.encoder, self.encoder_output)(inputs, training=training)
        return self.head(features, inputs, training=training)

    @abc.abstractmethod
    def head(self, features, inputs, training=None):
        """The task's outputs from `features`, the encoder's `encoder_output` for `inputs`."""

    def head_initializer(self) -> keras.initializers.Initializer:
        """The encoder's own weight initializer, for the head's dense layer."""
        return weight_initializer(self.encoder.config)

    @abc.abstractmethod
    def default_loss(self):
        """The loss this task trains with (what `compile(loss="auto")` uses)."""

    @abc.abstractmethod
    def default_metrics(self):
        """The metrics `compile(metrics="auto")` uses."""

    def compile(self, optimizer, loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile`, where `loss="auto"` and `metrics="auto"` mean this task's defaults."""
        super().compile(
            optimizer=optimizer,
            loss=self.default_loss() if _is_auto(loss) else loss,
            metrics=self.default_metrics() if _is_auto(metrics) else metrics,
            **kwargs,
        )

    def compile_from_config(self, config):
        """Compiles a loaded `.keras` model as it was saved (its config names every loss and metric).

        Keras' own version skips models that override `compile`, which would leave a loaded
        model without its optimizer state.
        """
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)  # so that the saved optimizer variables load into it

    def get_config(self):
        return {**super().get_config(), "encoder": keras.saving.serialize_keras_object(self.encoder)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"))
        return cls(encoder, **config)
