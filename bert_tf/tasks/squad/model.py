"""`BertSpanLabeler`: extractive question answering (SQuAD) — where the answer starts and ends.

Inputs are the question and the context as one sentence pair. Outputs are a dict
`{"start_logits", "end_logits"}`, each float32 [batch, seq], with padding positions
(input_mask 0) set to a large negative value so that no softmax or argmax picks them.
Labels are a dict with the same keys holding the token positions [batch] of the
answer's first and last token (position 0, `[CLS]`, for "no answer" in SQuAD 2.0).

Example:
    >>> import numpy as np, bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertSpanLabeler(encoder)
    >>> outputs = model({"input_word_ids": np.array([[2, 7, 3, 9, 8, 3, 0]]),
    ...                  "input_mask": np.array([[1, 1, 1, 1, 1, 1, 0]]),
    ...                  "input_type_ids": np.array([[0, 0, 0, 1, 1, 1, 0]])})
    >>> tuple(outputs["start_logits"].shape), float(outputs["end_logits"][0, -1])
    ((1, 7), -1000000000.0)
"""

from __future__ import annotations

import keras
import tensorflow as tf

from bert_tf.layers.attention import MASKED_SCORE
from bert_tf.model import BertModel
from bert_tf.tasks.task_model import BertTaskModel, _is_auto

OUTPUT_NAMES = ("start_logits", "end_logits")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanLabeler(BertTaskModel):
    """One dense layer with 2 units on every token vector: its two outputs are the start and end logits.

    The default loss is the mean of the start and the end sparse cross-entropies.
    """

    encoder_output = "sequence_output"

    def __init__(self, encoder: BertModel, **kwargs):
        super().__init__(encoder, **kwargs)
        # float32 logits even under a mixed-precision policy: MASKED_SCORE does not fit in float16.
        self.span_logits = keras.layers.Dense(
            2, kernel_initializer=self.head_initializer(), dtype="float32", name="span_logits"
        )
        self.span_logits.build((None, None, encoder.config.hidden_size))
        self.built = True

    def head(self, features, inputs, training=None):
        start_logits, end_logits = tf.unstack(self.span_logits(features), axis=-1)
        if "input_mask" in inputs:
            real_token = tf.cast(inputs["input_mask"], tf.bool)
            start_logits = tf.where(real_token, start_logits, MASKED_SCORE)
            end_logits = tf.where(real_token, end_logits, MASKED_SCORE)
        return {"start_logits": start_logits, "end_logits": end_logits}

    def default_loss(self) -> dict[str, keras.losses.Loss]:
        """Sparse categorical cross-entropy from logits for each output (halved by `compile`)."""
        return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in OUTPUT_NAMES}

    def default_metrics(self) -> dict[str, list[keras.metrics.Metric]]:
        """The share of exactly found start (end) positions."""
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")] for name in OUTPUT_NAMES}

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """`BertTaskModel.compile`; with `loss="auto"`, the loss is the mean of the start and end losses."""
        if _is_auto(loss):
            kwargs.setdefault("loss_weights", {name: 0.5 for name in OUTPUT_NAMES})
        super().compile(optimizer, loss=loss, metrics=metrics, **kwargs)
