"""What the fast serving paths cost in quality, on models fine-tuned from the team's trained BERT-Mini.

The models are `benchmarks.quality`'s seed-1 `bert-tf finetune` models of SST-2, CoNLL-2003 and SQuAD v1.1
(reused from its work folder when there, else fine-tuned here by the same command). Each is scored on dev four
ways, with the same features and the same scoring (`FinetuneTask.outputs`, `.scores`, `.predictions`; an export
stands in for the Keras model at its one call, `predict_on_batch`):
- float32: the Keras model, as `bert-tf evaluate` runs it;
- bf16: the `serve_ids` signature of `serving.export.saved_model.export_saved_model(..., quantize="bf16")`
  (bfloat16 weights and products, `bert_tf.precision`);
- int8: `serving.export.tflite.export_tflite(..., inputs="ids", quantization="int8")` (LiteRT's dynamic-range
  int8, as `bert-tf export --quantize int8` writes it), run by `serving.tflite_runner.TfliteModel`;
- float16: the same TFLite export with float16 weights (float32 arithmetic).
Reported per task and path: the score and the points lost against float32, the share of predictions equal to
float32's (SST-2 labels, CoNLL word tags, SQuAD answer texts), and the largest logit difference (CoNLL: of the
log-probabilities, as the exports give probabilities).

    python -m benchmarks.run --only quantized_accuracy          # about 10 minutes with the quality models there
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks import quality
from benchmarks.harness import usable_cores
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.tasks.registry import task_from_directory
from serving.export.saved_model import export_saved_model
from serving.export.tflite import export_tflite
from serving.tflite_runner import TfliteModel

NAME = "quantized_accuracy"
TASKS = ("sst2", "conll", "squad")
BATCH_SIZE = 32  # `bert-tf evaluate`'s
TARGET_POINTS = 0.5  # the bound on the score lost against float32
PATHS = ("float32", "bf16", "int8", "float16")
SEED = quality.SEEDS[0]


class ServedModel:
    """An exported model in the Keras model's place for `FinetuneTask.outputs`, whose one call is `predict_on_batch`.

    `call` runs the export on the three id arrays padded to its fixed `seq_length`; a batch's outputs are its
    logits (SQuAD: start and end logits), or for NER the log of its probabilities (the same argmax).
    """

    def __init__(self, call, seq_length: int):
        self.call, self.seq_length = call, seq_length

    def predict_on_batch(self, features):
        length = features["input_word_ids"].shape[1]
        ids = {name: np.pad(np.asarray(value), [(0, 0), (0, self.seq_length - length)])
               for name, value in features.items()}
        outputs = self.call(ids)
        if "start_logits" in outputs:
            return {name: np.asarray(outputs[name])[:, :length] for name in ("start_logits", "end_logits")}
        if "logits" in outputs:
            return np.asarray(outputs["logits"])
        return np.log(np.asarray(outputs["probabilities"]))[:, :length]


def run(settings: Settings) -> BenchmarkResult:
    title = "## Quantized and half-precision serving paths against float32, on trained weights"
    needed = [quality.CHECKPOINT, ("squad", "train-v1.1-subset.json"), ("sst2", "train.tsv"), ("sst2", "dev.tsv"),
              ("conll2003", "train.txt"), ("conll2003", "valid.txt")]
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in needed if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    tasks = [task for task in quality.TASKS if task.name in (quality.QUICK_TASKS if settings.quick else TASKS)]
    with tempfile.TemporaryDirectory(prefix="quantized-accuracy-") as scratch:
        work = Path(scratch) if settings.quick else quality.WORK_DIR
        for folder in (work / "models", work / "logs"):
            folder.mkdir(parents=True, exist_ok=True)
        quality.split_squad(settings.data_file("squad", "train-v1.1-subset.json"), work, quality.SQUAD_DEV_ARTICLES)
        results = {task.name: evaluate_task(task, settings, work, Path(scratch)) for task in tasks}
    return BenchmarkResult(NAME, markdown(title, tasks, results, settings), {"results": results})


def evaluate_task(task: quality.QualityTask, settings: Settings, work: Path, scratch: Path) -> dict:
    """Scores the task's model on dev through each of `PATHS`."""
    model_dir, training = quality.bert_tf_model(task, settings, work)
    directory = bert_tf.load_model_directory(model_dir)
    finetune_task = task_from_directory(directory)
    _, dev_file = quality.data_files(task, settings, work)
    data = finetune_task.prepare(finetune_task.read(dev_file), training=False)

    seq_length = finetune_task.seq_length
    bf16_path = export_saved_model(model_dir, scratch / "bf16", task.name, ids_only=True, quantize="bf16")
    serve_ids = tf.saved_model.load(str(bf16_path)).signatures["serve_ids"]
    tflite = {quantization: TfliteModel(export_tflite(model_dir, scratch / f"{task.name}-{quantization}.tflite",
                                                      inputs="ids", quantization=quantization),
                                        num_threads=usable_cores())
              for quantization in ("int8", "float16")}
    models = {"float32": directory.model,
              "bf16": ServedModel(lambda ids: serve_ids(**{name: tf.constant(value) for name, value in ids.items()}),
                                  seq_length),
              **{quantization: ServedModel(model.run, seq_length) for quantization, model in tflite.items()}}
    outputs = {path: finetune_task.outputs(model, data, BATCH_SIZE) for path, model in models.items()}

    metric = task.metrics[0]
    reference_logits = _logits(outputs["float32"], task.task)
    reference_predictions = _predicted(finetune_task, data, outputs["float32"])
    paths = {}
    for path, path_outputs in outputs.items():
        same = np.mean(np.array(_predicted(finetune_task, data, path_outputs)) == np.array(reference_predictions))
        difference = np.abs(_logits(path_outputs, task.task) - reference_logits).max()
        paths[path] = {"score": quality.points(task, metric, finetune_task.scores(data, path_outputs)[metric]),
                       "same_as_float32": float(same), "max_logit_difference": float(difference)}
    print(f"{task.name}: {paths}", flush=True)
    return {"metric": metric, "predictions": len(reference_predictions), "seq_length": seq_length,
            "training": training, "paths": paths}


def _predicted(finetune_task, data, outputs) -> list[str]:
    """Every prediction, flat: the label of each example, the tag of each word of each sentence, each answer's text."""
    predictions = finetune_task.predictions(data, outputs)
    if finetune_task.name == "ner":
        return [tag for sentence in predictions for tag in sentence["tags"]]
    return [prediction["label" if finetune_task.name == "classify" else "text"] for prediction in predictions]


def _logits(outputs: list, task: str) -> np.ndarray:
    """All outputs flat, float64: classification logits, SQuAD start and end logits, NER log-probabilities
    (log-softmax is idempotent, so it gives the same for logits and for log-probabilities)."""
    if task == "squad":
        return np.concatenate([np.asarray(output[name], np.float64) for output in outputs
                               for name in ("start_logits", "end_logits")])
    rows = np.concatenate([np.asarray(output, np.float64).reshape(-1, output.shape[-1]) for output in outputs])
    if task != "ner":
        return rows
    shifted = rows - rows.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def markdown(title: str, tasks, results: dict, settings: Settings) -> str:
    rows, verdicts = [], []
    units = {"classify": "labels", "ner": "word tags", "squad": "answers"}
    for task in tasks:
        result = results[task.name]
        paths = result["paths"]
        reference = paths["float32"]["score"]
        cells = [f"{reference:.2f}"]
        for path in PATHS[1:]:
            change = paths[path]["score"] - reference
            cells.append(f"{paths[path]['score']:.2f} ({change:+.2f})")
            if path in ("bf16", "int8"):
                verdicts.append(f"{task.title} {path}: {change:+.2f} points, "
                                f"{'met' if change >= -TARGET_POINTS else '**not met**'}")
        rows.append([task.title, result["metric"], *cells,
                     " / ".join(f"{100 * paths[path]['same_as_float32']:.2f}" for path in PATHS[1:]),
                     " / ".join(f"{paths[path]['max_logit_difference']:.3f}" for path in PATHS[1:]),
                     f"{result['predictions']:,} {units[task.task]}"])
    models = "\n".join(
        f"- {task.title}: `{results[task.name]['training']['command']}` ({results[task.name]['training']['train_examples']:,} "
        f"training examples, {results[task.name]['training']['train_steps']} steps"
        f"{'' if results[task.name]['training']['trained_now'] else ', the quality benchmark model'})"
        for task in tasks)
    quick = " **Quick mode: a few dozen examples; the figures mean nothing.**" if settings.quick else ""
    return f"""{title}

Models: BERT-Mini fine-tuned from the team's trained checkpoint (`benchmarks.quality`'s seed-{SEED} `bert-tf
finetune` runs, last epoch):{quick}
{models}

Each model scored on dev by the same features and scoring code four ways: float32 (the Keras model, as `bert-tf
evaluate`), bf16 (the `serve_ids` signature of `serving.export.saved_model.export_saved_model(quantize="bf16")`: bfloat16
weights and products), int8 (`serving.export.tflite.export_tflite(inputs="ids", quantization="int8")`, LiteRT's
dynamic-range int8, as `bert-tf export --quantize int8` writes), float16 (the TFLite export with float16 weights);
{usable_cores()} threads. Scores in % (SST-2 accuracy, CoNLL entity F1 as conlleval, SQuAD F1 as evaluate-v1.1)
with the difference from float32 in points. Same as float32: the share of predictions equal to float32's. Max
logit difference: the largest over every example and position (CoNLL: of the log-probabilities).

{markdown_table(["task", "metric", "float32", "bf16 (Δ)", "int8 (Δ)", "float16 (Δ)",
                 "same as float32 % (bf16 / int8 / float16)", "max logit difference (bf16 / int8 / float16)",
                 "predictions"], rows)}

Target (the issue): at most {TARGET_POINTS} point lost against float32 for int8 and bf16. {"; ".join(verdicts)}."""
