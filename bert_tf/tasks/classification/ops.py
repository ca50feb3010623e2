"""Sentence and sentence-pair classification in TensorFlow ops: logits → the exported outputs.

Texts are cut to `max_text_bytes` (`bert_tf.tasks.text_budget`) and packed by `BertPreprocessor`
with the task's `truncation` of pairs, at most
`seq_length` tokens (`bert_tf.tasks.text_serving.text_packer`), the same for training
(`bert_tf.tasks.classification.data.TextPacker`),
evaluation, `bert-tf predict` and the SavedModel; the TFLite text model counts the same
tokens with dense ops (`serving.export.tflite.segment_counts`, tested against it). A class is
the softmax's argmax, or for multi-label models every class whose sigmoid is at least
`multi_label_threshold`. (The TFLite text model cannot cut bytes: it has no string kernels; it
tokenizes a whole text, which changes the outcome only when the first `max_text_bytes` hold fewer
than `seq_length` tokens.)

Example:
    >>> packer = text_packer(tokenizer, TaskSpec(task="classify", seq_length=128, text_pair=True))  # doctest: +SKIP
    >>> outputs = classifier_outputs(model(packer((first, second))), mode="single_label")  # doctest: +SKIP
    >>> sorted(outputs)  # doctest: +SKIP
    ['logits', 'probabilities']
"""

from __future__ import annotations

import tensorflow as tf


def classifier_outputs(logits: tf.Tensor, mode: str) -> dict[str, tf.Tensor]:
    """float32 `probabilities` (softmax; a sigmoid per class for "multi_label") and `logits` [batch, k];
    for "regression", `predictions` [batch, k] only."""
    logits = tf.cast(logits, tf.float32)
    if mode == "regression":
        return {"predictions": logits}
    probabilities = tf.nn.softmax(logits) if mode == "single_label" else tf.sigmoid(logits)
    return {"probabilities": probabilities, "logits": logits}
