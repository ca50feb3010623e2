"""The quantized exports served: SST-2 dev through `bert-tf serve`, float32 vs bf16 vs int8.

A BERT-base SST-2 classifier fine-tuned from random weights (tiny in quick mode) is
exported three times (`bert-tf export --quantize none|bf16|int8`: a float32 SavedModel, a
bfloat16 SavedModel, an int8 `model.tflite`) and served by one development server
(`serving.server.model_server.ModelServer`, in a child process, all three models from one model config
file). A gRPC client of this process sends the SST-2 dev sentences as raw text, in batches of 1
and of 32, to each model in turn (interleaved rounds); every answer's label is compared with the
float32 model's answer. Reported: the share of sentences whose served label equals float32's
(the target: ≥ 99%), dev accuracy, and served sentences per second (median of the rounds).

    python -m benchmarks.run --only served_quantized
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.data import sst2
from benchmarks.harness import usable_cores
from benchmarks.report import BenchmarkResult, markdown_table, portable_command
from benchmarks.settings import Settings

NAME = "served_quantized"
WORK_DIR = Path(tempfile.gettempdir()) / "bert_tf_served_quantized"
QUANTIZATIONS = ("none", "bf16", "int8")
BATCH_SIZES = (1, 32)


def run(settings: Settings) -> BenchmarkResult:
    title = "## Quantized exports served by `bert-tf serve`: SST-2 dev, float32 vs bf16 vs int8"
    dev_file = settings.data_file("sst2", "dev.tsv")
    if dev_file is None or not settings.vocab_file.exists():
        message = f"SST-2 dev or the vocabulary not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    texts, labels = sst2(dev_file, 64 if settings.quick else None)
    with tempfile.TemporaryDirectory(prefix="served_quantized_") as scratch:
        model_dir, described = _classifier(settings, Path(scratch))
        base = Path(scratch) / "models"
        from serving.export.saved_model import export_saved_model

        for quantize in QUANTIZATIONS:
            export_saved_model(model_dir, base, quantize, quantize=quantize)
        config_file = _config_file(base, Path(scratch) / "models.config")
        answers, rates = _serve_and_ask(config_file, texts, rounds=1 if settings.quick else 3)
    reference = answers["none"]
    rows, data = [], {"model": described, "sentences": len(texts), "results": {}}
    for quantize in QUANTIZATIONS:
        same = float(np.mean(answers[quantize] == reference))
        accuracy = float(np.mean(answers[quantize] == labels))
        rows.append([quantize if quantize != "none" else "float32", f"{100 * same:.2f}%", f"{100 * accuracy:.2f}",
                     *(f"{rates[quantize][batch]:,.1f} ({rates[quantize][batch] / rates['none'][batch]:.2f}×)"
                       for batch in BATCH_SIZES)])
        data["results"][quantize] = {"same_labels_as_float32": same, "accuracy": accuracy,
                                     "sentences_per_s": {str(batch): rates[quantize][batch] for batch in BATCH_SIZES}}
    markdown = "\n\n".join([
        title,
        f"{described}; {len(texts)} SST-2 dev sentences as raw text over gRPC (127.0.0.1) to one `bert-tf serve` "
        f"process serving the three exports; one client, batches of {' and '.join(map(str, BATCH_SIZES))}, the models "
        f"interleaved, sentences/s the median of the rounds (and its ratio to float32); the server uses "
        f"{usable_cores()} cores.",
        markdown_table(["export (`--quantize`)", "same label as float32", "dev accuracy %",
                        *(f"served sentences/s, batch {batch}" for batch in BATCH_SIZES)], rows),
    ])
    return BenchmarkResult(NAME, markdown, data)


def _classifier(settings: Settings, scratch: Path) -> tuple[Path, str]:
    """(model directory, description): BERT-base (tiny in quick mode) fine-tuned on SST-2 from random weights by
    `bert-tf finetune`, reused from WORK_DIR when it holds one of the same config. This measures serving speed at
    BERT-base's size; the accuracy of the quantized paths on trained weights is `benchmarks.quantized_accuracy`'s."""
    from bert_tf_cli import parse_arguments
    from bert_tf_cli.finetune import config_from_args
    from bert_tf.training.finetune import finetune

    preset, learning_rate, examples = ("tiny", 1e-3, 256) if settings.quick else ("base", 5e-5, 12000)
    out = (scratch / "models" if settings.quick else WORK_DIR) / "sst2"
    flags = ["--task", "classify", "--train", str(settings.data_file("sst2", "train.tsv")), "--init", preset,
             "--vocab", str(settings.vocab_file), "--out", str(out), "--overwrite", "--seq-length", "64",
             "--epochs", "1", "--batch-size", "32", "--learning-rate", str(learning_rate), "--seed", "42",
             "--max-train-examples", str(examples)]
    config = config_from_args(parse_arguments(["finetune", *flags]))
    metadata_file = out / "bert_tf.json"
    if not (metadata_file.is_file() and
            json.loads(metadata_file.read_text())["training"]["config"] == dataclasses.asdict(config)):
        finetune(config, progress=False)
    return out, (f"BERT-{preset} fine-tuned on SST-2 from random weights (`{portable_command(['bert-tf', 'finetune', *flags])}`, "
                 f"seq_length 64)")


def _config_file(base: Path, path: Path) -> Path:
    """A TF Serving model config file serving each export under its quantization's name."""
    models = "".join(f'  config {{ name: "{name}" base_path: "{base / name}" model_platform: "tensorflow" }}\n'
                     for name in QUANTIZATIONS)
    path.write_text(f"model_config_list {{\n{models}}}\n")
    return path


def _serve(config_file: str, ready, stop) -> None:
    """Child process: serves the config file's models until `stop` is set; reports its gRPC port on `ready`."""
    from serving.server.model_server import ModelServer

    with ModelServer(model_config_file=config_file, poll_wait_s=0) as server:
        ready.put(server.grpc_port)
        stop.wait()


def _serve_and_ask(config_file: Path, texts: list[str], rounds: int) -> tuple[dict, dict]:
    """({quantize: labels [n]}, {quantize: {batch: sentences/s}}) from the served models."""
    from serving.client.server_prediction import ServerPredictor

    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(str(config_file), ready, stop), daemon=True)
    server.start()
    try:
        target = f"127.0.0.1:{ready.get(timeout=600)}"
        predictors = {quantize: ServerPredictor(target, quantize) for quantize in QUANTIZATIONS}
        answers, seconds = {}, {quantize: {batch: [] for batch in BATCH_SIZES} for quantize in QUANTIZATIONS}
        for predictor in predictors.values():
            predictor.classify(texts[:2])  # warm-up
        for _ in range(rounds):
            for batch in BATCH_SIZES:
                for quantize, predictor in predictors.items():
                    begin = time.perf_counter()
                    labels = [answer["label"] for start in range(0, len(texts), batch)
                              for answer in predictor.classify(texts[start:start + batch])]
                    seconds[quantize][batch].append(time.perf_counter() - begin)
                    answers[quantize] = np.array([int(label) for label in labels])
        for predictor in predictors.values():
            predictor.close()
    finally:
        stop.set()
        server.join(timeout=60)
    rates = {quantize: {batch: len(texts) / float(np.median(times)) for batch, times in by_batch.items()}
             for quantize, by_batch in seconds.items()}
    return answers, rates
