"""Small students distilled from fine-tuned BERT-Mini teachers: dev score against speed, float32 and int8.

    python -m benchmarks.run --only distillation            # about an hour on 2 cores, the teachers there
    python -m benchmarks.run --only distillation --quick    # smoke mode: a few dozen examples, one epoch

Teachers: `benchmarks.quality`'s seed-1 `bert-tf finetune` models of SST-2, MRPC and CoNLL-2003 (BERT-Mini from
the team's trained checkpoint; reused from its work folder, else fine-tuned by the same command). Each student is
`bert-tf distill` with the task's training data and epochs (`quality.TASKS`), `STUDENTS`:
- random starts of L2/H128 (BERT-Tiny's shape), L4/H128 and L2/H256, at a learning rate of 1e-3;
- L2/H256 from the teacher's layers 0 and 2 (DistilBERT's start), at 1e-4;
- L4/H128 from random with TinyBERT's intermediate-layer losses (hidden states through a projection,
  attention with the teacher's 4 heads; weights 1), on SST-2;
- the teacher-layer student with unlabeled text the teacher labels: SST-2's training sentences the teacher
  did not see (those past its 20,000), and for CoNLL-2003 lines of the shared books; for MRPC (no unlabeled
  pairs at hand) 4 augmented copies of each training pair instead (`--augment 4`, the team checkpoint's
  masked-LM head).
Reported per task and student: the dev score and its share of the teacher's; for SST-2 also raw text → label
throughput on the 872 dev sentences, one sentence per call and batches of 32, float32 (`bert-tf export`'s
SavedModel, `serving_default`) and int8 (`export --quantize int8`, the raw-text TFLite model), against the float32
teacher (each model timed in a process of its own, `benchmarks.isolated`, the rounds interleaved), and the model
sizes. Students distilled by an earlier run are reused (`STUDENTS_FILE` in `quality.WORK_DIR`; delete it to
distil again). Targets (issue 25): the best student ≥ 97% of its teacher's score at ≥ 4× its
float32 throughput (batches of 32); with int8 ≥ 12× at ≥ 96%.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks import quality
from benchmarks.harness import Contender, interleaved, usable_cores
from benchmarks.isolated import IsolatedCalls
from benchmarks.report import BenchmarkResult, markdown_table, portable_command, run_missing
from benchmarks.settings import Settings
from bert_tf_cli import parse_arguments
from bert_tf_cli.distill import config_from_args
from bert_tf.training.finetune import finetune
from serving.export.saved_model import export_saved_model
from serving.tflite_runner import TfliteModel

NAME = "distillation"
TASKS = ("sst2", "mrpc", "conll")
QUICK_TASKS = ("sst2", "mrpc")
TARGETS = {"float32": (0.97, 4.0), "int8": (0.96, 12.0)}  # (share of the teacher's score, × its float32 speed)
SINGLE_SENTENCES = 200  # of the dev set, one per call
UNLABELED_LINES = 20_000


@dataclasses.dataclass(frozen=True)
class Student:
    name: str
    layers: int
    hidden: int
    from_teacher: bool = False
    unlabeled: bool = False  # with unlabeled text the teacher labels
    layer_losses: bool = False  # with TinyBERT's hidden-state and attention losses (the teacher's head count)
    augment: int = 0  # with this many masked-LM copies of each training text (the team checkpoint's MLM head)
    tasks: tuple[str, ...] = TASKS

    def flags(self, teacher_config: bert_tf.BertConfig, work: Path, settings: Settings) -> list[str]:
        flags = (["--student", "teacher", "--student-layers", str(self.layers), "--learning-rate", "1e-4"]
                 if self.from_teacher else ["--student", self.random_start(teacher_config, work), "--learning-rate",
                                            "1e-3"])
        if self.layer_losses:
            flags += ["--hidden-weight", "1", "--attention-weight", "1"]
        if self.augment:
            flags += ["--augment", str(self.augment), "--augment-with", str(settings.data_file(*quality.CHECKPOINT))]
        return flags

    def random_start(self, teacher_config: bert_tf.BertConfig, work: Path) -> str:
        """`--student` of a random start: the preset of this size (the teacher's other settings, as every preset
        has them), or with layer losses, which need the teacher's head count, a config file kept in `work`."""
        if not self.layer_losses:
            return f"bert_L{self.layers}_H{self.hidden}"
        heads = teacher_config.num_attention_heads
        config_file = work / f"student_{self.layers}_{self.hidden}_{heads}.json"
        teacher_config.replace(num_hidden_layers=self.layers, hidden_size=self.hidden, num_attention_heads=heads,
                               intermediate_size=4 * self.hidden).write_json(config_file)
        return str(config_file)


STUDENTS = (
    Student("L2/H128 random", 2, 128),
    Student("L4/H128 random", 4, 128),
    Student("L4/H128 random + layer losses", 4, 128, layer_losses=True, tasks=("sst2",)),
    Student("L2/H256 random", 2, 256),
    Student("L2/H256 teacher layers", 2, 256, from_teacher=True),
    Student("L2/H256 teacher layers + unlabeled", 2, 256, from_teacher=True, unlabeled=True, tasks=("sst2", "conll")),
    Student("L2/H256 teacher layers + augmented", 2, 256, from_teacher=True, augment=4, tasks=("mrpc",)),
)
STUDENT_NAMED = {student.name: student for student in STUDENTS}
STUDENTS_FILE = "distillation_students.json"  # in the work folder: students kept from an earlier run


def run(settings: Settings) -> BenchmarkResult:
    title = "## Distillation: small students of fine-tuned BERT-Mini teachers, score against speed"
    needed = [quality.CHECKPOINT, ("sst2", "train.tsv"), ("sst2", "dev.tsv"), ("mrpc", "train.tsv"),
              ("conll2003", "train.txt"), ("corpus",)]
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in needed if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    tasks = [task for task in quality.TASKS if task.name in (QUICK_TASKS if settings.quick else TASKS)]
    with tempfile.TemporaryDirectory(prefix="distillation-") as scratch:
        scratch = Path(scratch)
        work = scratch if settings.quick else quality.WORK_DIR
        for folder in (work / "models", work / "logs"):
            folder.mkdir(parents=True, exist_ok=True)
        results = {}
        for task in tasks:
            teacher, training = quality.bert_tf_model(task, settings, work)
            results[task.name] = {"teacher": {"score": _dev_score(teacher), "command": training["command"]},
                                  "students": {}}
            students = [student for student in STUDENTS if task.name in student.tasks]
            done = run_missing(work / STUDENTS_FILE, [f"{task.name}|{student.name}" for student in students],
                               lambda key: distil(task, STUDENT_NAMED[key.split("|")[1]], teacher, settings, work))
            results[task.name]["students"] = {student.name: done[f"{task.name}|{student.name}"]
                                              for student in students}
            if task.name == "sst2":
                results[task.name]["speed"] = speeds(teacher, results[task.name]["students"], settings, scratch)
    return BenchmarkResult(NAME, markdown(title, tasks, results, settings), {"results": results})


def distil(task: quality.QualityTask, student: Student, teacher: Path, settings: Settings, work: Path) -> dict:
    """`bert-tf distill` of `student` from `teacher` on the task's training data; its dev score and command (its
    files in `work`, kept, so that it runs again as recorded)."""
    train, dev = quality.data_files(task, settings, work)
    out = work / "models" / f"{task.name}_student_{student.name.replace('/', '').replace(' ', '_')}"
    epochs = task.flags[task.flags.index("--epochs") + 1]
    flags = ["--teacher", str(teacher), "--train", str(train), "--dev", str(dev), "--out", str(out), "--overwrite",
             "--epochs", "1" if settings.quick else epochs, "--batch-size", "32", "--seed", str(quality.SEEDS[0]),
             "--last-epoch", *student.flags(bert_tf.load_model_directory(teacher).encoder.config, work, settings)]
    if "--max-train-examples" in task.flags or settings.quick:
        count = quality.QUICK_EXAMPLES if settings.quick else int(task.flags[task.flags.index("--max-train-examples") + 1])
        flags += ["--max-train-examples", str(count)]
    if student.unlabeled:
        flags += ["--unlabeled", str(unlabeled_file(task, settings, work))]
    command = portable_command(["bert-tf", "distill", *flags])
    print(f"{task.name} {student.name}: `{command}`", flush=True)
    result = finetune(config_from_args(parse_arguments(["distill", *flags])), progress=False)
    score = quality.points(task, task.metrics[0], result.metrics[task.metrics[0]])
    print(f"{task.name} {student.name}: {score:.2f}", flush=True)
    return {"score": score, "model": str(out), "command": command, "train_examples": result.train_examples,
            "train_seconds": result.train_seconds}


def unlabeled_file(task: quality.QualityTask, settings: Settings, work: Path) -> Path:
    """Sentences the teacher has not been trained on: SST-2's training sentences past the ones the teacher saw
    (its seeded 20,000 are a random subset, so: every sentence not among them), or the shared books' lines."""
    path = work / f"{task.name}_unlabeled.txt"
    if task.name == "sst2":
        rows = settings.data_file(*task.train).read_text(encoding="utf-8").splitlines()[1:]
        lines = [row.split("\t")[0].strip() for row in rows]
        seen_count = int(task.flags[task.flags.index("--max-train-examples") + 1])
        unseen = np.sort(np.random.default_rng(quality.SEEDS[0]).permutation(len(lines))[seen_count:])
        lines = [lines[index] for index in unseen]
    else:
        books = sorted(settings.data_file("corpus").glob("*.txt"))
        lines = [line.strip() for book in books for line in book.read_text(encoding="utf-8").splitlines()
                 if 20 <= len(line.strip()) <= 300]
    count = quality.QUICK_EXAMPLES if settings.quick else UNLABELED_LINES
    path.write_text("\n".join(lines[:count]) + "\n", encoding="utf-8")
    return path


def _dev_score(model_dir: Path) -> float:
    return json.loads((Path(model_dir) / "bert_tf.json").read_text())["dev_scores"]


def speeds(teacher: Path, students: dict, settings: Settings, scratch: Path) -> dict:
    """Raw text → label throughput on SST-2 dev sentences, float32 SavedModel and int8 TFLite, for the teacher and
    each student, one sentence per call and batches of 32, each model in a process of its own
    (`benchmarks.isolated`); and the models' sizes."""
    rows = settings.data_file("sst2", "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    sentences = [row.split("\t")[0] for row in rows if row]
    if settings.quick:
        sentences = sentences[:64]
    models = {"teacher": Path(teacher), **{name: Path(result["model"]) for name, result in students.items()}}
    items = {"float32|32": len(sentences), "int8|32": len(sentences),
             "float32|1": min(len(sentences), SINGLE_SENTENCES), "int8|1": min(len(sentences), SINGLE_SENTENCES)}
    with contextlib.ExitStack() as stack:
        children = {name: stack.enter_context(IsolatedCalls(model_calls, str(model_dir),
                                                            str(scratch / "exports" / f"m{index}"), sentences))
                    for index, (name, model_dir) in enumerate(models.items())}
        contenders = [Contender(f"{name}|{call}", lambda c=child, k=call: c.run(k), count)
                      for name, child in children.items() for call, count in items.items()]
        timings = interleaved(contenders, settings.rounds, max_seconds=settings.max_seconds * 4,
                              description="distillation speed")
        sizes = {name: child.info for name, child in children.items()}
    return {"sentences_per_s": {name: timing.median for name, timing in timings.items()}, "sizes": sizes,
            "sentences": len(sentences)}


def model_calls(model_dir: str, exports: str, sentences: list[str]) -> tuple[dict, dict]:
    """In a child process: the model's float32 SavedModel and int8 TFLite exports, the four calls timed (`float32|32`,
    `int8|32`: every sentence in batches of 32; `float32|1`, `int8|1`: the first `SINGLE_SENTENCES` one per call)
    and the exports' sizes in MB."""
    saved = export_saved_model(model_dir, exports, "float32")
    signature = tf.saved_model.load(str(saved)).signatures["serving_default"]
    int8_dir = export_saved_model(model_dir, exports, "int8", quantize="int8")
    tflite = TfliteModel(int8_dir / "model.tflite", num_threads=usable_cores())
    batches = [np.array(sentences[start:start + 32], dtype=object) for start in range(0, len(sentences), 32)]
    singles = [np.array([sentence], dtype=object) for sentence in sentences[:SINGLE_SENTENCES]]
    calls = {
        "float32|32": lambda: [signature(text=tf.constant(batch)) for batch in batches],
        "int8|32": lambda: [tflite.predict_texts(batch) for batch in batches],
        "float32|1": lambda: [signature(text=tf.constant(one)) for one in singles],
        "int8|1": lambda: [tflite.predict_texts(one) for one in singles],
    }
    return calls, {"float32_mb": _megabytes(saved), "int8_mb": _megabytes(int8_dir)}


def fastest_keeping(sst2: dict, precision: str) -> tuple[str | None, float]:
    """The fastest SST-2 student in `precision` (batch 32) keeping the target's share of the teacher's dev
    accuracy, and its speed × the float32 teacher's; (None, 0.0) when none keeps it."""
    rates = sst2["speed"]["sentences_per_s"]
    teacher = quality.points(quality.TASKS[0], "accuracy", sst2["teacher"]["score"]["accuracy"])
    keeping = {name: rates[f"{name}|{precision}|32"] / rates["teacher|float32|32"]
               for name, student in sst2["students"].items() if student["score"] / teacher >= TARGETS[precision][0]}
    best = max(keeping, key=keeping.get, default=None)
    return best, keeping.get(best, 0.0)


def _megabytes(path: Path) -> float:
    return sum(file.stat().st_size for file in Path(path).rglob("*") if file.is_file()) / 2**20


def markdown(title: str, tasks, results: dict, settings: Settings) -> str:
    rows = []
    for task in tasks:
        result = results[task.name]
        teacher = quality.points(task, task.metrics[0], result["teacher"]["score"][task.metrics[0]])
        rows.append([task.title, "teacher (BERT-Mini, L4/H256)", f"{teacher:.2f}", "100.0"])
        for name, student in result["students"].items():
            rows.append([task.title, name, f"{student['score']:.2f}", f"{100 * student['score'] / teacher:.1f}"])
    table = markdown_table(["task", "model", "dev score (%)", "% of the teacher"], rows)
    speed_lines, verdicts = [], []
    if "sst2" in results:
        sst2 = results["sst2"]
        rates, sizes = sst2["speed"]["sentences_per_s"], sst2["speed"]["sizes"]
        base = rates["teacher|float32|32"]
        teacher_score = quality.points(quality.TASKS[0], "accuracy", sst2["teacher"]["score"]["accuracy"])
        speed_rows = []
        for name in ["teacher", *sst2["students"]]:
            share = 1.0 if name == "teacher" else sst2["students"][name]["score"] / teacher_score
            speed_rows.append([name, f"{100 * share:.1f}",
                               *(f"{rates[f'{name}|{precision}|{batch}']:,.1f} "
                                 f"({rates[f'{name}|{precision}|{batch}'] / base:.1f}×)"
                                 for precision in ("float32", "int8") for batch in (32, 1)),
                               f"{sizes[name]['float32_mb']:.1f} / {sizes[name]['int8_mb']:.1f}"])
        speed_lines = [
            "", f"SST-2 raw text → label on the {sst2['speed']['sentences']} dev sentences ({SINGLE_SENTENCES} for one "
            f"per call), sentences/s (× the float32 teacher at batch 32), {usable_cores()} threads, each model in a process "
            "of its own (`benchmarks/isolated.py`), the rounds interleaved:", "",
            markdown_table(["model", "% of teacher", "float32, batch 32", "float32, 1 per call", "int8, batch 32",
                            "int8, 1 per call", "MB float32 / int8"], speed_rows)]
        for precision, (min_share, min_speed) in TARGETS.items():
            name, speed = fastest_keeping(sst2, precision)
            met = "met" if speed >= min_speed else "not met"
            verdicts.append(f"{precision}: {name or 'no student'} keeping ≥ {min_share:.0%} at {speed:.1f}× — {met}")
    targets = "; ".join(verdicts)
    quick = "\n\n**Quick mode: a few dozen examples; the figures mean nothing.**" if settings.quick else ""
    commands = "\n".join(f"- {task.title}: teacher `{results[task.name]['teacher']['command']}`; e.g. "
                         f"`{next(iter(results[task.name]['students'].values()))['command']}`" for task in tasks)
    return f"""{title}
{quick}
Teachers: `benchmarks.quality`'s seed-1 BERT-Mini models (fine-tuned from the team's trained checkpoint). Students
by `bert-tf distill` (temperature 2, soft weight 0.5, the task's data and epochs, last epoch; random starts at
1e-3, starts from the teacher's layers at 1e-4; "layer losses": `--hidden-weight 1 --attention-weight 1`;
"augmented": `--augment 4` with the team checkpoint's masked-LM head). Commands:
{commands}

{table}
{chr(10).join(speed_lines)}

Targets (best student ≥ 97% of the teacher at ≥ 4× its float32 speed; int8 ≥ 12× at ≥ 96%): {targets}.
"""
