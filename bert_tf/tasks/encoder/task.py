"""`EncoderTask` and `PretrainerTask`: a model directory of an encoder, or of a pretrainer with its heads, exported
as the encoder itself.

Their exports answer `sequence_output` [b, s, hidden] and `pooled_output` [b, hidden] (float32) for each text (or
pair), padded to `seq_length`; a pretrainer's signatures call its encoder.

Example:
    >>> import bert_tf
    >>> EncoderTask.model_class is bert_tf.BertModel
    True
"""

from __future__ import annotations

import tensorflow as tf

from bert_tf.model import BertModel
from bert_tf.pretrainer import BertPretrainer
from bert_tf.tasks.base import Task


class EncoderTask(Task):
    name = "encoder"
    model_class = BertModel
    reads_text_pairs = True

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        outputs = model(ids, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in ("sequence_output", "pooled_output")}


class PretrainerTask(EncoderTask):
    name = "pretrainer"
    model_class = BertPretrainer

    @classmethod
    def served_model(cls, model):
        return model.encoder
