"""The benchmark suite: bert_tf against KerasHub and transformers (PyTorch), on this machine, in one run.

    python -m benchmarks.run                      # every benchmark (about 1.5 hours on 2 cores)
    python -m benchmarks.run --only inference     # one of them (repeat --only for several)
    python -m benchmarks.run --quick --output-dir /tmp/bench   # smoke mode: tiny models, seconds

Benchmarks (each a module of this package with `run(settings) -> BenchmarkResult`):
  inference   encoder inference, BERT-base, seq 128, batch 1 and 8; GFLOP/s vs the measured matmul peak
  text        SST-2 dev sentences → predictions, tokenizer included
  training    fine-tuning steps/s (SST-2) and pre-training tokens/s, mini and base
  pipelines   tokenizer tokens/s vs Rust `tokenizers`; pre-training input pipeline vs what training consumes
  memory      peak resident memory of inference and of a training step, one process per contender
  techniques  what each of bert_tf's speed techniques gains, swapped one at a time for the usual way
  cpu_serving the fastest way to serve BERT-base on a CPU: bert_tf's paths vs ONNX Runtime and OpenVINO (float32, bf16, int8)
  quantized_accuracy  SST-2 and CoNLL-2003 dev scores of the bf16 and int8 serving paths against float32
  served_quantized    the bf16 and int8 exports served by `bert-tf serve`: SST-2 dev labels and sentences/s
  int8_matmul one BERT-base dense product by every int8 and bfloat16 route (TensorFlow, LiteRT, ONNX Runtime)
  full_integer_int8  a fully integer int8 export (calibrated activations) against dynamic-range int8: SST-2, speed, kernels
  quality     fine-tuning from the trained BERT-Mini, bert-tf against transformers, 5 tasks x 3 seeds (~2 hours)
  distillation  students of the quality benchmark's teachers: dev score against float32/int8 speed (~1 hour)
  vocab       learning a WordPiece vocabulary from two books: bert-tf vs KerasHub and tensorflow-text
  embedding_quality  sentence embeddings from the trained BERT-Mini, bert-tf against sentence-transformers (~1.5 hours)
  embedding_speed    text → vector, BERT-base: bert-tf against sentence-transformers and ONNX Runtime; served; search
  search_quality     SciFact dev claims: BM25, all-MiniLM-L6-v2 installed and fine-tuned on mined hard negatives (bert-tf
                     against sentence-transformers), BERT-Mini, hybrids with BM25 (hours)
  served_fusion      hybrid search as the index serves it (each side's top 100, rrf and weighted) on search_quality's split
  search_speed       hybrid search served: the index of BM25 + all-MiniLM-L6-v2 at 5k, 100k and 1M documents, 16 clients
  rerank_quality     the served hybrid's top 100 reranked by cross-encoders from all-MiniLM-L6-v2 and BERT-Mini (bert-tf
                     against sentence-transformers' CrossEncoder), search_quality's split (hours)
  rerank_speed       a query and its 100 candidates reranked per call (all-MiniLM-L6-v2's shape): bert-tf float32 and int8
                     against sentence-transformers' CrossEncoder and ONNX Runtime; the chained index served, 16 clients
  replicas    fine-tuning on 2 replicas (2 logical CPUs) against one device: steps/s, the same loss and weights
  one_text_race  the real-sentence race on this CPU: each precision's exports against its fastest peer, 1 and 32 per call

Each benchmark runs in its own process (a fresh memory) and times its contenders interleaved
(A B A B ...) after warm-up and reports medians with their spread. Results go to benchmarks/RESULTS.md (one delimited section per benchmark,
replaced on each run; other sections of the file are kept) and benchmarks/results/NAME.json
(with the machine, the versions and this exact command), and a "Targets" section sums up the
latest results against the issue's targets. `--quick` writes nothing unless `--output-dir` is given.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import subprocess
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
    "techniques": "techniques",
    "cpu_serving": "cpu_serving",
    "quantized_accuracy": "quantized_accuracy",
    "served_quantized": "served_quantized",
    "int8_matmul": "int8_matmul",
    "full_integer_int8": "full_integer_int8",
    "quality": "quality",
    "distillation": "distillation",
    "vocab": "vocab_learning",
    "embedding_quality": "embedding_quality",
    "embedding_speed": "embedding_speed",
    "search_quality": "search_quality",
    "served_fusion": "served_fusion",
    "search_speed": "search_speed",
    "rerank_quality": "rerank_quality",
    "rerank_speed": "rerank_speed",
    "replicas": "replicas",
    "one_text_race": "one_text_race",
}


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
    parser.add_argument("--suite-command", help=argparse.SUPPRESS)  # set for the per-benchmark processes of a suite run
    return parser.parse_args(argv)


def run_in_subprocesses(names: list[str], argv: list[str], command: str) -> list[str]:
    """Runs each benchmark as `python -m benchmarks.run --only NAME ...` in a fresh process; the names that failed.

    TensorFlow keeps most of the memory of the models a process has built, so six benchmarks'
    worth of BERT-base models in one process would not fit in the RAM of a small machine.
    """
    others = [arg for index, arg in enumerate(argv)
              if arg != "--only" and not arg.startswith("--only=") and (index == 0 or argv[index - 1] != "--only")]
    failed = []
    for name in names:
        child = [sys.executable, "-m", "benchmarks.run", "--only", name, *others, "--suite-command", command]
        if subprocess.run(child, check=False).returncode != 0:
            failed.append(name)
    return failed


def run_benchmark(name: str, settings, suite_command: str | None, write: bool, out_dir: Path) -> bool:
    """Runs one benchmark in this process, prints and writes its section and JSON; False if it failed."""
    from benchmarks.machine import machine_info, machine_line
    from benchmarks.report import write_result

    module = importlib.import_module(f"benchmarks.{BENCHMARKS[name]}")
    machine_before = machine_info()
    started = time.perf_counter()
    print(f"== {name} ==", flush=True)
    try:
        result = module.run(settings)
    except Exception:  # reported, and the suite goes on with the next benchmark
        traceback.print_exc()
        return False
    elapsed = time.perf_counter() - started
    machine_after = machine_info()
    load = "/".join(f"{x:.1f}" for x in machine_after["load_average"])
    command = f"`{suite_command}` (this part: `{settings.command}`)" if suite_command else f"`{settings.command}`"
    result.markdown += (
        f"\n\nCommand: {command} ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{elapsed / 60:.1f} min; load average at the end {load}).  \n"
        f"Machine: {machine_line(machine_before)}"
    )
    result.data.update(command=suite_command or settings.command, part_command=settings.command,
                       date_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(), seconds=elapsed,
                       quick=settings.quick, machine=machine_before, load_average_after=machine_after["load_average"])
    print(result.markdown, flush=True)
    if result.data.get("skipped"):
        print(f"({name} skipped: {result.data['skipped']})", flush=True)
    if write:
        write_result(result, out_dir / "RESULTS.md", out_dir / "results")
    return True


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    arguments = sys.argv[1:] if argv is None else list(argv)
    if args.suite_command:  # a part of a suite run: its own command, without the suite's
        arguments = arguments[:arguments.index("--suite-command")]
    # Imported after parsing, so that --help answers without loading TensorFlow.
    from benchmarks import avx2_only
    from benchmarks.report import BENCHMARKS_DIR, portable_command, write_result
    from benchmarks.settings import Settings
    from benchmarks.summary import summarize

    wrapper = ["python", "-m", "benchmarks.avx2_only"] if os.environ.get(avx2_only.MASK_VARIABLE) else []
    command = portable_command([*wrapper, "python", "-m", "benchmarks.run", *arguments])

    settings = Settings(quick=args.quick, command=command)
    if args.data_dir:
        settings.data_dir = args.data_dir
    settings.rounds = args.rounds or settings.rounds
    settings.max_seconds = args.max_seconds or settings.max_seconds
    out_dir = args.output_dir or BENCHMARKS_DIR
    write = not args.no_write and (args.output_dir is not None or not args.quick)

    names = args.only or list(BENCHMARKS)
    if len(names) > 1:
        failed = run_in_subprocesses(names, arguments, command)
    else:
        failed = [] if run_benchmark(names[0], settings, args.suite_command, write, out_dir) else names
    if write and not args.suite_command:
        summary = summarize(out_dir / "results")
        print(summary.markdown, flush=True)
        write_result(summary, out_dir / "RESULTS.md", out_dir / "results")
    if failed:
        print(f"Failed: {', '.join(failed)} (see the tracebacks above).", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
