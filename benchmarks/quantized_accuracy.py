"""Accuracy of the quantized CPU serving paths against float32, on an SST-2 classifier and a CoNLL-2003 tagger.

Each fine-tuned model is scored on dev three ways:
- float32: the Keras model, as `bert-tf evaluate` runs it (`FinetuneTask.outputs`);
- bf16: the SavedModel of `serving.export.export_saved_model(..., quantize="bf16")` (bfloat16
  weights and matrix multiplies, `bert_tf.precision`), through its `serve_ids` signature;
- int8: `serving.tflite_export.export_tflite(..., inputs="ids", quantization="int8")` (LiteRT's
  dynamic-range int8), run by `serving.tflite_runner.TfliteModel`.
All three get the same features (the task's tokenization and NER word windows, `FinetuneTask.prepare`)
and the same scoring (`FinetuneTask.scores`, `FinetuneTask.predictions`): an exported model stands in
for the Keras model at its one call, `predict_on_batch` in `pipelines.model_outputs.predict_examples`
(`ServedModel`). Reported per task: the score, the share of predictions (SST-2 labels, CoNLL word
tags) equal to float32's, and the largest difference from float32's logits (CoNLL: of the
log-probabilities, since the exports give probabilities; logits less each token's log-sum-exp).

No pre-trained weights exist here, so the models are fine-tuned from random weights with
`bert-tf finetune` (its flags parsed by the CLI's own parser, run in this process) and kept in
`WORK_DIR`: a later run reuses a model whose saved fine-tuning config is the one asked for, so a
stopped run goes on with the task it had not finished. On 2 cores the full run fine-tunes BERT-base
for about 10 (SST-2) and 8 (CoNLL) minutes the first time; scoring takes about 5 minutes. Quick mode:
the tiny model on a few hundred examples and a dev subset, in a fresh temporary directory. Skipped,
with a message, without the data.

    python -m benchmarks.run --only quantized_accuracy
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.harness import usable_cores
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf_cli import build_parser
from bert_tf_cli.finetune import config_from_args
from pipelines.finetune import finetune
from pipelines.tasks import task_from_directory
from serving.export import export_saved_model
from serving.tflite_export import export_tflite
from serving.tflite_runner import TfliteModel

NAME = "quantized_accuracy"
WORK_DIR = Path(tempfile.gettempdir()) / "bert_tf_quantized_accuracy"
BATCH_SIZE = 32  # `bert-tf evaluate`'s
TARGET_POINTS = 0.5  # the bound on the score lost against float32
PATHS = ("float32", "bf16", "int8")


@dataclasses.dataclass(frozen=True)
class Task:
    """One benchmark task: its data, vocabulary, score, and how its model is fine-tuned (full run)."""

    name: str
    task: str  # `bert-tf finetune --task`
    data: str  # folder of the team data
    train: str
    dev: str
    vocab: str
    metric: str  # the key of `FinetuneTask.scores` reported
    seq_length: int
    train_examples: int | None  # seeded subset of the training file (None: all of it)


TASKS = (
    Task("SST-2", "classify", "sst2", "train.tsv", "dev.tsv", "bert-base-uncased-vocab.txt", "accuracy", 64, 12000),
    Task("CoNLL-2003", "ner", "conll2003", "train.txt", "valid.txt", "bert-base-cased-vocab.txt", "f1", 128, 8000),
)
# The encoder and schedule of the full run (a random start: benchmarks/RESULTS.md, learning rates by size),
# and of quick mode, which also cuts every training file and dev file to a few examples.
FULL = {"preset": "base", "learning_rate": 5e-5, "epochs": 1}
QUICK = {"preset": "tiny", "learning_rate": 1e-3, "epochs": 1}
QUICK_TRAIN_EXAMPLES, QUICK_DEV_EXAMPLES = 256, 64


class ServedModel:
    """An exported model in the Keras model's place for `FinetuneTask.outputs`, whose one call is `predict_on_batch`.

    `call` runs the export on the three id arrays padded to its fixed `seq_length`; a batch's outputs
    are its logits, or for per-token models the log of its probabilities (the same argmax).
    """

    def __init__(self, call, seq_length: int):
        self.call, self.seq_length = call, seq_length

    def predict_on_batch(self, features) -> np.ndarray:
        length = features["input_word_ids"].shape[1]
        ids = {name: np.pad(np.asarray(value), [(0, 0), (0, self.seq_length - length)])
               for name, value in features.items()}
        outputs = self.call(ids)
        if "logits" in outputs:
            return np.asarray(outputs["logits"])
        return np.log(np.asarray(outputs["probabilities"]))[:, :length]


def run(settings: Settings) -> BenchmarkResult:
    title = "## Quantized CPU serving paths against float32: SST-2 and CoNLL-2003 dev"
    needed = [(task.data, name) for task in TASKS for name in (task.train, task.dev)]
    needed += [("vocab", task.vocab) for task in TASKS]
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in needed if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory(prefix="quantized-accuracy-") as scratch:
        work = Path(scratch) / "models" if settings.quick else WORK_DIR
        results = {task.name: evaluate_task(task, settings, work, Path(scratch)) for task in TASKS}
    return BenchmarkResult(NAME, markdown(title, results, settings), {"results": results})


def fine_tuned(task: Task, settings: Settings, work: Path) -> tuple[Path, dict]:
    """The task's model directory, fine-tuned by `bert-tf finetune` unless `work` holds it with the same config,
    and its record: the command, the training summary, and whether this run trained it."""
    schedule = QUICK if settings.quick else FULL
    examples = QUICK_TRAIN_EXAMPLES if settings.quick else task.train_examples
    flags = ["--task", task.task, "--train", str(settings.data_file(task.data, task.train)),
             "--init", schedule["preset"], "--vocab", str(settings.data_file("vocab", task.vocab)),
             "--out", str(work / task.data), "--overwrite", "--seq-length", str(task.seq_length),
             "--epochs", str(schedule["epochs"]), "--batch-size", "32",
             "--learning-rate", str(schedule["learning_rate"]), "--seed", "42"]
    if examples:
        flags += ["--max-train-examples", str(examples)]
    config = config_from_args(build_parser().parse_args(["finetune", *flags]))
    metadata_file = work / task.data / "bert_tf.json"
    reused = metadata_file.is_file() and (
        json.loads(metadata_file.read_text())["training"]["config"] == dataclasses.asdict(config))
    command = shlex.join(["bert-tf", "finetune", *flags])
    print(f"{task.name}: {'reusing the model of' if reused else 'running'} `{command}`", flush=True)
    if not reused:
        finetune(config, progress=False)
    training = json.loads(metadata_file.read_text())["training"]
    return work / task.data, {"command": command, "preset": schedule["preset"], "trained_now": not reused,
                              **{key: training[key] for key in ("train_examples", "train_steps", "train_seconds")}}


def evaluate_task(task: Task, settings: Settings, work: Path, scratch: Path) -> dict:
    """Fine-tunes (or reuses) the task's model and scores it on dev through each of `PATHS`."""
    model_dir, training = fine_tuned(task, settings, work)
    directory = bert_tf.load_model_directory(model_dir)
    finetune_task = task_from_directory(directory)
    examples = finetune_task.read(settings.data_file(task.data, task.dev))
    if settings.quick:
        examples = finetune_task.subset(examples, range(QUICK_DEV_EXAMPLES))
    data = finetune_task.prepare(examples, training=False)

    seq_length = finetune_task.seq_length
    bf16_path = export_saved_model(model_dir, scratch / "bf16", task.data, ids_only=True, quantize="bf16")
    serve_ids = tf.saved_model.load(str(bf16_path)).signatures["serve_ids"]
    int8 = TfliteModel(export_tflite(model_dir, scratch / f"{task.data}-int8.tflite", inputs="ids",
                                     quantization="int8"), num_threads=usable_cores())
    models = {"float32": directory.model,
              "bf16": ServedModel(lambda ids: serve_ids(**{name: tf.constant(value) for name, value in ids.items()}),
                                  seq_length),
              "int8": ServedModel(int8.run, seq_length)}
    outputs = {path: finetune_task.outputs(model, data, BATCH_SIZE) for path, model in models.items()}

    reference_logits = _logits(outputs["float32"], finetune_task.per_position)
    reference_predictions = _predicted(finetune_task, data, outputs["float32"])
    paths = {}
    for path, path_outputs in outputs.items():
        same = np.mean(np.array(_predicted(finetune_task, data, path_outputs)) == np.array(reference_predictions))
        difference = np.abs(_logits(path_outputs, finetune_task.per_position) - reference_logits).max()
        paths[path] = {"score": float(finetune_task.scores(data, path_outputs)[task.metric]),
                       "same_as_float32": float(same), "max_logit_difference": float(difference)}
    print(f"{task.name}: {paths}", flush=True)
    return {"metric": task.metric, "dev_examples": len(examples), "predictions": len(reference_predictions),
            "seq_length": seq_length, "training": training, "paths": paths}


def _predicted(finetune_task, data, outputs) -> list[str]:
    """Every prediction, flat: the label of each example, or the tag of each word of each sentence."""
    predictions = finetune_task.predictions(data, outputs)
    if finetune_task.per_position:
        return [tag for sentence in predictions for _, tag in sentence]
    return [prediction["label"] for prediction in predictions]


def _logits(outputs: list[np.ndarray], per_position: bool) -> np.ndarray:
    """All outputs as rows [n, classes] (float64); per-token ones as log-probabilities (log-softmax is idempotent,
    so it gives the same for logits and for log-probabilities)."""
    rows = np.concatenate([np.asarray(output, np.float64).reshape(-1, output.shape[-1]) for output in outputs])
    if not per_position:
        return rows
    shifted = rows - rows.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def markdown(title: str, results: dict, settings: Settings) -> str:
    rows, verdicts = [], []
    for name, result in results.items():
        paths, metric = result["paths"], result["metric"]
        reference = paths["float32"]["score"]
        cells = [f"{100 * reference:.2f}"]
        for path in PATHS[1:]:
            change = 100 * (paths[path]["score"] - reference)
            cells.append(f"{100 * paths[path]['score']:.2f} ({change:+.2f})")
            verdict = "met" if change >= -TARGET_POINTS else "**not met**"
            verdicts.append(f"{name} {path}: {change:+.2f} points, {verdict}")
        unit = "labels" if metric == "accuracy" else "word tags"
        rows.append([name, result["training"]["preset"], metric, *cells,
                     " / ".join(f"{100 * paths[path]['same_as_float32']:.2f}" for path in PATHS[1:]),
                     " / ".join(f"{paths[path]['max_logit_difference']:.3f}" for path in PATHS[1:]),
                     f"{result['dev_examples']:,} ({result['predictions']:,} {unit})"])
    models = "\n".join(
        f"- {name}: `{result['training']['command']}` ({result['training']['train_examples']:,} training examples, "
        f"{result['training']['train_steps']} steps, {result['training']['train_seconds'] / 60:.1f} min"
        f"{'' if result['training']['trained_now'] else ', reused from an earlier run'})"
        for name, result in results.items())
    quick = " **Quick mode: tiny model, little data; the figures mean nothing.**" if settings.quick else ""
    return f"""{title}

Models: fine-tuned from random weights (no pre-trained weights on this machine) by these `bert-tf finetune`
commands (AdamW, 10% warm-up then linear decay; no dev file, so the last weights are kept; minutes of `fit`):{quick}
{models}

Each model scored on dev by the same features and scoring code three ways: float32 (the Keras model, as
`bert-tf evaluate`), bf16 (the `serve_ids` signature of `serving.export.export_saved_model(quantize="bf16")`:
bfloat16 weights and products), int8 (`serving.tflite_export.export_tflite(inputs="ids", quantization="int8")`, LiteRT's
dynamic-range int8, {usable_cores()} threads). Scores in % (CoNLL: entity F1, conlleval), with the difference
from float32 in points. Same as float32: the share of predictions (SST-2: each sentence's label, CoNLL: each
word's tag) equal to float32's. Max logit difference: the largest, over every example (CoNLL: every token of
every window), from float32's logits (CoNLL: log-probabilities, as the exports give probabilities).

{markdown_table(["task", "model", "metric", "float32", "bf16 (Δ)", "int8 (Δ)", "same as float32 % (bf16 / int8)",
                 "max logit difference (bf16 / int8)", "dev examples"], rows)}

Target (the issue): at most {TARGET_POINTS} point lost against float32. {"; ".join(verdicts)}."""
