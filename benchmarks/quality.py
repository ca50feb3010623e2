"""Fine-tuning quality from the team's trained BERT-Mini: bert-tf against transformers, the same recipe, three seeds.

    python -m benchmarks.run --only quality            # about 2 hours on 2 cores; a stopped run goes on where it stopped
    python -m benchmarks.run --only quality --quick    # smoke mode: one seed, two tasks, a few dozen examples

For SST-2, MRPC, RTE, CoNLL-2003 and SQuAD v1.1 (the shared subset: its last two articles are dev, the others
train), each seed runs three contenders from `../shared/data/pretrained/bert-mini-uncased-books`:
- `bert_tf`: `bert-tf finetune` as a command, with the task's flags (`TASKS`, `COMMON_FLAGS`);
- `transformers`: `benchmarks.torch_reference` with the `FinetuneConfig` the same flags make (parsed by the
  CLI's own parser): the same batches in the same order, the same recipe, its own dev pipeline;
- `bert_tf_random`: the `bert-tf finetune` command with `--init` the checkpoint's config.json (random weights),
  to show what the checkpoint buys.
Each score is the last epoch's on dev (`--last-epoch`: no epoch is chosen on dev), computed as the official
scripts do. The rule per task: |mean(bert_tf) - mean(transformers)| <= max(1 point, 2 x the larger std).

Every finished run is kept in WORK_DIR/results.json with its command, so the benchmark resumes; a run whose
command changed is run again. Quick mode works in a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import BenchmarkResult, markdown_table, portable_command
from benchmarks.seed_rule import RULE_POINTS, mean_std, rule
from benchmarks.settings import Settings

NAME = "quality"
CHECKPOINT = ("pretrained", "bert-mini-uncased-books")
WORK_DIR = Path(tempfile.gettempdir()) / "bert_tf_quality"
SEEDS = (1, 2, 3)
CONTENDERS = ("bert_tf", "transformers", "bert_tf_random")
# The recipe every task shares; the task adds its own sequence length, epochs and data (`QualityTask.flags`).
COMMON_FLAGS = ("--batch-size", "32", "--learning-rate", "1e-4", "--warmup-proportion", "0.1", "--last-epoch")
SQUAD_DEV_ARTICLES = 2
QUICK_EXAMPLES = 48  # training examples and dev examples of quick mode


@dataclasses.dataclass(frozen=True)
class QualityTask:
    name: str
    title: str
    task: str  # `bert-tf finetune --task`
    train: tuple[str, ...]  # under the team data folder (SQuAD: made in the work folder)
    dev: tuple[str, ...]
    metrics: tuple[str, ...]  # scores reported, in %; the first is the rule's
    flags: tuple[str, ...]  # this task's `bert-tf finetune` flags


TASKS = (
    QualityTask("sst2", "SST-2", "classify", ("sst2", "train.tsv"), ("sst2", "dev.tsv"), ("accuracy",),
                ("--seq-length", "64", "--epochs", "2", "--max-train-examples", "20000")),
    QualityTask("mrpc", "MRPC", "classify", ("mrpc", "train.tsv"), ("mrpc", "dev.tsv"), ("f1", "accuracy"),
                ("--seq-length", "128", "--epochs", "3")),
    QualityTask("rte", "RTE", "classify", ("rte", "train.tsv"), ("rte", "dev.tsv"), ("accuracy",),
                ("--seq-length", "128", "--epochs", "3")),
    QualityTask("conll", "CoNLL-2003", "ner", ("conll2003", "train.txt"), ("conll2003", "valid.txt"), ("f1",),
                ("--seq-length", "128", "--epochs", "3")),
    # 128 tokens: the length the checkpoint was pre-trained at (its later position embeddings never trained).
    QualityTask("squad", "SQuAD v1.1", "squad", ("squad_train.json",), ("squad_dev.json",), ("f1", "exact_match"),
                ("--seq-length", "128", "--doc-stride", "64", "--epochs", "2")),
)
QUICK_TASKS = ("mrpc", "conll")


def bert_tf_model(task: QualityTask, settings: Settings, work: Path) -> tuple[Path, dict]:
    """The seed-1 `bert_tf` model of `task` (fine-tuned now unless `work` holds it with the same config), and its
    record: the command and the training summary. For the benchmarks that measure what comes after fine-tuning."""
    from bert_tf_cli import parse_arguments
    from bert_tf_cli.finetune import config_from_args
    from bert_tf.training.finetune import finetune

    flags = finetune_flags(task, "bert_tf", SEEDS[0], settings, work)
    config = config_from_args(parse_arguments(["finetune", *flags]))
    model_dir = Path(config.output_dir)
    metadata_file = model_dir / "bert_tf.json"
    reused = metadata_file.is_file() and _same_config(json.loads(metadata_file.read_text())["training"]["config"],
                                                      config)
    command = finetune_command(flags)
    print(f"{task.name}: {'reusing the model of' if reused else 'running'} `{command}`", flush=True)
    if not reused:
        finetune(config, progress=False)
    training = json.loads(metadata_file.read_text())["training"]
    return model_dir, {"command": command, "trained_now": not reused,
                       **{key: training[key] for key in ("train_examples", "train_steps", "train_seconds")}}


def _same_config(saved: dict, config) -> bool:
    """Whether a saved FinetuneConfig (as JSON) is `config`; fields added since it was saved must hold their defaults."""
    current = json.loads(json.dumps(dataclasses.asdict(config)))
    defaults = json.loads(json.dumps({field.name: field.default for field in dataclasses.fields(config)
                                      if field.default is not dataclasses.MISSING}))
    return all(saved[name] == value if name in saved else defaults.get(name) == value
               for name, value in current.items())


def split_squad(source: Path, work: Path, dev_articles: int) -> None:
    """Writes the subset's last `dev_articles` articles as squad_dev.json and the others as squad_train.json."""
    data = json.loads(source.read_text(encoding="utf-8"))
    for name, articles in (("squad_train.json", data["data"][:-dev_articles]),
                           ("squad_dev.json", data["data"][-dev_articles:])):
        (work / name).write_text(json.dumps({"version": data.get("version", "1.1"), "data": articles}),
                                 encoding="utf-8")


def first_examples(source: Path, out: Path, count: int) -> Path:
    """The first `count` examples of a TSV file (after its header) or a CoNLL file (sentences), for quick mode."""
    text = source.read_text(encoding="utf-8-sig")
    if source.suffix == ".tsv":
        kept = "\n".join(text.split("\n")[:count + 1])
    else:
        sentences = [block for block in text.split("\n\n") if block.strip() and "-DOCSTART-" not in block]
        kept = "\n\n".join(sentences[:count])
    out.write_text(kept + "\n", encoding="utf-8")
    return out


def data_files(task: QualityTask, settings: Settings, work: Path) -> tuple[Path, Path]:
    if task.task == "squad":
        return work / task.train[0], work / task.dev[0]
    train, dev = settings.data_file(*task.train), settings.data_file(*task.dev)
    if settings.quick:
        dev = first_examples(dev, work / f"{task.name}_dev{dev.suffix}", QUICK_EXAMPLES)
    return train, dev


def finetune_flags(task: QualityTask, contender: str, seed: int, settings: Settings, work: Path) -> list[str]:
    checkpoint = settings.data_file(*CHECKPOINT)
    train, dev = data_files(task, settings, work)
    init = ["--init", str(checkpoint / "config.json"), "--vocab", str(checkpoint / "vocab.txt")] \
        if contender == "bert_tf_random" else ["--init", str(checkpoint)]
    flags = ["--task", task.task, "--train", str(train), "--dev", str(dev), *init,
             "--out", str(work / "models" / f"{task.name}_{contender}_{seed}"), "--overwrite", "--seed", str(seed),
             *COMMON_FLAGS, *task.flags]
    if settings.quick:
        if "--max-train-examples" in flags:
            flags[flags.index("--max-train-examples") + 1] = str(QUICK_EXAMPLES)
        else:
            flags += ["--max-train-examples", str(QUICK_EXAMPLES)]
        flags[flags.index("--epochs") + 1] = "1"
    return flags


def finetune_command(flags: list[str]) -> str:
    """The `bert-tf finetune` command of `flags`, as RESULTS.md records it (`portable_command`)."""
    return portable_command(["bert-tf", "finetune", *flags])


def run_bert_tf(flags: list[str], log: Path) -> dict:
    """`bert-tf finetune` as a command; its dev scores and training record from the model directory it wrote."""
    command = [str(Path(sys.executable).with_name("bert-tf")), "finetune", *flags]
    with open(log, "w") as output:
        completed = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT)
    if completed.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({completed.returncode}); see {log}")
    metadata = json.loads((Path(flags[flags.index("--out") + 1]) / "bert_tf.json").read_text(encoding="utf-8"))
    training = metadata["training"]
    return {"scores": numbers(metadata["dev_scores"]), "epoch_losses": training["history"]["loss"],
            **{key: training[key] for key in ("train_examples", "train_steps", "train_seconds")}}


def run_transformers(flags: list[str], log: Path) -> dict:
    """`benchmarks.torch_reference` on the FinetuneConfig that `bert-tf finetune FLAGS` runs."""
    from bert_tf_cli import parse_arguments
    from bert_tf_cli.finetune import config_from_args

    config = config_from_args(parse_arguments(["finetune", *flags]))
    config_file, out = log.with_suffix(".config.json"), log.with_suffix(".json")
    config_file.write_text(json.dumps(dataclasses.asdict(config), indent=2), encoding="utf-8")
    command = [sys.executable, "-m", "benchmarks.torch_reference", "--config", str(config_file), "--out", str(out)]
    with open(log, "w") as output:
        completed = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT)
    if completed.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({completed.returncode}); see {log}")
    result = json.loads(out.read_text(encoding="utf-8"))
    result.pop("config")
    return {**result, "scores": numbers(result["scores"])}


def numbers(scores: dict) -> dict:
    return {name: value for name, value in scores.items() if isinstance(value, (int, float))}


def run_one(task: QualityTask, contender: str, seed: int, settings: Settings, work: Path) -> dict:
    flags = finetune_flags(task, contender, seed, settings, work)
    log = work / "logs" / f"{task.name}_{contender}_{seed}.log"
    started = time.perf_counter()
    result = (run_transformers if contender == "transformers" else run_bert_tf)(flags, log)
    command = finetune_command(flags)
    if contender == "transformers":
        command = f"python -m benchmarks.torch_reference with the FinetuneConfig of `{command}`"
    return {**result, "flags": flags, "command": command, "wall_seconds": round(time.perf_counter() - started, 1)}


def points(task: QualityTask, metric: str, value: float) -> float:
    """A score in points (%): SQuAD's are already."""
    return value if task.task == "squad" else 100 * value


def summary(task: QualityTask, results: dict, metric: str) -> dict:
    """Per contender: the scores of the seeds run (points), their mean and standard deviation."""
    out = {}
    for contender in CONTENDERS:
        values = [points(task, metric, results[key]["scores"][metric])
                  for key in (f"{task.name}/{contender}/{seed}" for seed in SEEDS) if key in results]
        if values:
            out[contender] = mean_std(values)
    if "bert_tf" in out and "transformers" in out:
        ours, theirs = out["bert_tf"], out["transformers"]
        out["rule"] = {**rule(ours, theirs), "seeds": min(len(ours["values"]), len(theirs["values"]))}
    return out


def run(settings: Settings) -> BenchmarkResult:
    title = "## Fine-tuning quality from a trained checkpoint: bert-tf against transformers, the same recipe"
    needed = [CHECKPOINT, ("squad", "train-v1.1-subset.json")] + [part for task in TASKS for part in (task.train, task.dev)
                                                                 if task.task != "squad"]
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in needed if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory(prefix="quality-") as scratch:
        work = Path(scratch) if settings.quick else WORK_DIR
        results = run_all(settings, work)
    tasks = [task for task in TASKS if not settings.quick or task.name in QUICK_TASKS]
    summaries = {task.name: {metric: summary(task, results, metric) for metric in task.metrics} for task in tasks}
    return BenchmarkResult(NAME, markdown(title, tasks, results, summaries, settings),
                           {"results": results, "summaries": summaries, "common_flags": COMMON_FLAGS})


def run_all(settings: Settings, work: Path) -> dict:
    """Every (task, contender, seed) run; those in `work/results.json` with the same flags are reused."""
    for folder in (work, work / "logs", work / "models"):
        folder.mkdir(parents=True, exist_ok=True)
    split_squad(settings.data_file("squad", "train-v1.1-subset.json"), work, SQUAD_DEV_ARTICLES)
    results_file = work / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    seeds = SEEDS[:1] if settings.quick else SEEDS
    tasks = [task for task in TASKS if not settings.quick or task.name in QUICK_TASKS]
    for task in tasks:
        for seed in seeds:
            for contender in CONTENDERS:
                key = f"{task.name}/{contender}/{seed}"
                if key in results and results[key]["flags"] == finetune_flags(task, contender, seed, settings, work):
                    continue
                print(f"{key}: running", flush=True)
                results[key] = run_one(task, contender, seed, settings, work)
                scores = ", ".join(f"{metric} {points(task, metric, results[key]['scores'][metric]):.2f}"
                                   for metric in task.metrics)
                print(f"{key}: {scores} ({results[key]['wall_seconds']:.0f} s)", flush=True)
                results_file.write_text(json.dumps(results, indent=2) + "\n")
    return results


def _mean_std(entry: dict | None) -> str:
    if entry is None:
        return "not run"
    return f"{entry['mean']:.2f} ± {entry['std']:.2f} ({len(entry['values'])})"


def markdown(title: str, tasks, results: dict, summaries: dict, settings: Settings) -> str:
    rows = []
    for task in tasks:
        for metric in task.metrics:
            entry = summaries[task.name][metric]
            rule = entry.get("rule")
            rows.append([task.title, metric, _mean_std(entry.get("bert_tf")), _mean_std(entry.get("transformers")),
                         f"{rule['difference']:+.2f}" if rule else "", f"{rule['bound']:.2f}" if rule else "",
                         ("holds" if rule["holds"] else "**MISS**") if rule else "",
                         _mean_std(entry.get("bert_tf_random"))])
    detail = []
    for key, result in results.items():
        name, contender, seed = key.split("/")
        task = next((task for task in tasks if task.name == name), None)
        if task is None:
            continue
        scores = ", ".join(f"{metric} {points(task, metric, result['scores'][metric]):.2f}" for metric in task.metrics)
        agreement = ""
        if "scores_through_bert_tf" in result:
            agreement = ", ".join(f"{points(task, metric, result['scores_through_bert_tf'][metric]):.2f}"
                                  for metric in task.metrics)
        detail.append([task.title, seed, contender, scores, agreement,
                       " / ".join(f"{loss:.3f}" for loss in result["epoch_losses"]),
                       f"{result['train_steps']}", f"{result['train_seconds']:.0f}", f"{result['wall_seconds']:.0f}"])
    commands = "\n".join(f"- {key}: {finetune_command(result['flags'])}" for key, result in sorted(results.items())
                         if key.endswith("/1") and not key.split("/")[1] == "transformers")
    quick = "\n\n**Quick mode: one seed, a few dozen examples: the code runs, the figures mean nothing.**" \
        if settings.quick else ""
    return f"""{title}{quick}

From `../shared/data/pretrained/bert-mini-uncased-books` (BERT-Mini, L4/H256, pre-trained on the team's books and
task texts): **bert_tf** = `bert-tf finetune`; **transformers** = `benchmarks.torch_reference`, which trains
transformers' `BertFor*` models with PyTorch on the batches `bert-tf finetune` trains on (same examples, order and
padding; `bert_tf.training.finetune.training_data`), with the same recipe (AdamW β 0.9/0.999, ε 1e-6, weight decay 0.01
except biases and LayerNorm weights, warm-up over the first 10% of the steps then linear decay, clipping at global
norm 1, dropout 0.1 in the encoder and before the head) and scores dev through its own pipeline (the Rust
`tokenizers` WordPiece tokenizer, first-piece word tags, google-research/bert's SQuAD windows and n-best decoding on
character offsets); **bert_tf_random** = `bert-tf finetune` with `--init` the checkpoint's config.json (random
weights, same settings). Shared flags: `{' '.join(COMMON_FLAGS)}`; per task below. Scores are the last epoch's
(no epoch chosen on dev), in %: GLUE accuracy and F1 (of class 1), CoNLL entity F1 (conlleval), SQuAD v1.1 F1 and
exact match (evaluate-v1.1) on the subset's last {SQUAD_DEV_ARTICLES} articles (the other 9 train). SST-2 trains on
a seeded 20,000 of its 67,349 sentences (the whole table fits in about 2 hours on 2 cores). Seeds {', '.join(map(str, SEEDS))}:
the seed sets the head's initial values, dropout and the data order (the same order for both frameworks).

Rule: |mean(bert_tf) − mean(transformers)| ≤ max({RULE_POINTS:.0f} point, 2 × the larger std).

{markdown_table(["task", "score", "bert_tf mean ± std (seeds)", "transformers", "difference", "bound", "rule",
                 "bert_tf from random weights"], rows)}

Each run (scores in %; "same model, bert-tf's pipeline": the transformers model's dev outputs decoded and scored by
bert-tf's own dev pipeline, which must give its own pipeline's scores; loss: mean training loss per epoch):

{markdown_table(["task", "seed", "contender", "dev scores", "same model, bert-tf's pipeline", "loss per epoch",
                 "steps", "train s", "wall s"], detail)}

Commands (seed 1; the other seeds differ in `--seed` and `--out`; transformers runs the FinetuneConfig of the
bert_tf command):
{commands}
"""
