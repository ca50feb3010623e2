"""`BertTokenClassifier`: one label per token (named entities, part of speech) from `sequence_output`.

Labels are per token [batch, seq], with `IGNORE_LABEL` (-100) on every position that
does not count: later pieces of a word, special and padding tokens
(`bert_tf.tasks.ner.word_alignment.align_word_labels` makes them from word labels). The default
loss and metric skip those positions.

Example:
    >>> import numpy as np, bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertTokenClassifier(encoder, num_labels=3, label_names=["O", "B-PER", "I-PER"])
    >>> logits = model({"input_word_ids": np.array([[2, 7, 9, 3]])})
    >>> tuple(logits.shape)
    (1, 4, 3)
"""

from __future__ import annotations

import keras

from bert_tf.metrics.masked_accuracy import MaskedSparseCategoricalAccuracy
from bert_tf.model import BertModel
from bert_tf.tasks.ner.token_loss import TokenCrossEntropy
from bert_tf.tasks.task_model import BertTaskModel, softmax


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(BertTaskModel):
    """Dropout and one dense layer on every token vector; outputs logits, float32 [batch, seq, num_labels].

    `label_names` (optional, one per label id, e.g. BIO tags) are saved with the model.
    """

    encoder_output = "sequence_output"

    def __init__(
        self,
        encoder: BertModel,
        num_labels: int,
        label_names: list[str] | None = None,
        dropout: float = 0.1,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 2:
            raise ValueError(f"BertTokenClassifier: num_labels must be an integer >= 2, got {num_labels!r}.")
        self.num_labels = num_labels
        self.add_labelled_head(num_labels, label_names, dropout, "num_labels", (None, None, encoder.config.hidden_size))
        self.built = True

    def head(self, features, inputs, training=None):
        return self.classifier(self.dropout(features, training=training))

    def probabilities(self, outputs):
        """Softmax of each token's logits, [batch, seq_length, num_labels]."""
        return softmax(outputs)

    def default_loss(self) -> keras.losses.Loss:
        """Sparse categorical cross-entropy from logits, averaged over the positions not labelled `IGNORE_LABEL` (of
        the global batch, on several replicas: `TokenCrossEntropy`)."""
        return TokenCrossEntropy()

    def default_metrics(self) -> list[keras.metrics.Metric]:
        """Token accuracy over the positions not labelled `IGNORE_LABEL`."""
        return [MaskedSparseCategoricalAccuracy(name="accuracy")]

    def get_config(self):
        return {
            **super().get_config(),
            "num_labels": self.num_labels,
            "label_names": self.label_names,
            "dropout": self.dropout.rate,
        }
