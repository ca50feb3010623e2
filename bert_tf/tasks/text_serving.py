"""The raw-text side of an exported model: text → ids (`preprocess`) and text → the task's outputs (`outputs`).

A task's `text_serving` gives one of these; the SavedModel's `serving_default` and `preprocess` signatures
call it inside a `tf.function` (`serving.export.saved_model`), with bert_tf's exact tokenizer. The
default, `PackedTextServing`, packs each text (or pair) into one model input with `BertPreprocessor`
(each text first cut to `max_text_bytes`, pairs cut by the task's `truncation`, as in training) and
returns the task's `serving_outputs`; tasks that read a text in several windows (NER, SQuAD) give
their own.

Example:
    >>> serving = task_named("classify").text_serving(model, spec, tokenizer)  # doctest: +SKIP
    >>> sorted(serving.outputs([tf.constant(["a fine film"])]))  # doctest: +SKIP
    ['label_names', 'logits', 'probabilities']
"""

from __future__ import annotations

import abc

import tensorflow as tf

from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.text_budget import cut_text
from bert_tf.tokenizer import BertTokenizer


def text_packer(tokenizer: BertTokenizer, spec: TaskSpec, padding: str = "longest"):
    """The packer of the task's texts: segments (string [batch] each) → the three id tensors, each text
    cut to `spec.max_text_bytes`, `seq_length` tokens at most, pairs cut by `spec.truncation`."""
    preprocessor = BertPreprocessor(tokenizer, spec.seq_length, truncation=spec.truncation, padding=padding)

    def pack(segments) -> dict[str, tf.Tensor]:
        return preprocessor([cut_text(segment, spec.max_text_bytes) for segment in segments])

    return pack


class TextServing(abc.ABC):
    """A task's raw-text signature: `preprocess(texts)` and `outputs(texts)`, `texts` one string tensor per text
    input (`TaskSpec.text_inputs`), of the shapes `input_specs` gives ([batch] by default).

    The rows the model reads come from the inputs by `model_rows` (by default one row per example), and the
    model's outputs per row go back to one per example by `per_example`: the SavedModel's and the TFLite model's
    raw-text signatures both call them (`serving.export`), so a task whose example is several model inputs (a query
    and its documents: `bert_tf.tasks.rerank_serving`) changes only these."""

    def __init__(self, task, model, spec: TaskSpec, tokenizer: BertTokenizer):
        self.task, self.model, self.spec, self.tokenizer = task, model, spec, tokenizer

    @classmethod
    def input_specs(cls, spec: TaskSpec) -> list[tf.TensorSpec]:
        """The raw-text inputs of the exported signatures: string [batch] each, UTF-8, named `spec.text_inputs`."""
        return [tf.TensorSpec([None], tf.string, name=name) for name in spec.text_inputs]

    @classmethod
    def model_rows(cls, texts: list[tf.Tensor]) -> list[tf.Tensor]:
        """The signature's inputs → the text segments the model reads, string [rows] each: `texts` as they are."""
        return texts

    @classmethod
    def per_example(cls, outputs: dict[str, tf.Tensor], texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The outputs of each row of `model_rows(texts)` → the outputs of each example: `outputs` as they are."""
        return outputs

    @abc.abstractmethod
    def preprocess(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The three id tensors the model reads for `texts`."""

    @abc.abstractmethod
    def outputs(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The task's outputs for `texts`."""


class PackedTextServing(TextServing):
    """One model input per text (or pair), padded as the task says (`Task.text_padding`)."""

    def __init__(self, task, model, spec: TaskSpec, tokenizer: BertTokenizer):
        super().__init__(task, model, spec, tokenizer)
        self.fixed = text_packer(tokenizer, spec, padding="max_length")
        self.served = text_packer(tokenizer, spec, padding=task.text_padding)

    def preprocess(self, texts):
        """int32 [batch, seq_length] each (per row of `model_rows`, shaped by `per_example`)."""
        return self.per_example(self.fixed(self.model_rows(texts)), texts)

    def outputs(self, texts):
        ids = at_least_two_columns(self.served(self.model_rows(texts)), self.tokenizer.vocabulary.pad_id)
        return self.per_example(self.task.serving_outputs(self.model, self.spec, ids), texts)


def per_example(values: dict[str, tf.Tensor], num_windows) -> dict[str, tf.Tensor]:
    """Per-window values [windows, ...] → [batch, most windows, ...], zeros where an example has fewer."""
    return {name: tf.RaggedTensor.from_row_lengths(value, num_windows).to_tensor() for name, value in values.items()}


def repeated(value: tf.Tensor, batch) -> tf.Tensor:
    """`value` repeated for each example: shape [batch, *value.shape] (every exported output is batch-major)."""
    return tf.tile(value[tf.newaxis], [batch] + [1] * value.shape.rank)


def at_least_two_columns(ids: dict[str, tf.Tensor], pad_id: int) -> dict[str, tf.Tensor]:
    """Pads ids to 2 columns where a batch is narrower: only an empty batch padded to its longest text is
    ([batch 0, 0]); the encoder reads column 0 ([CLS]) and fails on a tensor without it."""
    missing = tf.maximum(0, 2 - tf.shape(ids["input_word_ids"])[1])
    return {
        name: tf.pad(value, [[0, 0], [0, missing]], constant_values=pad_id if name == "input_word_ids" else 0)
        for name, value in ids.items()
    }
