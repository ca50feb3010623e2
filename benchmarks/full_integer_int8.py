"""A fully integer int8 TFLite export against the dynamic-range int8 that `export --quantize int8` writes (issue 39).

Whether calibrated int8 activations would close the gap to ONNX Runtime's int8 on AVX2-only CPUs, where
XNNPACK's dynamic-range kernels are its weakest (benchmarks/RESULTS.md, "int8 on AVX2-only CPUs"). The model:
`benchmarks.quality`'s seed-1 SST-2 BERT-Mini, fine-tuned from the team's checkpoint (reused from its work folder
when there). Three ways, the same ids in (the model's seq_length):
- float32: bert_tf's `inference_function`;
- dynamic-range int8: `serving.export.tflite.convert(spec, "ids", "int8")`, per-channel int8 weights, activations
  quantized per row as the kernels run (XNNPACK's QD8 kernels);
- fully integer int8: the same module converted with a representative dataset (the first CALIBRATION training
  sentences), so that the activations are int8 with calibrated ranges (XNNPACK's QS8 kernels where it has
  them, TFLite's own int8 kernels elsewhere, float32 where an op has no int8 kernel).
Reported: dev accuracy and the share of labels equal to float32's; sentences/s one dev sentence at a time (the first
SENTENCES, padded to seq_length), interleaved; and each int8 model's hottest kernels (`benchmarks.kernels_used`).

    python -m benchmarks.run --only full_integer_int8
    python -m benchmarks.avx2_only python -m benchmarks.run --only full_integer_int8 --output-dir "$WORK"/avx2
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks import quality
from benchmarks.data import sst2
from benchmarks.harness import Contender, interleaved, rate_cell, usable_cores
from benchmarks.kernels_used import hottest_kernels, product_kernels
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.inference import inference_function
from serving.export.signatures import serving_spec
from serving.export.tflite import convert, tflite_module
from serving.tflite_runner import TfliteModel

NAME = "full_integer_int8"
CALIBRATION = 200  # training sentences the converter calibrates the activations on
SENTENCES = 100  # dev sentences timed one at a time
BATCH_SIZE = 32
DYNAMIC = "dynamic-range int8 (`--quantize int8`)"
FULL = "fully integer int8 (calibrated activations)"


def fully_integer(spec, calibration: dict[str, np.ndarray]) -> bytes:
    """The ids model of `spec` converted with int8 activations calibrated on the rows of `calibration`."""
    module, signatures = tflite_module(spec, with_text=False)
    with tempfile.TemporaryDirectory(prefix="bert_tf_full_int8_") as saved_model:
        tf.saved_model.save(module, saved_model, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model, signature_keys=["serving_default"])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ({name: value[row:row + 1] for name, value in calibration.items()}
                                                    for row in range(len(calibration["input_word_ids"])))
        return converter.convert()


def run(settings: Settings) -> BenchmarkResult:
    title = "## A fully integer int8 export against dynamic-range int8 (SST-2, trained BERT-Mini)"
    task = next(task for task in quality.TASKS if task.name == "sst2")
    if settings.data_file(*quality.CHECKPOINT) is None or settings.data_file("sst2", "dev.tsv") is None:
        message = f"no trained checkpoint or SST-2 under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory(prefix="full-integer-int8-") as scratch:
        work = Path(scratch) if settings.quick else quality.WORK_DIR
        (work / "models").mkdir(parents=True, exist_ok=True)
        model_dir, training = quality.bert_tf_model(task, settings, work)
        directory = bert_tf.load_model_directory(model_dir)
        spec = serving_spec(directory, quantization="int8")
        preprocessor = bert_tf.BertPreprocessor(
            bert_tf.BertTokenizer(directory.require_vocab_file(), lower_case=directory.lower_case),
            seq_length=spec.seq_length)

        def features(texts: list[str]) -> dict[str, np.ndarray]:
            return {name: value.numpy() for name, value in preprocessor(tf.constant(texts)).items()}

        train_file, dev_file = quality.data_files(task, settings, work)
        dev_texts, labels = sst2(dev_file)
        dev = features(dev_texts)
        calibration = features(sst2(train_file, calibration_count(settings))[0])
        models = {}
        for name, content in ((DYNAMIC, convert(spec, "ids", "int8")), (FULL, fully_integer(spec, calibration))):
            path = Path(scratch) / f"{len(models)}.tflite"
            path.write_bytes(content)
            models[name] = TfliteModel(path, num_threads=usable_cores())
        float32 = inference_function(directory.model)
        predict = {"float32": lambda ids: float32({name: tf.constant(value) for name, value in ids.items()}).numpy(),
                   **{name: (lambda ids, m=model: m.run(ids)["logits"]) for name, model in models.items()}}
        results = measure(predict, dev, labels, settings)
    return BenchmarkResult(NAME, markdown(title, results, training, len(labels), spec.seq_length, settings),
                           {"results": results, "training": training, "seq_length": spec.seq_length})


def calibration_count(settings: Settings) -> int:
    return 8 if settings.quick else CALIBRATION


def timed_count(settings: Settings) -> int:
    return 4 if settings.quick else SENTENCES


def shown_kernels(kernels: list[dict]) -> list[dict]:
    """The two hottest functions, and the hottest product kernel (`product_kernels`) when it is not among them."""
    return kernels[:2] + [kernel for kernel in product_kernels(kernels, 1) if kernel not in kernels[:2]]


def measure(predict: dict, dev: dict[str, np.ndarray], labels: np.ndarray, settings: Settings) -> dict:
    """Accuracy, agreement with float32, sentences/s and (int8 models) hottest kernels of each of `predict`."""
    predicted = {name: np.concatenate([np.argmax(call({key: value[start:start + BATCH_SIZE]
                                                       for key, value in dev.items()}), -1)
                                       for start in range(0, len(labels), BATCH_SIZE)])
                 for name, call in predict.items()}
    count = timed_count(settings)
    rows = [{key: value[row:row + 1] for key, value in dev.items()} for row in range(count)]
    contenders = [Contender(name, lambda call=call: [call(ids) for ids in rows], items=count)
                  for name, call in predict.items()]
    timings = interleaved(contenders, settings.rounds, warmup=1, max_seconds=settings.max_seconds, description=NAME)
    results = {}
    for name, call in predict.items():
        kernels = None if name == "float32" else hottest_kernels(lambda call=call: call(rows[0]))
        results[name] = {"accuracy": float(np.mean(predicted[name] == labels)),
                         "same_as_float32": float(np.mean(predicted[name] == predicted["float32"])),
                         "timing": timings[name].summary(), "rate": rate_cell(timings[name], 1),
                         "kernels": shown_kernels(kernels) if kernels else kernels}
    return results


def markdown(title: str, results: dict, training: dict, examples: int, seq_length: int, settings: Settings) -> str:
    reference = results["float32"]["accuracy"]
    rows = [[name, f"{100 * result['accuracy']:.2f} ({100 * (result['accuracy'] - reference):+.2f})",
             f"{100 * result['same_as_float32']:.2f}", result["rate"],
             "; ".join(f"`{kernel['kernel']}` ({100 * kernel['share']:.0f}%)" for kernel in result["kernels"] or [])
             or "—"]
            for name, result in results.items()]
    quick = " **Quick mode: the figures mean nothing.**" if settings.quick else ""
    return "\n\n".join([
        title,
        f"Model: `{training['command']}` ({training['train_examples']:,} training examples).{quick} Every path takes "
        f"the same ids ({seq_length} tokens); accuracy on the {examples} dev sentences in batches of {BATCH_SIZE}; "
        f"speed: the first {timed_count(settings)} dev sentences one at a time, padded to {seq_length}, interleaved rounds, "
        f"{usable_cores()} threads; kernels: the two hottest functions and the hottest product kernel, by perf "
        "(`benchmarks.kernels_used`). Fully integer: the converter calibrated on the first "
        f"{calibration_count(settings)} training sentences, per-channel int8 weights.",
        markdown_table(["path", "dev accuracy % (Δ float32)", "same label as float32 %", "sentences/s",
                        "hottest kernels (share of samples)"], rows),
    ])
