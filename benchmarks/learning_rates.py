"""Which learning rate works for which size and start? Classifiers fine-tuned at several rates.

For each start (default: the presets tiny, mini and base from random weights; with `--init`, a
trained checkpoint) and each peak learning rate (default 5e-5, the `FinetuneConfig` default,
1e-4 and 3e-4), fine-tunes on a seeded subset of a classification training file (default
SST-2; any GLUE file, pairs too) with `bert_tf.training.finetune.finetune`, scores the full dev set and
records: dev accuracy, the share of the dev examples given the most predicted class (1.0:
training collapsed to one class), whether `finetune` logged its collapse warning, and the
seconds taken. Writes benchmarks/RESULTS.md (section `--name`, default `learning_rates`) and
benchmarks/results/NAME.json.

Each run's result is kept in WORK/results.json under `preset/rate`, so the grid can be run in
several sittings: a later call skips the runs already there (unless --rerun) and writes the
section from all of them. Without the SST-2 files, it says so and exits without running.

    python -m benchmarks.learning_rates --presets tiny mini --rates 5e-5 1e-4 3e-4
    python -m benchmarks.learning_rates --init ../shared/data/pretrained/bert-mini-uncased-books \
        --rates 3e-5 5e-5 1e-4 2e-4 5e-4 --name learning_rates_trained_sst2
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

import bert_tf
from benchmarks.machine import machine_info, machine_line
from benchmarks.report import RESULTS_MD, BenchmarkResult, markdown_table, portable_command, run_missing, write_result
from bert_tf.tasks.registry import task_from_directory
from bert_tf.training import finetune as finetune_module
from bert_tf.training.finetune import FinetuneConfig, finetune

DATA = Path(os.environ.get("BERT_TF_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
PRESETS = ("tiny", "mini", "base")
RATES = (FinetuneConfig.learning_rate, 1e-4, 3e-4)  # the default first
COLLAPSE_MESSAGE = "training collapsed to one class"
TRAINED = "trained"  # the start of the runs from `--init`


class _Records(logging.Handler):
    """Keeps the messages logged while it is attached."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def dev_shares(model_dir: Path, data_file: str, batch_size: int) -> tuple[dict[str, float], float, int]:
    """`(predicted, majority_label, examples)`: the share of `data_file`'s examples the fine-tuned model gives each
    label (most predicted first), the share of its most common true label, and how many examples it has."""
    directory = bert_tf.load_model_directory(model_dir)
    task = task_from_directory(directory)
    data = task.prepare(task.read(data_file), training=False)
    predicted = np.stack(task.outputs(directory.model, data, batch_size)).argmax(axis=1)
    counts = np.bincount(predicted, minlength=len(task.label_names))
    shares = {task.label_names[index]: float(counts[index] / counts.sum()) for index in np.argsort(-counts)}
    return shares, float(np.bincount(data.labels).max() / len(data.labels)), len(data.labels)


def run_one(start: str, rate: float, args, work: Path) -> dict:
    """Fine-tunes from `start` (a preset's random weights, or the `--init` checkpoint) at peak rate `rate` and
    scores it on dev."""
    trained = start == TRAINED
    config = FinetuneConfig(task="classify", train_file=args.train, dev_file=args.dev,
                            init=args.init if trained else start, vocab_file=None if trained else args.vocab,
                            output_dir=str(work / f"{start}_{rate:g}"), overwrite=True,
                            seq_length=args.seq_length, batch_size=args.batch_size, epochs=args.epochs,
                            learning_rate=rate, seed=args.seed, max_train_examples=args.examples)
    records = _Records()
    finetune_module.logger.addHandler(records)
    started = time.perf_counter()
    try:
        result = finetune(config, progress=False)
    finally:
        finetune_module.logger.removeHandler(records)
    seconds = time.perf_counter() - started
    shares, majority_label_share, dev_examples = dev_shares(result.output_dir, args.dev, args.batch_size)
    return {
        "command": portable_command(["python", "-m", "benchmarks.learning_rates", *args.argv]),
        "preset": start,
        "learning_rate": rate,
        "dev_accuracy": result.metrics["accuracy"],
        "majority_share": max(shares.values()),
        "predicted_shares": shares,
        "dev_examples": dev_examples,
        "dev_majority_label_share": majority_label_share,
        "collapse_warning": any(COLLAPSE_MESSAGE in message for message in records.messages),
        "warnings": records.messages,
        "seconds": round(seconds, 1),
        "train_seconds": round(result.train_seconds, 1),
        "best_epoch": result.best_epoch,
        "train_examples": result.train_examples,
        "train_steps": result.train_steps,
        "epochs": args.epochs,
        "seq_length": args.seq_length,
        "batch_size": args.batch_size,
        "seed": args.seed,
    }


def _ordered(results: dict) -> list[dict]:
    return sorted(results.values(), key=lambda run: (PRESETS.index(run["preset"]) if run["preset"] in PRESETS
                                                      else len(PRESETS), run["preset"], run["learning_rate"]))


def reading(runs: list[dict]) -> str:
    """What the runs show: the best rate per preset, which runs collapsed, and whether the warning matched them."""
    lines = []
    for preset in dict.fromkeys(run["preset"] for run in runs):
        own = [run for run in runs if run["preset"] == preset]
        best = max(own, key=lambda run: run["dev_accuracy"])
        collapsed = [f"{run['learning_rate']:g}" for run in own if run["majority_share"] == 1.0]
        lines.append(f"- {preset}: best dev accuracy {100 * best['dev_accuracy']:.1f}% at {best['learning_rate']:g}; "
                     + (f"collapsed to one class at {', '.join(collapsed)}." if collapsed else "no collapse."))
    collapsed = {(run["preset"], run["learning_rate"]) for run in runs if run["majority_share"] == 1.0}
    warned = {(run["preset"], run["learning_rate"]) for run in runs if run["collapse_warning"]}
    verdict = "exactly on the collapsed runs" if collapsed == warned else (
        f"on {sorted(warned)}, but the collapsed runs are {sorted(collapsed)}")
    lines.append(f"- The collapse warning fired {verdict}.")
    return "\n".join(lines)


def markdown(results: dict, args, info: dict) -> str:
    runs = _ordered(results)
    default = FinetuneConfig.learning_rate
    rows = [[run["preset"], f"{run['learning_rate']:g}" + (" (default)" if run["learning_rate"] == default else ""),
             f"{100 * run['dev_accuracy']:.1f}", f"{100 * run['majority_share']:.1f}",
             "yes" if run["collapse_warning"] else "no",
             f"{run['train_examples']:,} ex, {run['epochs']} ep, {run['train_steps']} steps, best epoch "
             f"{run['best_epoch']}", f"{run['seconds']:.0f}"] for run in runs]
    data_name = Path(args.train).parent.name
    start = f"from {Path(args.init).name}" if args.init else "from random weights"
    return f"""## Learning rates {'for a trained start' if args.init else 'by model size'}: {data_name} {start} ({datetime.date.today()})

- Commands: {", ".join(f"`{command}`" for command in dict.fromkeys(run["command"] for run in runs))}
- Machine: {machine_line(info)}
- Each run: `finetune(FinetuneConfig(task="classify", init=..., ...))` {'from the trained checkpoint ' + str(args.init) + ' (its vocabulary)' if args.init else 'from random weights of the preset, vocabulary ' + Path(args.vocab).name},
  a seeded subset of {args.examples} of {data_name}'s training examples (seed {args.seed}), {args.epochs} epochs, seq length
  {args.seq_length}, batch {args.batch_size}, AdamW with 10% warm-up then linear decay to 0 from the peak rate,
  the best epoch on dev kept; scored on the whole dev file ({runs[0]['dev_examples']} sentences; always answering
  the most common label scores {100 * runs[0]['dev_majority_label_share']:.1f}%).
- Majority share: the share of dev sentences given the most predicted label (100%: collapsed to one class).
  Warning: whether `finetune` logged "{COLLAPSE_MESSAGE}". Seconds: the whole `finetune` call.

{markdown_table(["preset", "peak lr", "dev acc %", "majority share %", "warning", "training", "seconds"], rows)}

{reading(runs)}
{args.note}
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=bert_tf.BertConfig.preset_names(),
                        help="random starts of these sizes")
    parser.add_argument("--init", help="a trained checkpoint: the one start of the runs (instead of --presets)")
    parser.add_argument("--rates", nargs="+", type=float, default=list(RATES), help="peak learning rates")
    parser.add_argument("--train", default=str(DATA / "sst2" / "train.tsv"))
    parser.add_argument("--dev", default=str(DATA / "sst2" / "dev.tsv"))
    parser.add_argument("--vocab", default=str(DATA / "vocab" / "bert-base-uncased-vocab.txt"))
    parser.add_argument("--examples", type=int, default=2000,
                        help="seeded subset of the training file (2,000: the default grid in ~25 min on 2 cores)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--work", default="/tmp/learning_rates", help="fine-tuned models and WORK/results.json")
    parser.add_argument("--rerun", action="store_true", help="run again the runs already in WORK/results.json")
    parser.add_argument("--note", default="", help="a closing remark for the section (how the grid was split, ...)")
    parser.add_argument("--results", default=str(RESULTS_MD), help="RESULTS.md to write (JSON: results/ beside it)")
    parser.add_argument("--name", default="learning_rates", help="its RESULTS.md section and results/NAME.json")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)

    missing = [path for path in (args.train, args.dev, args.vocab) if not Path(path).is_file()]
    if missing:
        print(f"learning_rates: skipped, no {', '.join(missing)} (set BERT_TF_DATA or pass --train/--dev/--vocab).")
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    def run(key: str) -> dict:
        preset, rate = key.split("/")
        result = run_one(preset, float(rate), args, work)
        print(f"{key}: dev accuracy {result['dev_accuracy']:.3f}, majority share {result['majority_share']:.3f}, "
              f"warning {result['collapse_warning']}, {result['seconds']:.0f} s", flush=True)
        return result

    starts = [TRAINED] if args.init else args.presets
    keys = [f"{start}/{rate:g}" for start in starts for rate in args.rates]
    results = run_missing(work / "results.json", keys, run, args.rerun)
    info = machine_info()
    results_md = Path(args.results)
    write_result(BenchmarkResult(args.name, markdown(results, args, info),
                                 {"machine": info, "arguments": vars(args), "results": results}),
                 results_md, results_md.parent / "results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
