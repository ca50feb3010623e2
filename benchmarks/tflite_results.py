"""An SST-2 classifier exported as a SavedModel and as TFLite (float32, dynamic-range int8, float16):
file sizes, accuracy on the 872 SST-2 dev sentences, and latency at batch 1.

The classifier is `--model DIR` (a bert-tf classification directory, e.g. from `bert-tf
finetune`), else the one this script trained before in `--work-dir`, else it trains one
there: BERT L2/H128 from a random start (no pre-trained weights here) on
`--train-examples` SST-2 training sentences for one epoch (`bert_tf.training.finetune`), seq 64.

Accuracy: the raw-text models (SavedModel `serving_default`: bert_tf's exact tokenizer;
TFLite: tensorflow-text's FastBertNormalizer + FastWordpiece) on every dev sentence; the
TFLite ids models on the SavedModel's own token ids (`preprocess`). Latency: one sentence
per call, 32 dev sentences per timed round, contenders interleaved (`benchmarks.harness`);
LiteRT runs with 2 threads, TensorFlow with its defaults (both cores).

    python -m benchmarks.tflite_results                 # trains (minutes) or reuses the model in --work-dir
    python -m benchmarks.tflite_results --model DIR     # an existing classifier directory
    python -m benchmarks.tflite_results --quick --no-write   # smoke mode: 300 examples, 2 rounds
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

NAME = "tflite"
SEQ_LENGTH = 64
LATENCY_SENTENCES = 32
LITERT_THREADS = 2
DEFAULT_WORK_DIR = Path(tempfile.gettempdir()) / "bert_tf_tflite_results"
# Exported variants: (name, kind, inputs, quantization).
VARIANTS = (
    ("SavedModel (text in)", "saved_model", "text", "none"),
    ("TFLite text, float32", "tflite", "text", "none"),
    ("TFLite text, dynamic-range int8", "tflite", "text", "int8"),
    ("TFLite text, float16", "tflite", "text", "float16"),
    ("TFLite ids, float32", "tflite", "ids", "none"),
    ("TFLite ids, dynamic-range int8", "tflite", "ids", "int8"),
    ("TFLite ids, float16", "tflite", "ids", "float16"),
)


def sst2(path: Path) -> tuple[list[str], list[int]]:
    """(sentences, labels) of a GLUE SST-2 TSV file (header `sentence<TAB>label`)."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").split("\n")[1:] if line]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def train_classifier(settings, out_dir: Path, train_examples: int) -> Path:
    """Fine-tunes BERT L2/H128 from a random start on SST-2 (one epoch) into `out_dir`."""
    from bert_tf.training.finetune_config import FinetuneConfig
    from bert_tf.training.finetune import finetune

    config = FinetuneConfig(
        task="classify", train_file=str(settings.data_file("sst2", "train.tsv")),
        dev_file=str(settings.data_file("sst2", "dev.tsv")), init="bert_L2_H128", vocab_file=str(settings.vocab_file),
        lower_case=True, output_dir=str(out_dir), seq_length=SEQ_LENGTH, epochs=1, batch_size=32,
        learning_rate=3e-4, max_train_examples=train_examples, overwrite=True)
    result = finetune(config)
    print(f"Trained on {result.train_examples} examples in {result.train_seconds:.0f} s: dev {result.metrics}")
    return result.output_dir


def directory_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def run(settings, model_dir: Path | None = None, work_dir: Path = DEFAULT_WORK_DIR,
        train_examples: int = 20000):
    """The benchmark (see the module docstring) as a `BenchmarkResult`."""
    import numpy as np
    import tensorflow as tf

    from benchmarks.harness import Contender, interleaved, rate_cell
    from benchmarks.report import BenchmarkResult, markdown_table
    from serving.export.saved_model import export_saved_model
    from serving.export.tflite import export_tflite
    from serving.tflite_runner import TfliteModel

    dev_file = settings.data_file("sst2", "dev.tsv")
    if dev_file is None or settings.data_file("sst2", "train.tsv") is None:
        return BenchmarkResult(NAME, "## TFLite export (skipped: no SST-2 data)", {"skipped": "no sst2 data"})
    sentences, labels = sst2(dev_file)
    labels = np.array(labels)
    trained_here = model_dir is None
    if model_dir is None:
        model_dir = work_dir / ("model-quick" if settings.quick else "model")
        if not (model_dir / "model.keras").is_file():
            train_classifier(settings, model_dir, 300 if settings.quick else train_examples)

    exports = Path(tempfile.mkdtemp(prefix="exports-", dir=work_dir if work_dir.is_dir() else None))
    saved_model_path = export_saved_model(model_dir, exports, "sst2")
    signatures = tf.saved_model.load(str(saved_model_path)).signatures
    ids = {name: value.numpy() for name, value in signatures["preprocess"](text=tf.constant(sentences)).items()}
    models, sizes, accuracy = {}, {}, {}
    for name, kind, inputs, quantization in VARIANTS:
        if kind == "saved_model":
            sizes[name] = directory_bytes(saved_model_path)
            probabilities = signatures["serving_default"](text=tf.constant(sentences))["probabilities"].numpy()
        else:
            path = export_tflite(model_dir, exports / f"{inputs}-{quantization}.tflite", inputs, quantization)
            sizes[name] = path.stat().st_size
            models[name] = TfliteModel(path, num_threads=LITERT_THREADS)
            probabilities = models[name].run({"text": sentences} if inputs == "text" else ids)["probabilities"]
        accuracy[name] = float((probabilities.argmax(axis=1) == labels).mean())

    sample = sentences[:LATENCY_SENTENCES]
    sample_ids = [{name: value[row:row + 1] for name, value in ids.items()} for row in range(len(sample))]

    def one_by_one(name, inputs):
        if name in models:
            return lambda: [models[name].run({"text": [text]}) if inputs == "text" else models[name].run(row)
                            for text, row in zip(sample, sample_ids)]
        return lambda: [signatures["serving_default"](text=tf.constant([text])) for text in sample]

    timings = interleaved([Contender(name, one_by_one(name, inputs), items=len(sample)) for name, _, inputs, _ in
                           VARIANTS], rounds=settings.rounds, max_seconds=settings.max_seconds,
                          description="batch-1 latency")
    float32_text, float32_ids = sizes["TFLite text, float32"], sizes["TFLite ids, float32"]
    rows = []
    for name, kind, inputs, _ in VARIANTS:
        timing = timings[name]
        reference = float32_text if inputs == "text" else float32_ids
        rows.append([name, f"{sizes[name] / 2**20:.2f}", "" if kind == "saved_model" else f"{sizes[name] / reference:.3f}",
                     f"{100 * accuracy[name]:.2f}", f"{1000 / timing.median:.2f}", rate_cell(timing)])
    training = json.loads((model_dir / "bert_tf.json").read_text()).get("training", {})
    source = (f"trained by this script (BERT L2/H128 from a random start, one epoch on "
              f"{training.get('train_examples')} SST-2 sentences, seq {SEQ_LENGTH}, "
              f"{training.get('train_seconds')} s; reused from `--work-dir` when there)"
              if trained_here else f"`{model_dir}`")
    markdown = "\n".join([
        f"## TFLite export: size, SST-2 dev accuracy, batch-1 latency ({datetime.date.today()})",
        "",
        f"Model: {source}. Accuracy on all {len(sentences)} SST-2 dev sentences: text models from raw text, "
        "ids models from the SavedModel's token ids. Latency: one sentence per call, "
        f"{len(sample)} sentences per round, interleaved rounds; median ms per sentence and sentences/s as median "
        f"(quartiles). LiteRT with {LITERT_THREADS} threads.",
        "",
        markdown_table(["export", "MiB", "size / float32", "accuracy %", "ms / sentence", "sentences/s"], rows),
        "",
        f"Dynamic-range int8 vs float32 (text): size ratio {sizes['TFLite text, dynamic-range int8'] / float32_text:.3f}, "
        f"accuracy {100 * (accuracy['TFLite text, dynamic-range int8'] - accuracy['TFLite text, float32']):+.2f} points; "
        f"ids: size ratio {sizes['TFLite ids, dynamic-range int8'] / float32_ids:.3f}, accuracy "
        f"{100 * (accuracy['TFLite ids, dynamic-range int8'] - accuracy['TFLite ids, float32']):+.2f} points. "
        f"The text models also hold the tokenizer's tables ({(float32_text - float32_ids) / 2**20:.2f} MiB here), which "
        "are not quantized. The SavedModel pads each batch to its longest sentence, the TFLite models always to "
        f"seq {SEQ_LENGTH}.",
    ])
    data = {"model_dir": str(model_dir), "sizes_bytes": sizes, "accuracy": accuracy,
            "timings": {name: timing.summary() for name, timing in timings.items()}}
    return BenchmarkResult(NAME, markdown, data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tflite_results", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a bert-tf SST-2 classification directory (default: train one)")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR,
                        help=f"where a trained model is kept and reused, and exports go (default {DEFAULT_WORK_DIR})")
    parser.add_argument("--train-examples", type=int, default=20000, help="SST-2 sentences to train on (default 20000)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 10)")
    parser.add_argument("--quick", action="store_true", help="smoke mode: 300 training examples, 2 rounds")
    parser.add_argument("--no-write", action="store_true", help="print only, do not touch RESULTS.md")
    args = parser.parse_args(argv)
    from benchmarks.machine import machine_info, machine_line
    from benchmarks.report import portable_command, write_result
    from benchmarks.settings import Settings

    command = portable_command(["python", "-m", "benchmarks.tflite_results", *(sys.argv[1:] if argv is None else argv)])

    settings = Settings(quick=args.quick, command=command)
    settings.rounds = args.rounds or settings.rounds
    args.work_dir.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    started = time.perf_counter()
    result = run(settings, args.model, args.work_dir, args.train_examples)
    after = machine_info()
    load = "/".join(f"{x:.1f}" for x in after["load_average"])
    busy = max(machine["load_average"][0], after["load_average"][0]) > machine["usable_cores"]
    result.markdown += (f"\n\nCommand: `{command}` ({(time.perf_counter() - started) / 60:.1f} min; load average at "
                        f"the end {load}).  \nMachine: {machine_line(machine)}")
    if busy:
        result.markdown += ("  \nThe machine was shared and busy (load above its core count): the latencies move "
                            "from run to run; sizes and accuracies do not.")
    result.data.update(command=command, machine=machine)
    print(result.markdown)
    if not args.no_write:
        write_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
