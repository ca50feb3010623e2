"""`export_saved_model`: a bert-tf model directory → a SavedModel version for TensorFlow Serving.

Writes `BASE/NAME/<version>/` (the layout TF Serving watches; the version defaults to the
highest one there + 1). The version is written to a hidden directory beside it and
renamed at the end, so a polling server never sees half a model.

Signatures (inputs and outputs per task: see `serving.export.signatures`):
- `serving_default`: raw text in (`text`, `text_b` for pair tasks; `question`, `context`
  for squad; string [batch], UTF-8), the task's outputs out (plus word tags for ner and
  the answer text for squad: `TextSignatures`). Tokenization runs in the graph
  (bert_tf's exact BERT tokenizer, the model's vocabulary and casing, each text first cut
  to `max_text_bytes` UTF-8 bytes so that a request's cost is bounded, then to
  `seq_length` tokens or windows). Bytes that are not UTF-8 are dropped, an empty string
  is just `[CLS] [SEP]`.
- `serve_ids`: `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch,
  seq_length]) in, the same outputs; no text ops run.
- `preprocess`: the text inputs → the three id tensors that `serve_ids` takes ([batch,
  seq_length]; for ner and squad, whose long inputs take several windows, [batch, windows,
  seq_length]: reshape to [-1, seq_length] and drop the all-zero rows of missing windows).
- `model_info`: `request` (string [batch], values ignored: send `[""]`) → the recorded
  settings, one row per request: `task` (string), `seq_length` (int32), `max_text_bytes`
  (int32: each text is cut to this many UTF-8 bytes before tokenizing), `lower_case`
  (bool), `vocab_size` (int32), `vocab_file` (string: the vocabulary asset's path where
  the model is loaded), for classify/ner `label_names` [k], and for classify
  `classifier_mode` ("single_label", "multi_label" or "regression"), for multi-label classifiers
  `multi_label_threshold` (float32). (An input, and
  batch-major outputs, because TF Serving's batching refuses signatures without.)
With `ids_only=True` there are no text signatures: `serving_default` is `serve_ids`, and
the SavedModel holds no tensorflow-text op, for TF Serving builds without them ("Op type
not registered 'FastWordpieceTokenizeWithOffsets'").

`quantize="int8"` writes `<version>/model.tflite` instead (TensorFlow Serving's name for a
TFLite version; `bert-tf serve` serves it): the model converted by TFLite with int8 weights,
run by LiteRT's XNNPACK int8 kernels, several times faster on CPUs than the float32 SavedModel
(benchmarks/RESULTS.md). Its signatures are the same, from the same code, except that ner and
squad take token ids only (`serving_default` is `serve_ids`: TFLite cannot run their
windowing of long texts) and classification's tokenizer is TFLite's (`serving.export.tflite`).
`quantize="bf16"` writes a SavedModel whose weights and matrix multiplies are bfloat16
(`bert_tf.precision`; for CPUs with bfloat16 units). `model_info` reports `quantization`.

What clients can see without running anything: the signatures, dtypes and shapes in
`GetModelMetadata` (the ids' second dimension is `seq_length`). Objects for Python
(`tf.saved_model.load`): `vocab_file` (a `tf.saved_model.Asset`, copied into
`assets/vocab.txt`), `do_lower_case` and `seq_length` (variables), as TF Hub BERT
preprocessors have them.

Example:
    >>> export_saved_model("runs/sst2/model", "/models", "sst2")  # doctest: +SKIP
    PosixPath('/models/sst2/1')
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import tensorflow as tf

from bert_tf.model_directory import load_model_directory
from bert_tf.tasks.classification.ops import text_packer
from bert_tf.tasks.ner import ops as ner
from bert_tf.tasks.squad import ops as squad
from bert_tf.tasks.text_budget import cut_text
from bert_tf.tokenizer import BertTokenizer
from serving.export.signatures import ServingSpec, model_info_function, serve_ids_function, serving_spec, task_outputs
from serving.export.signatures import text_input_specs
from serving.export.tflite import WINDOWED_TASKS, write_tflite
from serving.protocol import TFLITE_MODEL_FILE

logger = logging.getLogger(__name__)


def export_saved_model(
    model_dir: str | Path,
    base_path: str | Path,
    name: str,
    version: int | None = None,
    ids_only: bool = False,
    seq_length: int | None = None,
    max_text_bytes: int | None = None,
    quantize: str = "none",
) -> Path:
    """Exports the model directory `model_dir` as `base_path/name/<version>/`; returns that path.

    `version` None: the highest version there + 1 (1 for a new model). `seq_length`
    None: the directory's task's (`TaskSpec`); so is `max_text_bytes`, the UTF-8 bytes of each
    text kept before tokenizing (the bound on a request's cost). `quantize`: "none" (float32),
    "bf16" (a SavedModel with bfloat16 weights and matrix multiplies), "int8" (`model.tflite`, see the module
    docstring). Raises FileExistsError if the version exists, ValueError/FileNotFoundError for a
    directory that cannot be exported.
    """
    if not name or name != Path(name).name or name.startswith("."):
        raise ValueError(f"Invalid model name {name!r}: it must be a plain directory name.")
    model_path = Path(base_path) / name
    version = next_version(model_path) if version is None else version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}.")
    final = model_path / str(version)
    if final.exists():
        raise FileExistsError(f"{final} exists already; pick another --version (or leave it out for the next one).")
    spec = serving_spec(load_model_directory(model_dir), seq_length, max_text_bytes, quantization=quantize)
    model_path.mkdir(parents=True, exist_ok=True)
    staging = model_path / f".export-{version}-{os.getpid()}"
    try:
        if quantize == "int8":
            _write_tflite_version(spec, staging, ids_only)
        else:
            module, signatures = build_serving_module(spec, ids_only)
            tf.saved_model.save(module, str(staging), signatures=signatures)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("Exported %s (%s, quantize %s) to %s.", model_dir, spec.task, quantize, final)
    return final


def _int8_takes_text(spec: ServingSpec, ids_only: bool = False) -> bool:
    """Whether the int8 (TFLite) version takes raw text: not for ner and squad (`serving.export.tflite`)."""
    return not ids_only and spec.task not in WINDOWED_TASKS


def _write_tflite_version(spec: ServingSpec, version_dir: Path, ids_only: bool) -> None:
    """Writes `version_dir/model.tflite`: the model converted with int8 quantization, checked to run."""
    takes_text = _int8_takes_text(spec, ids_only)
    if not takes_text and not ids_only:
        logger.warning("The int8 %s model takes token ids (its serving_default is serve_ids): TFLite cannot run the "
                       "windows that long %s texts need. Serve the float32 or bf16 SavedModel for raw text.",
                       spec.task, spec.task)
    write_tflite(spec, version_dir / TFLITE_MODEL_FILE, "text" if takes_text else "ids", "int8")


def next_version(model_path: str | Path) -> int:
    """1 + the highest numeric version directory under `model_path` (1 if there is none)."""
    path = Path(model_path)
    if not path.is_dir():
        return 1
    return max((int(child.name) for child in path.iterdir() if child.name.isascii() and child.name.isdigit()),
               default=0) + 1


def build_serving_module(spec: ServingSpec, ids_only: bool = False) -> tuple[tf.Module, dict]:
    """The module to save (variables, vocabulary asset, settings) and its signatures {name: concrete function}."""
    module = tf.Module(name="bert_tf_serving")
    # The model's tf.Variables themselves, not the Keras model: TFLite's converter freezes only
    # variables it finds as such in the object graph (it left a tracked Keras model's unfrozen: NaN outputs).
    module.model_variables = [variable.value for variable in spec.model.variables]
    module.vocab_file = tf.saved_model.Asset(str(spec.vocab_file))
    module.do_lower_case = tf.Variable(spec.lower_case, trainable=False, name="do_lower_case")
    module.seq_length = tf.Variable(spec.seq_length, trainable=False, name="seq_length")

    model_info = model_info_function(spec, extra=lambda: {"vocab_file": module.vocab_file.asset_path})
    signatures = {"serve_ids": serve_ids_function(spec).get_concrete_function(),
                  "model_info": model_info.get_concrete_function()}
    if ids_only:
        signatures["serving_default"] = signatures["serve_ids"]
        return module, signatures

    text = TextSignatures(spec)

    @tf.function(input_signature=text_input_specs(spec))
    def serve_text(*texts):
        return text.outputs(list(texts))

    @tf.function(input_signature=text_input_specs(spec))
    def preprocess(*texts):
        return text.preprocess(list(texts))

    signatures["serving_default"] = serve_text.get_concrete_function()
    signatures["preprocess"] = preprocess.get_concrete_function()
    return module, signatures


class TextSignatures:
    """Text → ids → outputs for `spec`'s task; call `outputs` and `preprocess` inside a `tf.function`.

    The raw-text side of an exported SavedModel, per task, with bert_tf's exact tokenizer:
    - classify, encoder/pretrainer: `BertPreprocessor` (pairs cut by the task's `truncation`, as in training);
      classifiers pad each batch only to its longest text (their outputs do not depend on
      padding), the others to `seq_length`.
    - ner: the text is split into words as BERT's basic tokenizer splits it (at whitespace and
      around punctuation, `BertTokenizer.words`, as `pipelines.prediction` does), each word into
      pieces, and the words into windows of `seq_length` tokens as `bert-tf predict` does
      (`bert_tf.tasks.ner.ops`); a word's tag is its first piece's. The per-token outputs are per
      window, [batch, most windows, seq_length, ...] (zeros and "" for the windows a text does
      not have). Extra outputs: `words` and `word_tags` (string [batch, most words], "" only after
      the last word), and the entities (`bert_tf.tasks.ner.ops.word_entities`, Hugging Face's
      "simple" aggregation), [batch, most entities]: `entity_type`, `entity_text` (string, ""
      after the last), `entity_char_start`, `entity_char_end` (int32 code-point offsets, end
      exclusive) and `entity_score` (float32).
    - squad: the question and its context become doc-stride windows and the answer is the
      best span over all of them, as `bert-tf predict` finds it (`bert_tf.tasks.squad.ops`,
      the directory's `doc_stride`, `max_query_length`, `max_answer_length`, `n_best_size`,
      `version_2`, `null_score_threshold`). `start_logits`, `end_logits` are per window,
      [batch, most windows, seq_length] (zeros for the windows a context does not have);
      `answer_score`, `answer_probability` [batch] as `bert_tf.tasks.squad.postprocess`; extra
      outputs `answer_text` (string [batch], "" for no answer) and `answer_char_start`,
      `answer_char_end` (int32 [batch], code-point offsets into the context, end exclusive,
      as Python `str` indices). No `answer_start`, `answer_end`: token positions name no window.
    `preprocess` gives the id tensors each task's text path feeds the model (ner, squad: [batch,
    most windows, seq_length], rows of zeros for the windows a text or context does not have).

    Example:
        >>> signatures = TextSignatures(spec)                    # doctest: +SKIP
        >>> signatures.outputs([tf.constant(["EU rejects German call"])])["word_tags"]  # doctest: +SKIP
        <tf.Tensor: shape=(1, 4), dtype=string, numpy=array([[b'B-ORG', b'O', b'B-MISC', b'O']], dtype=object)>
    """

    def __init__(self, spec: ServingSpec):
        self.spec = spec
        self.tokenizer = BertTokenizer(spec.vocabulary)
        self.fixed = text_packer(self.tokenizer, spec.task_spec, padding="max_length")
        self.longest = text_packer(self.tokenizer, spec.task_spec, padding="longest")

    def preprocess(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The three id tensors, int32 [batch, seq_length] (ner, squad: [batch, most windows, seq_length])."""
        if self.spec.task == "ner":
            ids, windows, _ = self._ner_windows(texts[0])
            return _per_example(ids, windows.input_word_ids.row_lengths())
        if self.spec.task == "squad":
            ids, windows, _, _ = self._squad_windows(*texts)
            return _per_example(ids, windows.layout.num_windows)
        return self.fixed(texts)

    def outputs(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The task's outputs (`serving.export.signatures`) and the extras from text (the class docstring)."""
        if self.spec.task == "classify":
            return task_outputs(self.spec, _at_least_two_columns(self.longest(texts), self.spec.vocabulary.pad_id))
        if self.spec.task == "ner":
            return self._ner_outputs(texts[0])
        if self.spec.task == "squad":
            return self._squad_outputs(*texts)
        return task_outputs(self.spec, self.fixed(texts))

    def _ner_windows(self, text):
        """(ids [windows, seq_length] each, the `WordWindows` of the text's words, the text's words)."""
        text = cut_text(text, self.spec.task_spec.max_text_bytes)
        words = self.tokenizer.words(text)
        windows = ner.word_windows(self.tokenizer.tokenize(words[0]), self.spec.seq_length, self.spec.vocabulary)
        return ner.window_inputs(windows, self.spec.seq_length, self.spec.vocabulary.pad_id), windows, (text, *words)

    def _ner_outputs(self, text):
        ids, windows, (text, words, starts, ends) = self._ner_windows(text)
        outputs = _per_example(task_outputs(self.spec, ids), windows.input_word_ids.row_lengths())
        tag_ids = ner.word_values(outputs["tag_ids"], windows)
        scores = ner.word_values(tf.reduce_max(outputs["probabilities"], axis=-1), windows)
        entities = ner.word_entities(tag_ids, scores, starts, ends, self.spec.label_names)
        entity_text = tf.strings.substr(tf.gather(text, entities.types.value_rowids()), entities.starts.flat_values,
                                        entities.ends.flat_values - entities.starts.flat_values, unit="UTF8_CHAR")
        return {**outputs, "words": words.to_tensor(""), "word_tags": ner.word_values(outputs["tags"], windows).to_tensor(""),
                "entity_type": entities.types.to_tensor(""), "entity_text": entities.types.with_flat_values(
                    entity_text).to_tensor(""), "entity_char_start": entities.starts.to_tensor(0),
                "entity_char_end": entities.ends.to_tensor(0), "entity_score": entities.scores.to_tensor(0.0)}

    def _squad_windows(self, question, context):
        """(ids [windows, seq_length] each, `SquadWindows`, code-point start and end of each context token)."""
        settings = self.spec.task_spec
        question, context = (cut_text(text, settings.max_text_bytes) for text in (question, context))
        context_ids, starts, ends = self.tokenizer.tokenize_with_offsets(context, unit="UTF8_CHAR")
        windows = squad.squad_windows(self.tokenizer.tokenize(question), context_ids, self.spec.seq_length,
                                      settings.max_query_length, settings.doc_stride, self.spec.vocabulary)
        return windows.model_inputs(self.spec.seq_length, self.spec.vocabulary.pad_id), windows, starts, ends

    def _squad_outputs(self, question, context):
        ids, windows, starts, ends = self._squad_windows(question, context)
        logits = {name: tf.cast(value, tf.float32) for name, value in self.spec.model(ids, training=False).items()}
        settings = self.spec.task_spec
        answers = squad.best_answers(logits["start_logits"], logits["end_logits"], windows.layout,
                                     max_answer_length=settings.max_answer_length, n_best_size=settings.n_best_size,
                                     version_2=settings.version_2, null_score_threshold=settings.null_score_threshold)
        char_start, char_end = squad.answer_char_spans(answers, starts, ends)
        text = tf.strings.substr(context, char_start, char_end - char_start, unit="UTF8_CHAR")
        return {**_per_example(logits, windows.layout.num_windows), "answer_text": text,
                "answer_char_start": char_start, "answer_char_end": char_end, "answer_score": answers.score,
                "answer_probability": answers.probability}


def _per_example(values: dict[str, tf.Tensor], num_windows) -> dict[str, tf.Tensor]:
    """Per-window values [windows, ...] → [batch, most windows, ...], zeros where an example has fewer."""
    return {name: tf.RaggedTensor.from_row_lengths(value, num_windows).to_tensor() for name, value in values.items()}


def _at_least_two_columns(ids: dict[str, tf.Tensor], pad_id: int) -> dict[str, tf.Tensor]:
    """Pads ids to 2 columns where a batch is narrower: only an empty batch is ([batch 0, 0]);
    the encoder reads column 0 ([CLS]) and fails on a tensor without it."""
    missing = tf.maximum(0, 2 - tf.shape(ids["input_word_ids"])[1])
    return {
        name: tf.pad(value, [[0, 0], [0, missing]], constant_values=pad_id if name == "input_word_ids" else 0)
        for name, value in ids.items()
    }
