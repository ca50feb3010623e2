"""What an exported bert-tf model computes, per task: its text inputs, and its outputs from token ids.

Shared by the SavedModel export (`serving.export`) and the TFLite export
(`serving.tflite_export`), so that both give the same outputs under the same names.
The task follows from the model's class (and must agree with the directory's `task` metadata):

| task | model | text inputs | outputs (b: batch, s: sequence, k: classes/tags) |
|---|---|---|---|
| classify | BertClassifier | `text` (+ `text_b` if `text_pair`) | `probabilities` [b, k] float32 (softmax; sigmoid per class for multi_label), `label_names` [b, k] string, `logits` [b, k]; regression: `predictions` [b, k] only |
| encoder, pretrainer | BertModel, BertPretrainer (its encoder) | `text` (+ `text_b` if `text_pair`) | `sequence_output` [b, s, hidden], `pooled_output` [b, hidden] float32 |
| ner | BertTokenClassifier | `text` | `probabilities` [b, s, k], `tag_ids` [b, s] int32, `tags` [b, s] string (per token; "" on padding) |
| squad | BertSpanLabeler | `question`, `context` | `start_logits`, `end_logits` [b, s]; the best span: `answer_start`, `answer_end` [b] int32 (token positions; 0, 0: no answer), `answer_score` (its start + end logit), `answer_probability` (softmax over every allowed span, and the null answer for SQuAD 2.0) |

The best SQuAD span starts and ends in the context (not on its `[SEP]`) and is at most
`max_answer_length` tokens long; for a SQuAD 2.0 model (`settings.version_2`) there is no
answer when `null score - best score > null_score_threshold`, as in
`pipelines.squad_postprocess` (which, unlike the export, also looks at later windows of a
long context and normalizes the probability over the n best spans only).

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
from bert_tf.classifier import BertClassifier
from bert_tf.model import INPUT_NAMES, BertModel
from bert_tf.pretrainer import BertPretrainer
from bert_tf.span_labeler import BertSpanLabeler
from bert_tf.token_classifier import BertTokenClassifier
from bert_tf.vocabulary import Vocabulary

DEFAULT_SEQ_LENGTH = 128
# SQuAD settings when the model directory's `settings` lack them (BERT's run_squad.py defaults).
SQUAD_DEFAULTS = {"max_query_length": 64, "max_answer_length": 30, "version_2": False, "null_score_threshold": 0.0}

_TASK_OF_CLASS = (
    (BertClassifier, "classify"),
    (BertTokenClassifier, "ner"),
    (BertSpanLabeler, "squad"),
    (BertPretrainer, "pretrainer"),
    (BertModel, "encoder"),
)
TASKS = tuple(task for _, task in _TASK_OF_CLASS)


@dataclasses.dataclass(frozen=True)
class ServingSpec:
    """Everything an export needs to know about a model directory, checked."""

    task: str
    model: object  # the Keras model the signatures call (a pretrainer's encoder)
    vocabulary: Vocabulary
    vocab_file: Path
    seq_length: int
    text_inputs: tuple[str, ...]
    label_names: tuple[str, ...] = ()
    classifier_mode: str = ""
    squad: dict = dataclasses.field(default_factory=dict)  # SQUAD_DEFAULTS' keys, for task "squad"

    @property
    def lower_case(self) -> bool:
        return self.vocabulary.lower_case


def serving_spec(directory: ModelDirectory, seq_length: int | None = None) -> ServingSpec:
    """The `ServingSpec` of a loaded model directory; `seq_length` overrides its `seq_length` metadata."""
    model, metadata = directory.model, directory.metadata
    task = next((name for cls, name in _TASK_OF_CLASS if isinstance(model, cls)), None)
    if task is None:
        raise ValueError(f"Cannot export a {type(model).__name__}: expected one of {[c.__name__ for c, _ in _TASK_OF_CLASS]}.")
    recorded = metadata.get("task")
    if recorded is not None and recorded != task and {recorded, task} != {"encoder", "pretrainer"}:
        raise ValueError(f"The model directory's metadata says task {recorded!r}, but its model is a {type(model).__name__} "
                         f"(task {task!r}).")
    if directory.vocab_file is None:
        raise FileNotFoundError("The model directory has no vocab.txt; export needs the vocabulary (save_pretrained(..., "
                                "vocab_file=...)).")
    vocabulary = Vocabulary.from_file(directory.vocab_file, directory.lower_case)
    serving_model = model.encoder if task == "pretrainer" else model
    encoder = getattr(serving_model, "encoder", serving_model)
    if len(vocabulary) > encoder.config.vocab_size:
        raise ValueError(f"{directory.vocab_file} has {len(vocabulary)} tokens, more than the model's vocab_size "
                         f"{encoder.config.vocab_size}.")
    pair = bool(metadata.get("text_pair", False)) or task == "squad"
    seq_length = int(seq_length or metadata.get("seq_length") or DEFAULT_SEQ_LENGTH)
    shortest = 3 + pair
    if not shortest <= seq_length <= encoder.config.max_position_embeddings:
        raise ValueError(f"seq_length must be between {shortest} and max_position_embeddings "
                         f"({encoder.config.max_position_embeddings}), got {seq_length}.")
    label_names = ()
    if task in ("classify", "ner"):
        count = model.num_classes if task == "classify" else model.num_labels
        label_names = tuple(model.label_names or (str(index) for index in range(count)))
    return ServingSpec(
        task=task,
        model=serving_model,
        vocabulary=vocabulary,
        vocab_file=Path(directory.vocab_file),
        seq_length=seq_length,
        text_inputs=_text_inputs(task, pair),
        label_names=label_names,
        classifier_mode=model.mode if task == "classify" else "",
        squad={key: type(default)(metadata.get("settings", {}).get(key, default))
               for key, default in SQUAD_DEFAULTS.items()} if task == "squad" else {},
    )


def _text_inputs(task: str, pair: bool) -> tuple[str, ...]:
    if task == "squad":
        return ("question", "context")
    return ("text", "text_b") if pair else ("text",)


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


def best_span(start_logits, end_logits, type_ids, mask, max_answer_length: int, version_2: bool,
              null_score_threshold: float, **_) -> dict[str, tf.Tensor]:
    """The best answer inside the context (segment 1): `answer_start`, `answer_end` (token positions
    [batch]; 0 for none), `answer_score` and `answer_probability` (see the module docstring)."""
    in_context = tf.logical_and(tf.equal(type_ids, 1), tf.equal(mask, 1))
    # The context's last real token is its [SEP]: not a possible answer token.
    not_sep = tf.concat([tf.logical_and(in_context[:, :-1], in_context[:, 1:]), tf.zeros_like(in_context[:, :1])], axis=1)
    allowed = tf.logical_and(in_context, not_sep)
    length = tf.shape(start_logits)[1]
    offsets = tf.range(length)[tf.newaxis, :] - tf.range(length)[:, tf.newaxis]  # end - start
    span_ok = tf.logical_and(offsets >= 0, offsets < max_answer_length)
    valid = span_ok[tf.newaxis] & allowed[:, :, tf.newaxis] & allowed[:, tf.newaxis, :]
    scores = tf.where(valid, start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :], float("-inf"))
    scores = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.argmax(scores, axis=1, output_type=tf.int32)
    best_score = tf.reduce_max(scores, axis=1)
    found = best_score > float("-inf")
    null_score = start_logits[:, 0] + end_logits[:, 0]
    if version_2:
        scores = tf.concat([scores, null_score[:, tf.newaxis]], axis=1)
        found = tf.logical_and(found, null_score - best_score <= null_score_threshold)
        chosen_score = tf.where(found, best_score, null_score)
    else:
        chosen_score = tf.where(found, best_score, 0.0)
    # log-sum-exp by hand: tf.reduce_logsumexp uses IsFinite, which TFLite has no builtin kernel for.
    top = tf.reduce_max(scores, axis=1, keepdims=True)
    top = tf.where(top > float("-inf"), top, 0.0)
    log_total = top[:, 0] + tf.math.log(tf.reduce_sum(tf.exp(scores - top), axis=1))
    return {
        "answer_start": tf.where(found, best // length, 0),
        "answer_end": tf.where(found, best % length, 0),
        "answer_score": chosen_score,
        "answer_probability": tf.where(found | version_2, tf.exp(chosen_score - log_total), 0.0),
    }


def _per_example(value: tf.Tensor, batch) -> tf.Tensor:
    """`value` repeated for each example: shape [batch, *value.shape]."""
    return tf.tile(value[tf.newaxis], [batch] + [1] * value.shape.rank)
