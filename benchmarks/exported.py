"""Exported paths: latency at batch 1 of a BERT-base classifier exported for serving, seq 128.

The classifier (random weights, 2 classes) is saved as a bert-tf model directory, then exported
with the serving package: `serving.export.export_saved_model` (signatures `serving_default`,
raw text in, and `serve_ids`, token ids in) and `serving.tflite_export.export_tflite` (token ids
in; float32, and int8 weights with `quantization="dynamic_range"`). Each runs in this process:
the SavedModel through `tf.saved_model.load`, the TFLite files through
`serving.tflite_runner.TfliteModel` (LiteRT, one thread per core). The in-process Keras model
(`bert_tf.inference.inference_function`) is the reference. Latency per request: median and
25th–75th percentile of interleaved single calls after warm-up. Skipped, with a message, when
the serving package's export functions are not there.

    python -m benchmarks.run --only exported
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.harness import Contender, interleaved, usable_cores
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.inference import inference_function

NAME = "exported"
SEQ_LENGTH = 128
SENTENCE = "a gorgeous , witty , seductive movie ."
NEEDED = {"serving.export": "export_saved_model", "serving.tflite_export": "export_tflite",
          "serving.tflite_runner": "TfliteModel"}


def missing_api() -> list[str]:
    """The serving functions this benchmark needs that cannot be imported."""
    missing = []
    for module, name in NEEDED.items():
        if importlib.util.find_spec(module) is None or not hasattr(importlib.import_module(module), name):
            missing.append(f"{module}.{name}")
    return missing


def run(settings: Settings) -> BenchmarkResult:
    title = f"## Exported models, batch 1{' (quick: tiny model)' if settings.quick else ', BERT-base classifier'}, seq {SEQ_LENGTH}"
    missing = missing_api()
    if missing or not settings.vocab_file.exists():
        message = (f"the serving export API is not there yet ({', '.join(missing)})" if missing
                   else f"vocabulary not found under {settings.data_dir}")
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}; the benchmark is ready and runs once it is.",
                               {"skipped": message})
    from serving.export import export_saved_model
    from serving.tflite_export import export_tflite
    from serving.tflite_runner import TfliteModel

    config = settings.config("base")
    classifier = bert_tf.BertClassifier(bert_tf.BertModel(config), num_classes=2)
    ids = np.zeros([1, SEQ_LENGTH], np.int32)
    tokens = bert_tf.BertTokenizer(settings.vocab_file, lower_case=True).tokenize([SENTENCE])[0].numpy()
    ids[0, :len(tokens) + 2] = [101, *tokens, 102]
    features = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32), "input_type_ids": np.zeros_like(ids)}
    threads = usable_cores()
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = bert_tf.save_pretrained(classifier, Path(scratch) / "model", vocab_file=settings.vocab_file,
                                            lower_case=True, task="classify", seq_length=SEQ_LENGTH)
        saved_model = tf.saved_model.load(str(export_saved_model(model_dir, Path(scratch) / "serving", "bench")))
        tflite = {kind: TfliteModel(export_tflite(model_dir, Path(scratch) / f"{kind}.tflite", inputs="ids",
                                                  quantization=kind), num_threads=threads)
                  for kind in ("none", "dynamic_range")}
        keras_fn = inference_function(classifier)
        tensors = {name: tf.constant(value) for name, value in features.items()}
        serve_text, serve_ids = saved_model.signatures["serving_default"], saved_model.signatures["serve_ids"]
        calls = {
            "Keras model in process (inference_function)": lambda: keras_fn(tensors).numpy(),
            "SavedModel serving_default (raw text in, padded to its own length)":
                lambda: serve_text(text=tf.constant([SENTENCE])),
            "SavedModel serve_ids (ids in)": lambda: serve_ids(**tensors),
            "TFLite float32 (ids in)": lambda: tflite["none"].run(features),
            "TFLite int8 weights, dynamic range (ids in)": lambda: tflite["dynamic_range"].run(features),
        }
        sizes = {name: Path(model.path).stat().st_size for name, model in tflite.items()}
        reference = keras_fn(tensors).numpy()
        differences = {name: _logits_difference(call(), reference) for name, call in calls.items()}
        contenders = [Contender(name, call) for name, call in calls.items()]
        timings = interleaved(contenders, settings.rounds * 3, warmup=2, max_seconds=settings.max_seconds,
                              description="exported")
    rows = []
    for name, timing in timings.items():
        q1, q3 = (1e3 / rate for rate in reversed(timing.quartiles))
        rows.append([name, f"{timing.median_seconds * 1e3:.1f} ({q1:.1f}–{q3:.1f})", f"{differences[name]:.1e}"])
    markdown = "\n\n".join([
        title,
        f"Latency of one request (one sentence of {len(tokens) + 2} tokens; the id inputs padded to {SEQ_LENGTH}, the "
        "raw-text signature pads a classifier's batch only to its longest text), ms: median (25th–75th percentile) of "
        f"{min(t.rounds for t in timings.values())}+ interleaved calls after warm-up. TFLite with {threads} threads; "
        f"file sizes: float32 {sizes['none'] / 2**20:.0f} MiB, int8 {sizes['dynamic_range'] / 2**20:.0f} MiB. "
        "Last column: largest logit difference from the Keras model.",
        markdown_table(["path", "latency ms", "logits vs Keras"], rows),
    ])
    data = {"tflite_bytes": sizes, "logit_differences": differences,
            "results": {name: timing.summary() for name, timing in timings.items()}}
    return BenchmarkResult(NAME, markdown, data)


def _logits_difference(outputs, reference: np.ndarray) -> float:
    """Largest difference between the logits in `outputs` (an array or a dict holding `logits`) and `reference`."""
    logits = outputs["logits"] if isinstance(outputs, dict) else outputs
    return float(np.abs(np.asarray(logits) - reference).max())
