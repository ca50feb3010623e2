"""What an exported bert-tf model computes, per task: its text inputs, and its outputs from token ids.

Shared by the SavedModel export (`serving.export.saved_model`) and the TFLite export
(`serving.export.tflite`), so that both give the same outputs under the same names.
The task and its settings are the model directory's `bert_tf.TaskSpec` (`load_model_directory`):

| task | model | text inputs | outputs (b: batch, s: sequence, k: classes/tags) |
|---|---|---|---|
| classify | BertClassifier | `text` (+ `text_b` if `text_pair`) | `probabilities` [b, k] float32 (softmax; sigmoid per class for multi_label), `label_names` [b, k] string, `logits` [b, k]; regression: `predictions` [b, k] only |
| encoder, pretrainer | BertModel, BertPretrainer (its encoder) | `text` (+ `text_b` if `text_pair`) | `sequence_output` [b, s, hidden], `pooled_output` [b, hidden] float32 |
| ner | BertTokenClassifier | `text` | `probabilities` [b, s, k], `tag_ids` [b, s] int32, `tags` [b, s] string (per token; "" on padding); from text (`NerTextServing`, `bert_tf.tasks.ner.ops`): per window of whole words, [b, w, s, k] and [b, w, s] (w: most windows; zeros and "" for missing windows), and `words`, `word_tags` [b, most words], and the entities `entity_type`, `entity_text`, `entity_char_start`, `entity_char_end`, `entity_score` [b, most entities] |
| rerank | BertReranker | `query`, `document` (string [b, d]: the documents of each query) | `score` [b, d] float32: each (query, document) pair's logit (`bert_tf.tasks.rerank_serving`); from ids, one pair per row: [b] |
| squad | BertSpanLabeler | `question`, `context` | `start_logits`, `end_logits` [b, s]; the best span: `answer_start`, `answer_end` [b] int32 (token positions; 0, 0: no answer), `answer_score` (its start + end logit), `answer_probability` (softmax over the `n_best_size` best spans, and the null answer for SQuAD 2.0); from text (`SquadTextServing`, `bert_tf.tasks.squad.ops`): the best span over every doc-stride window of the context, `start_logits`, `end_logits` per window [b, w, s] (zeros for missing windows), `answer_score`, `answer_probability` [b], `answer_text` [b] string, `answer_char_start`, `answer_char_end` [b] int32 (code points; no `answer_start`, `answer_end`) |

The best SQuAD span is `bert_tf.tasks.squad.ops.best_answers`'s, the rules `bert-tf predict`
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

import numpy as np
import tensorflow as tf

from bert_tf.model import INPUT_NAMES
from bert_tf.model_directory import ModelDirectory
from bert_tf.precision import with_precision
from bert_tf.tasks.base import Task
from bert_tf.tasks.registry import task_named
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.text_serving import repeated
from bert_tf.vocabulary import Vocabulary

QUANTIZATIONS = ("none", "bf16", "int8")


@dataclasses.dataclass(frozen=True)
class ServingSpec:
    """Everything an export needs to know about a model directory, checked."""

    task_spec: TaskSpec  # the directory's task definition (bert_tf.TaskSpec), seq_length possibly overridden
    model: object  # the Keras model the signatures call (a pretrainer's encoder)
    vocabulary: Vocabulary
    vocab_file: Path
    quantization: str = "none"  # QUANTIZATIONS: how the export computes (the spec's model is bfloat16's for "bf16")

    @property
    def task(self) -> str:
        return self.task_spec.task

    @property
    def task_class(self) -> type[Task]:
        """The task's `bert_tf.tasks.base.Task`: what the export computes."""
        return task_named(self.task)

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
    def lower_case(self) -> bool:
        return self.vocabulary.lower_case


def serving_spec(directory: ModelDirectory, seq_length: int | None = None, max_text_bytes: int | None = None,
                 quantization: str = "none", embedding_dims: int | None = None) -> ServingSpec:
    """The `ServingSpec` of a loaded model directory; `seq_length`, `max_text_bytes` and (sentence-embedding
    models) `embedding_dims` override its task's.

    `quantization` (`QUANTIZATIONS`): "none" (float32), "bf16" (the model with bfloat16 weights
    and matrix multiplies: `bert_tf.precision`), "int8" (float32 here: the TFLite converter
    quantizes it, `serving.export.tflite`).
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}; got {quantization!r}.")
    model, task_spec = directory.model, directory.task
    if quantization == "bf16":
        model = with_precision(model, "bfloat16")
    if embedding_dims is not None and not task_named(task_spec.task).sentence_vectors(task_spec):
        raise ValueError(f"embedding_dims cuts sentence vectors; a {task_spec.task} model makes none.")
    overrides = {name: value for name, value in (("seq_length", seq_length), ("max_text_bytes", max_text_bytes),
                                                 ("embedding_dims", embedding_dims)) if value is not None}
    if overrides:
        task_spec = task_spec.replace(**overrides)
        task_spec.check_fits(directory.encoder.config)
    vocab_file = directory.require_vocab_file()
    vocabulary = Vocabulary.from_file(vocab_file, directory.lower_case)
    return ServingSpec(
        task_spec=task_spec,
        model=task_named(task_spec.task).served_model(model),
        vocabulary=vocabulary,
        vocab_file=vocab_file,
        quantization=quantization,
    )


def id_input_specs(seq_length: int) -> list[tf.TensorSpec]:
    """The id inputs of `serve_ids`: int32 [batch, seq_length] each, with BERT's names."""
    return [tf.TensorSpec([None, seq_length], tf.int32, name=name) for name in INPUT_NAMES]


def text_input_specs(spec: ServingSpec) -> list[tf.TensorSpec]:
    """The text inputs: string [batch] each, UTF-8 (a reranker's documents: [batch, documents]), as the task's
    raw-text signature takes them (`TextServing.input_specs`)."""
    return spec.task_class.text_serving_class.input_specs(spec.task_spec)


def example_texts(spec: ServingSpec, text: str) -> dict[str, np.ndarray]:
    """One example of the text inputs, each `text`, in the inputs' shapes: a row of each (a warm-up request, a
    check that a converted model runs)."""
    return {input_spec.name: np.full([1] * input_spec.shape.rank, text, dtype=object)
            for input_spec in text_input_specs(spec)}


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
    recorded settings out, one row per request: `task`, `seq_length`, `max_text_bytes` (each text
    is cut to this many UTF-8 bytes before tokenizing), `quantization`, `lower_case`, `vocab_size`,
    `type_vocab_size` (segment ids), `label_names` [batch, k] (classify, ner), `classifier_mode` (classify), `multi_label_threshold`
    (multi-label classifiers), `version_2` (squad: a question may have no answer), and `extra()`'s values.

    It takes an input only because TF Serving's batching (`--enable_batching`) refuses
    signatures without inputs or with outputs that are not batch-major: send `[""]`.
    """

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="request")])
    def model_info(request):
        info = {
            "task": tf.constant(spec.task),
            "seq_length": tf.constant(spec.seq_length, tf.int32),
            "max_text_bytes": tf.constant(spec.task_spec.max_text_bytes, tf.int32),
            "quantization": tf.constant(spec.quantization),
            "lower_case": tf.constant(spec.lower_case),
            "vocab_size": tf.constant(len(spec.vocabulary), tf.int32),
            "type_vocab_size": tf.constant(getattr(spec.model, "encoder", spec.model).config.type_vocab_size, tf.int32),
            **spec.task_class.serving_info(spec.model, spec.task_spec),
            **extra(),
        }
        return {name: repeated(value, tf.shape(request)[0]) for name, value in info.items()}

    return model_info


def task_outputs(spec: ServingSpec, ids: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The task's outputs (see the module docstring) for the id tensors `ids` (BERT's three names), each
    row one model input (for ner and squad: one window)."""
    return spec.task_class.serving_outputs(spec.model, spec.task_spec, ids)
