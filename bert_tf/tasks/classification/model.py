"""`BertClassifier`: sentence (or sentence-pair) classification and regression on `pooled_output`.

Example:
    >>> import numpy as np, bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertClassifier(encoder, num_classes=2, label_names=["negative", "positive"])
    >>> logits = model({"input_word_ids": np.array([[2, 7, 9, 3]])})
    >>> tuple(logits.shape)
    (1, 2)
    >>> from bert_tf.optimization import create_optimizer
    >>> model.compile(optimizer=create_optimizer(2e-5, num_train_steps=100))  # loss, metrics: the mode's defaults
"""

from __future__ import annotations

import keras
import numpy as np

from bert_tf.model import BertModel
from bert_tf.tasks.task_model import BertTaskModel, softmax

MODES = ("single_label", "multi_label", "regression")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(BertTaskModel):
    """Dropout and one dense layer on the encoder's `pooled_output`.

    Outputs logits, float32 [batch, num_classes] — not probabilities:
    - `mode="single_label"`: one class per example (softmax of the logits gives the
      probabilities); labels are class ids [batch].
    - `mode="multi_label"`: any number of classes per example (sigmoid of each logit);
      labels are 0/1 [batch, num_classes]. `num_classes=1` is binary classification.
    - `mode="regression"`: `num_classes` real-valued targets (e.g. 1 for STS-B); the
      outputs are the predictions themselves.

    `label_names` (optional, one per class) are saved with the model.
    """

    def __init__(
        self,
        encoder: BertModel,
        num_classes: int,
        mode: str = "single_label",
        dropout: float = 0.1,
        label_names: list[str] | None = None,
        **kwargs,
    ):
        super().__init__(encoder, **kwargs)
        if mode not in MODES:
            raise ValueError(f"BertClassifier: unknown mode {mode!r}; use one of {list(MODES)}.")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"BertClassifier: num_classes must be a positive integer, got {num_classes!r}.")
        if mode == "single_label" and num_classes < 2:
            raise ValueError(
                "BertClassifier: mode='single_label' needs num_classes >= 2; for binary classification with one "
                "logit use mode='multi_label' with num_classes=1."
            )
        self.num_classes = num_classes
        self.mode = mode
        self.add_labelled_head(num_classes, label_names, dropout, "num_classes", (None, encoder.config.hidden_size))
        self.built = True

    text_padding = "longest"  # the logits do not depend on padding: a batch of texts is padded to its longest

    def head(self, features, inputs, training=None):
        return self.classifier(self.dropout(features, training=training))

    def probabilities(self, outputs):
        """Softmax of the logits (a sigmoid per class for multi-label; regression: the predictions)."""
        logits = np.asarray(outputs, np.float64)
        if self.mode == "regression":
            return outputs
        if self.mode == "multi_label":
            return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
        return softmax(logits)

    def default_loss(self) -> keras.losses.Loss:
        """Sparse categorical cross-entropy, binary cross-entropy (both from logits), or mean squared error."""
        if self.mode == "single_label":
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if self.mode == "multi_label":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        return keras.losses.MeanSquaredError()

    def default_metrics(self) -> list[keras.metrics.Metric]:
        """Accuracy (a logit above 0 counts as positive in multi-label mode), or mean absolute error."""
        if self.mode == "single_label":
            return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        if self.mode == "multi_label":
            return [keras.metrics.BinaryAccuracy(threshold=0.0, name="accuracy")]
        return [keras.metrics.MeanAbsoluteError(name="mae")]

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "mode": self.mode,
            "dropout": self.dropout.rate,
            "label_names": self.label_names,
        }
