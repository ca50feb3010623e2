"""The benchmark suite: bert_tf against KerasHub and transformers (PyTorch), on this machine, in one run.

    python -m benchmarks.run                      # every benchmark (~15-25 minutes on 2 cores)
    python -m benchmarks.run --only inference     # one of them (repeat --only for several)
    python -m benchmarks.run --quick --output-dir /tmp/bench   # smoke mode: tiny models, seconds

Benchmarks (each a module of this package with `run(settings) -> BenchmarkResult`):
  inference   encoder inference, BERT-base, seq 128, batch 1 and 8; GFLOP/s vs the measured matmul peak
  text        SST-2 dev sentences → predictions, tokenizer included
  training    fine-tuning steps/s (SST-2) and pre-training tokens/s, mini and base
  pipelines   tokenizer tokens/s vs Rust `tokenizers`; pre-training input pipeline vs what training consumes
  memory      peak resident memory of inference and of a training step, one process per contender
  exported    SavedModel and TFLite (float32, int8) latency at batch 1

Every benchmark times its contenders interleaved (A B A B ...) after warm-up and reports medians
with their spread. Results go to benchmarks/RESULTS.md (one delimited section per benchmark,
replaced on each run; other sections of the file are kept) and benchmarks/results/NAME.json
(with the machine, the versions and this exact command), and a "Targets" section sums up the
latest results against the issue's targets. `--quick` writes nothing unless `--output-dir` is given.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import shlex
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Benchmark name → its module in this package.
BENCHMARKS = {
    "inference": "inference",
    "text": "text",
    "training": "training",
    "pipelines": "input_pipelines",
    "memory": "memory",
    "exported": "exported",
}


def free_models() -> None:
    """Drops what a finished benchmark left behind (Keras' global state, PyTorch models), so memory stays bounded."""
    import gc

    import keras

    keras.backend.clear_session()
    gc.collect()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--only", action="append", choices=BENCHMARKS, metavar="NAME",
                        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}")
    parser.add_argument("--quick", action="store_true", help="smoke mode: tiny models, 2 rounds, little data")
    parser.add_argument("--output-dir", type=Path,
                        help="write RESULTS.md and results/*.json here instead of benchmarks/")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--rounds", type=int, help="timed rounds per comparison (default 10)")
    parser.add_argument("--max-seconds", type=float, help="time bound of each comparison's timed rounds (default 90)")
    parser.add_argument("--data-dir", type=Path, help="team data folder (default ../shared/data or $BERT_TF_DATA)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = " ".join(["python -m benchmarks.run", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
    # Imported after parsing, so that --help answers without loading TensorFlow.
    from benchmarks.machine import machine_info, machine_line
    from benchmarks.report import BENCHMARKS_DIR, write_result
    from benchmarks.settings import Settings
    from benchmarks.summary import summarize

    settings = Settings(quick=args.quick, command=command)
    if args.data_dir:
        settings.data_dir = args.data_dir
    settings.rounds = args.rounds or settings.rounds
    settings.max_seconds = args.max_seconds or settings.max_seconds
    out_dir = args.output_dir or BENCHMARKS_DIR
    write = not args.no_write and (args.output_dir is not None or not args.quick)

    names = args.only or list(BENCHMARKS)
    failed = []
    for name in names:
        module = importlib.import_module(f"benchmarks.{BENCHMARKS[name]}")
        machine_before = machine_info()
        started = time.perf_counter()
        print(f"== {name} ==", flush=True)
        try:
            result = module.run(settings)
        except Exception:  # one broken benchmark must not cost the others' results
            traceback.print_exc()
            failed.append(name)
            free_models()
            continue
        elapsed = time.perf_counter() - started
        machine_after = machine_info()
        load = "/".join(f"{x:.1f}" for x in machine_after["load_average"])
        result.markdown += (
            f"\n\nCommand: `{command}` ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"{elapsed / 60:.1f} min; load average at the end {load}).  \n"
            f"Machine: {machine_line(machine_before)}"
        )
        result.data.update(command=command, date_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                           seconds=elapsed, quick=settings.quick, machine=machine_before,
                           load_average_after=machine_after["load_average"])
        print(result.markdown, flush=True)
        if result.data.get("skipped"):
            print(f"({name} skipped: {result.data['skipped']})", flush=True)
        if write:
            write_result(result, out_dir / "RESULTS.md", out_dir / "results")
        free_models()
    if write:
        summary = summarize(out_dir / "results")
        print(summary.markdown, flush=True)
        write_result(summary, out_dir / "RESULTS.md", out_dir / "results")
    if failed:
        print(f"Failed: {', '.join(failed)} (see the tracebacks above).", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
