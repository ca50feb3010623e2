"""`export_saved_model`: a bert-tf model directory → a SavedModel version for TensorFlow Serving.

Writes `BASE/NAME/<version>/` (the layout TF Serving watches; the version defaults to the
highest one there + 1). The version is written to a hidden directory beside it and
renamed at the end, so a polling server never sees half a model. It holds TF Serving's
warm-up file (`assets.extra/tf_serving_warmup_requests`, `serving.export.warmup`): requests of
a typical and of the longest length for each signature, which a server replays before the
version serves, so that its first request does not wait for the graph to be built.

Signatures (inputs and outputs per task: see `serving.export.signatures`):
- `serving_default`: raw text in (`text`, `text_b` for pair tasks; `question`, `context`
  for squad; string [batch], UTF-8), the task's outputs out (plus word tags for ner and
  the answer text for squad: each task's `text_serving`, `bert_tf.tasks.text_serving`). Tokenization runs in the graph
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
  `multi_label_threshold` (float32), for squad `version_2` (bool). (An input, and
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

from bert_tf.cpu_features import bfloat16_warning
from bert_tf.model_directory import load_model_directory
from bert_tf.tokenizer import BertTokenizer
from serving.export.signatures import ServingSpec, model_info_function, serve_ids_function, serving_spec
from serving.export.signatures import text_input_specs
from serving.export.tflite import write_tflite
from serving.export.warmup import warmup_requests
from serving.protocol import TFLITE_MODEL_FILE
from serving.tflite_runner import TfliteModel
from serving.warmup_records import write_warmup_requests

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
    embedding_dims: int | None = None,
) -> Path:
    """Exports the model directory `model_dir` as `base_path/name/<version>/`; returns that path.

    `version` None: the highest version there + 1 (1 for a new model). `seq_length`
    None: the directory's task's (`TaskSpec`); so is `max_text_bytes`, the UTF-8 bytes of each
    text kept before tokenizing (the bound on a request's cost). `quantize`: "none" (float32),
    "bf16" (a SavedModel with bfloat16 weights and matrix multiplies), "int8" (`model.tflite`, see the module
    docstring). `embedding_dims` (sentence-embedding models): the vectors cut to their first values (a Matryoshka
    size the model trained at), renormalised. Raises FileExistsError if the version exists, ValueError/FileNotFoundError for a
    directory that cannot be exported.
    """
    final = new_version_path(base_path, name, version)  # refused at once, before the model loads
    if quantize == "bf16" and (warning := bfloat16_warning()):
        logger.warning(warning)
    spec = serving_spec(load_model_directory(model_dir), seq_length, max_text_bytes, quantization=quantize,
                        embedding_dims=embedding_dims)

    def write(staging: Path) -> None:
        if quantize == "int8":
            signature_inputs = _write_tflite_version(spec, staging, ids_only)
        else:
            module, signatures = build_serving_module(spec, ids_only)
            tf.saved_model.save(module, str(staging), signatures=signatures)
            signature_inputs = {signature: [input_spec.name for input_spec in tf.nest.flatten(
                function.structured_input_signature)] for signature, function in signatures.items()}
        write_warmup_requests(staging, name, warmup_requests(spec, signature_inputs))

    write_version(final, write)
    logger.info("Exported %s (%s, quantize %s) to %s.", model_dir, spec.task, quantize, final)
    return final


def new_version_path(base_path: str | Path, name: str, version: int | None) -> Path:
    """`base_path/name/<version>/`, checked not to exist; `version` None: the highest there + 1."""
    if not name or name != Path(name).name or name.startswith("."):
        raise ValueError(f"Invalid model name {name!r}: it must be a plain directory name.")
    model_path = Path(base_path) / name
    version = next_version(model_path) if version is None else version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}.")
    final = model_path / str(version)
    if final.exists():
        raise FileExistsError(f"{final} exists already; pick another --version (or leave it out for the next one).")
    return final


def write_version(final: Path, write) -> None:
    """Writes the version folder `final` with `write(folder)`, into a hidden folder beside it renamed at the end (a
    polling server never sees half a version). Hidden folders that writers killed mid-way left behind (their
    process gone: SIGKILL, a crash) are removed first."""
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(final.parent)
    staging = final.parent / f".export-{final.name}-{os.getpid()}"
    try:
        write(staging)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def remove_stale_staging(model_path: Path) -> list[Path]:
    """Removes `model_path`'s `.export-<version>-<pid>` folders whose process is no longer running; returns them."""
    removed = []
    for folder in model_path.glob(".export-*-*"):
        pid = folder.name.rsplit("-", 1)[1]
        if folder.is_dir() and pid.isdigit() and not _running(int(pid)):
            logger.warning("Removing %s, left by an export that was stopped (process %s is gone).", folder, pid)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _int8_takes_text(spec: ServingSpec, ids_only: bool = False) -> bool:
    """Whether the int8 (TFLite) version takes raw text: not for ner and squad (`serving.export.tflite`)."""
    return not ids_only and not spec.task_class.windowed


def _write_tflite_version(spec: ServingSpec, version_dir: Path, ids_only: bool) -> dict[str, list[str]]:
    """Writes `version_dir/model.tflite`: the model converted with int8 quantization, checked to run; returns its
    signatures' input names."""
    takes_text = _int8_takes_text(spec, ids_only)
    if not takes_text and not ids_only:
        logger.warning("The int8 %s model takes token ids (its serving_default is serve_ids): TFLite cannot run the "
                       "windows that long %s texts need. Serve the float32 or bf16 SavedModel for raw text.",
                       spec.task, spec.task)
    model = TfliteModel(write_tflite(spec, version_dir / TFLITE_MODEL_FILE, "text" if takes_text else "ids", "int8"))
    return {signature: model.input_names(signature) for signature in model.signatures}


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

    text = spec.task_class.text_serving(spec.model, spec.task_spec, BertTokenizer(spec.vocabulary))

    @tf.function(input_signature=text_input_specs(spec))
    def serve_text(*texts):
        return text.outputs(list(texts))

    @tf.function(input_signature=text_input_specs(spec))
    def preprocess(*texts):
        return text.preprocess(list(texts))

    signatures["serving_default"] = serve_text.get_concrete_function()
    signatures["preprocess"] = preprocess.get_concrete_function()
    return module, signatures
