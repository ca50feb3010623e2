"""What an exported bert-tf model computes, per task: its text inputs, and its outputs from token ids.

Shared by the SavedModel export (`serving.export`) and the TFLite export
(`serving.tflite_export`), so that both give the same outputs under the same names.
The task and its settings are the model directory's `bert_tf.TaskSpec` (`load_model_directory`):

| task | model | text inputs | outputs (b: batch, s: sequence, k: classes/tags) |
|---|---|---|---|
| classify | BertClassifier | `text` (+ `text_b` if `text_pair`) | `probabilities` [b, k] float32 (softmax; sigmoid per class for multi_label), `label_names` [b, k] string, `logits` [b, k]; regression: `predictions` [b, k] only |
| encoder, pretrainer | BertModel, BertPretrainer (its encoder) | `text` (+ `text_b` if `text_pair`) | `sequence_output` [b, s, hidden], `pooled_output` [b, hidden] float32 |
| ner | BertTokenClassifier | `text` | `probabilities` [b, s, k], `tag_ids` [b, s] int32, `tags` [b, s] string (per token; "" on padding); from text (`serving.text_tasks`): per window of whole words, [b, w, s, k] and [b, w, s] (w: most windows; zeros and "" for missing windows), and `words`, `word_tags` [b, most words] |
| squad | BertSpanLabeler | `question`, `context` | `start_logits`, `end_logits` [b, s]; the best span: `answer_start`, `answer_end` [b] int32 (token positions; 0, 0: no answer), `answer_score` (its start + end logit), `answer_probability` (softmax over the `n_best_size` best spans, and the null answer for SQuAD 2.0); from text (`serving.text_tasks`): the best span over every doc-stride window of the context, `start_logits`, `end_logits` per window [b, w, s] (zeros for missing windows), `answer_score`, `answer_probability` [b], `answer_text` [b] string, `answer_char_start`, `answer_char_end` [b] int32 (code points; no `answer_start`, `answer_end`) |

The best SQuAD span is `bert_tf.squad_windows.best_answers`'s, the rules `bert-tf predict`
and evaluation use (n-best starts × ends, context tokens only, at most
`max_answer_length` tokens, max-context windows; SQuAD 2.0: no answer when
`null score - best score > null_score_threshold`): from text, over every doc-stride window
of the context; from ids, each row is taken as one whole window.

`label_names` are the model's own (`label_names=` of the head), else "0", "1", ...;
they are repeated per example so that every output is batch-major (REST's row format
needs that). Every float output is float32, even for a mixed-precision model.

Example:
    >>> spec = serving_spec(bert_tf.load_model_directory("runs/sst2/model"))  # doctest: +SKIP
    >>> spec.task, spec.text_inputs, spec.seq_length                          # doctest: +SKIP
    ('classify', ('text',), 128)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import tensorflow as tf

from bert_tf.checkpoints.pretrained import ModelDirectory
from bert_tf.model import INPUT_NAMES
from bert_tf.squad_windows import WindowLayout, best_answers
from bert_tf.task_spec import TaskSpec
from bert_tf.vocabulary import Vocabulary

SQUAD_SETTINGS = ("doc_stride", "max_query_length", "max_answer_length", "n_best_size", "null_score_threshold",
                  "version_2")


@dataclasses.dataclass(frozen=True)
class ServingSpec:
    """Everything an export needs to know about a model directory, checked."""

    task_spec: TaskSpec  # the directory's task definition (bert_tf.TaskSpec), seq_length possibly overridden
    model: object  # the Keras model the signatures call (a pretrainer's encoder)
    vocabulary: Vocabulary
    vocab_file: Path
    classifier_mode: str = ""

    @property
    def task(self) -> str:
        return self.task_spec.task

    @property
    def seq_length(self) -> int:
        return self.task_spec.seq_length

    @property
    def text_inputs(self) -> tuple[str, ...]:
        return self.task_spec.text_inputs

    @property
    def label_names(self) -> tuple[str, ...]:
        return self.task_spec.label_names

    @property
    def squad(self) -> dict:
        """The SQuAD settings, by name (task "squad" only)."""
        return {name: getattr(self.task_spec, name) for name in SQUAD_SETTINGS} if self.task == "squad" else {}

    @property
    def lower_case(self) -> bool:
        return self.vocabulary.lower_case


def serving_spec(directory: ModelDirectory, seq_length: int | None = None) -> ServingSpec:
    """The `ServingSpec` of a loaded model directory; `seq_length` overrides its task's seq_length."""
    model, task_spec = directory.model, directory.task
    if seq_length is not None:
        task_spec = task_spec.replace(seq_length=seq_length)
        task_spec.check_fits(directory.encoder.config)
    vocab_file = directory.require_vocab_file()
    vocabulary = Vocabulary.from_file(vocab_file, directory.lower_case)
    return ServingSpec(
        task_spec=task_spec,
        model=model.encoder if task_spec.task == "pretrainer" else model,
        vocabulary=vocabulary,
        vocab_file=vocab_file,
        classifier_mode=model.mode if task_spec.task == "classify" else "",
    )


def id_input_specs(seq_length: int) -> list[tf.TensorSpec]:
    """The id inputs of `serve_ids`: int32 [batch, seq_length] each, with BERT's names."""
    return [tf.TensorSpec([None, seq_length], tf.int32, name=name) for name in INPUT_NAMES]


def text_input_specs(spec: ServingSpec) -> list[tf.TensorSpec]:
    """The text inputs: string [batch] each, UTF-8."""
    return [tf.TensorSpec([None], tf.string, name=name) for name in spec.text_inputs]


def serve_ids_function(spec: ServingSpec) -> tf.types.experimental.PolymorphicFunction:
    """The `serve_ids` signature's function: the three id tensors in, `task_outputs` out."""

    @tf.function(input_signature=id_input_specs(spec.seq_length))
    def serve_ids(input_word_ids, input_mask, input_type_ids):
        return task_outputs(
            spec, {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
        )

    return serve_ids


def model_info_function(spec: ServingSpec, extra=dict) -> tf.types.experimental.PolymorphicFunction:
    """The `model_info` signature's function: `request` (string [batch]; values ignored) in, the
    recorded settings out, one row per request: `task`, `seq_length`, `lower_case`, `vocab_size`,
    `label_names` [batch, k] (classify, ner), `classifier_mode` (classify), and `extra()`'s values.

    It takes an input only because TF Serving's batching (`--enable_batching`) refuses
    signatures without inputs or with outputs that are not batch-major: send `[""]`.
    """

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="request")])
    def model_info(request):
        info = {
            "task": tf.constant(spec.task),
            "seq_length": tf.constant(spec.seq_length, tf.int32),
            "lower_case": tf.constant(spec.lower_case),
            "vocab_size": tf.constant(len(spec.vocabulary), tf.int32),
            **extra(),
        }
        if spec.label_names:
            info["label_names"] = tf.constant(spec.label_names)
        if spec.classifier_mode:
            info["classifier_mode"] = tf.constant(spec.classifier_mode)
        return {name: _per_example(value, tf.shape(request)[0]) for name, value in info.items()}

    return model_info


def task_outputs(spec: ServingSpec, ids: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The task's outputs (see the module docstring) for the id tensors `ids` (BERT's three names)."""
    outputs = spec.model(ids, training=False)
    batch = tf.shape(ids["input_word_ids"])[0]
    if spec.task in ("encoder", "pretrainer"):
        return {name: tf.cast(outputs[name], tf.float32) for name in ("sequence_output", "pooled_output")}
    if spec.task == "classify":
        logits = tf.cast(outputs, tf.float32)
        if spec.classifier_mode == "regression":
            return {"predictions": logits}
        probabilities = tf.nn.softmax(logits) if spec.classifier_mode == "single_label" else tf.sigmoid(logits)
        label_names = _per_example(tf.constant(spec.label_names), batch)
        return {"probabilities": probabilities, "label_names": label_names, "logits": logits}
    if spec.task == "ner":
        probabilities = tf.nn.softmax(tf.cast(outputs, tf.float32))
        tag_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        # "" on padding, by gathering from the names plus "" (a select of strings has no TFLite kernel).
        padded = tf.where(tf.cast(ids["input_mask"], tf.bool), tag_ids, len(spec.label_names))
        tags = tf.gather(tf.constant(spec.label_names + ("",)), padded)
        return {"probabilities": probabilities, "tag_ids": tag_ids, "tags": tags}
    start_logits, end_logits = (tf.cast(outputs[name], tf.float32) for name in ("start_logits", "end_logits"))
    return {"start_logits": start_logits, "end_logits": end_logits,
            **best_span(start_logits, end_logits, ids["input_type_ids"], ids["input_mask"], **spec.squad)}


def best_span(start_logits, end_logits, type_ids, mask, max_answer_length: int, n_best_size: int, version_2: bool,
              null_score_threshold: float, **_) -> dict[str, tf.Tensor]:
    """The best answer of each row, a window `[CLS] question [SEP] context [SEP]`: `answer_start`,
    `answer_end` (token positions [batch]; 0 for none), `answer_score` and `answer_probability`."""
    real = tf.equal(mask, 1)
    context_offset = tf.reduce_sum(tf.cast(real & tf.equal(type_ids, 0), tf.int32), axis=1)
    doc_length = tf.maximum(tf.reduce_sum(tf.cast(real & tf.equal(type_ids, 1), tf.int32), axis=1) - 1, 0)  # no [SEP]
    rows = tf.shape(start_logits)[0]
    layout = WindowLayout(example_index=tf.range(rows), doc_start=tf.zeros([rows], tf.int32), doc_length=doc_length,
                          context_offset=context_offset, num_windows=tf.ones([rows], tf.int32))
    answers = best_answers(start_logits, end_logits, layout, max_answer_length=max_answer_length,
                           n_best_size=n_best_size, version_2=version_2, null_score_threshold=null_score_threshold)
    found = answers.first_token >= 0
    return {
        "answer_start": tf.where(found, answers.first_token + context_offset, 0),
        "answer_end": tf.where(found, answers.last_token + context_offset, 0),
        "answer_score": answers.score,
        "answer_probability": answers.probability,
    }


def _per_example(value: tf.Tensor, batch) -> tf.Tensor:
    """`value` repeated for each example: shape [batch, *value.shape]."""
    return tf.tile(value[tf.newaxis], [batch] + [1] * value.shape.rank)
