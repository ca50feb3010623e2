"""Does pre-training help? The same small BERT fine-tuned from random weights and from `bert-tf pretrain`.

Runs `bert-tf finetune` (as a command, timed) on the shared data for each task and each
starting point, and writes the dev scores, the exact commands and the wall times to
benchmarks/RESULTS.md (section `finetune_results`) and benchmarks/results/finetune_results.json:

- SST-2 dev accuracy, MRPC dev accuracy and F1, CoNLL-2003 dev entity F1, and SQuAD v1.1
  exact match / F1 on held-out articles of the shared subset (the last `--squad-dev-articles`
  articles; the others train);
- `random`: the encoder `--config` (a preset name or bert_config.json) with random weights;
  `pretrained`: the encoder of `--pretrained` (e.g. `bert-tf pretrain`'s OUT/model).

Each run's results are kept in WORK/results.json, so runs can be done in several sittings
(the CPU is shared): a later call skips the runs already there (unless --rerun) and writes
the section from everything done so far.

    python -m benchmarks.finetune_results --pretrained /tmp/pretrain_run/model --config bert_L4_H128 \\
        --vocab ../shared/data/vocab/bert-base-uncased-vocab.txt --work /tmp/finetune_results --inits random
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import machine_info, machine_line
from benchmarks.report import BenchmarkResult, markdown_table, run_missing, write_result

DATA = Path(os.environ.get("BERT_TF_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
BERT_TF = str(Path(sys.executable).with_name("bert-tf"))
INITS = ("random", "pretrained")
# Per task: files (relative to the data folder, or made by this script) and fine-tuning options.
TASKS = {
    "sst2": {"task": "classify", "train": "sst2/train.tsv", "dev": "sst2/dev.tsv", "scores": ("accuracy",)},
    "mrpc": {"task": "classify", "train": "mrpc/train.tsv", "dev": "mrpc/dev.tsv", "scores": ("accuracy", "f1")},
    "conll": {"task": "ner", "train": "conll2003/train.txt", "dev": "conll2003/valid.txt", "scores": ("f1",)},
    "squad": {"task": "squad", "train": "squad_train.json", "dev": "squad_dev.json", "scores": ("exact_match", "f1")},
}


def split_squad(source: Path, work: Path, dev_articles: int) -> tuple[Path, Path]:
    """Writes the subset's first articles as a training file and its last `dev_articles` as a dev file."""
    data = json.loads(source.read_text(encoding="utf-8"))
    paths = work / "squad_train.json", work / "squad_dev.json"
    for path, articles in zip(paths, (data["data"][:-dev_articles], data["data"][-dev_articles:])):
        path.write_text(json.dumps({"version": data.get("version", "1.1"), "data": articles}), encoding="utf-8")
    return paths


def finetune_command(name: str, init: str, args, work: Path) -> list[str]:
    spec = TASKS[name]
    data = lambda key: str(work / spec[key]) if name == "squad" else str(DATA / spec[key])  # noqa: E731
    command = [BERT_TF, "finetune", "--task", spec["task"], "--train", data("train"), "--dev", data("dev"),
               "--init", args.pretrained if init == "pretrained" else args.config, "--vocab", args.vocab,
               "--out", str(work / f"{name}_{init}"), "--overwrite", "--epochs", str(args.epochs),
               "--batch-size", str(args.batch_size), "--learning-rate", str(args.learning_rate), "--seed", str(args.seed)]
    if name == "sst2" and args.sst2_examples:
        command += ["--max-train-examples", str(args.sst2_examples)]
    if name == "squad":
        command += ["--seq-length", str(args.squad_seq_length), "--doc-stride", str(args.squad_doc_stride)]
    return command


def run_one(name: str, init: str, args, work: Path) -> dict:
    command = finetune_command(name, init, args, work)
    log = work / f"{name}_{init}.log"
    started = time.perf_counter()
    with open(log, "w") as output:
        completed = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({completed.returncode}); see {log}")
    metadata = json.loads((work / f"{name}_{init}" / "bert_tf.json").read_text())
    return {
        "command": shlex.join(["bert-tf", *command[1:]]),
        "wall_seconds": round(wall, 1),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "scores": {key: metadata["dev_scores"][key] for key in TASKS[name]["scores"]},
        "training": {key: metadata["training"][key] for key in ("train_examples", "train_steps", "epochs_run",
                                                               "best_epoch", "train_seconds")},
    }


def _score(name: str, key: str, value: float) -> str:
    return f"{value:.2f}" if name == "squad" else f"{100 * value:.1f}"


def markdown(results: dict, args, info: dict) -> str:
    rows = []
    for name in TASKS:
        for init in INITS:
            result = results.get(f"{name}/{init}")
            if result is None:
                rows.append([name, init, "not run", "", "", ""])
                continue
            scores = ", ".join(f"{key} {_score(name, key, value)}" for key, value in result["scores"].items())
            training = result["training"]
            rows.append([name, init, scores, f"{training['train_examples']:,} ex, {training['train_steps']} steps, "
                         f"best epoch {training['best_epoch']}", f"{result['wall_seconds'] / 60:.1f}",
                         "/".join(f"{x:.1f}" for x in result["load_average_after"])])
    commands = "\n".join(f"- {key}: `{result['command']}`" for key, result in sorted(results.items()))
    return f"""## Fine-tuning from random weights vs. from `bert-tf pretrain`, vocabulary {Path(args.vocab).name} ({datetime.date.today()})

- Command: `python -m benchmarks.finetune_results {shlex.join(sys.argv[1:])}`
- Machine: {machine_line(info)}
- Encoder: `{args.config}` for `random`; `{args.pretrained}` for `pretrained` (same shape). {args.pretraining_note}
- Fine-tuning (both starts alike): AdamW, peak lr {args.learning_rate}, 10% warm-up then linear decay, batch
  {args.batch_size}, {args.epochs} epochs, length bucketing, the best epoch on dev kept (so the dev scores are
  slightly optimistic for both). SST-2: {args.sst2_examples or 'all'} training sentences; SQuAD: the last
  {args.squad_dev_articles} articles of the shared subset held out as dev, seq length {args.squad_seq_length},
  doc stride {args.squad_doc_stride}.
- Scores on dev: accuracy and F1 in %, CoNLL entity F1 (conlleval) in %, SQuAD exact match / F1 in %.
  Wall time: the whole command (start-up, tokenization, training, dev scoring after each epoch, saving).

{markdown_table(["task", "start", "dev scores", "training", "wall min", "load after"], rows)}

Commands:
{commands}
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pretrained", required=True, help="pre-trained model directory (bert-tf pretrain OUT/model)")
    parser.add_argument("--config", required=True, help="encoder for the random start: preset name or bert_config.json")
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--work", default="/tmp/finetune_results")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--inits", nargs="+", choices=INITS, default=list(INITS))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--sst2-examples", type=int, default=20000, help="SST-2 training subset (0: all 67,349)")
    parser.add_argument("--squad-dev-articles", type=int, default=2)
    # 128: the length `bert-tf pretrain` trains at (position embeddings past it stay untrained).
    parser.add_argument("--squad-seq-length", type=int, default=128)
    parser.add_argument("--squad-doc-stride", type=int, default=64)
    parser.add_argument("--pretraining-note", default="", help="how --pretrained was made (commands, time)")
    parser.add_argument("--rerun", action="store_true", help="run again the runs already in WORK/results.json")
    parser.add_argument("--name", default="finetune_results", help="RESULTS.md section and results/NAME.json")
    args = parser.parse_args(argv)

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    split_squad(DATA / "squad" / "train-v1.1-subset.json", work, args.squad_dev_articles)

    def run(key: str) -> dict:
        name, init = key.split("/")
        print(f"{key}: {shlex.join(finetune_command(name, init, args, work))}", flush=True)
        result = run_one(name, init, args, work)
        print(f"{key}: {result['scores']} in {result['wall_seconds']:.0f} s", flush=True)
        return result

    results = run_missing(work / "results.json", [f"{name}/{init}" for name in args.tasks for init in args.inits],
                          run, args.rerun)
    info = machine_info()
    write_result(BenchmarkResult(args.name, markdown(results, args, info),
                                 {"machine": info, "arguments": vars(args), "results": results}))


if __name__ == "__main__":
    main()
