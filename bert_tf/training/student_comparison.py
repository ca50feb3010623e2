"""A distilled student beside its teacher: the dev score and the share of the teacher's it keeps, the parameters,
the size on disk and the speed (a quick measure: a few batches through each model, tokenized beforehand, after a pass
that builds them).

`bert-tf distill` prints it at the end. Both models are scored and timed on the same data, the run's dev file
(the training file's first examples for the speed when there is none, and no scores).

Example:
    >>> teacher, student = compare_with_teacher(config, result.metrics)  # doctest: +SKIP
    >>> print(comparison_table(teacher, student, config.primary_metric()))  # doctest: +SKIP
    model    accuracy            parameters  on disk  examples/s
    teacher  0.8108              11,171,074  42.7 MB       1,162
    student  0.8096 (100% kept)   4,386,178  16.8 MB       4,648 (4.0× the teacher's)
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import bert_tf
from bert_tf.tasks.base import FinetuneTask
from bert_tf.tasks.model_outputs import predict_examples
from bert_tf.tasks.registry import task_from_directory
from bert_tf.training.finetune_config import FinetuneConfig

SPEED_BATCHES = 4  # batches of the run's size that each model predicts to measure its speed


@dataclasses.dataclass(frozen=True)
class ModelFigures:
    score: float | None  # the run's primary dev score (`FinetuneConfig.primary_metric`); None without a dev file
    parameters: int
    megabytes: float  # the model directory on disk
    examples_per_second: float


def compare_with_teacher(config: FinetuneConfig, student_scores: dict) -> tuple[ModelFigures, ModelFigures]:
    """The figures of `config.teacher` and of the student it wrote (`config.output_dir`, dev scores `student_scores`)."""
    teacher, student = (bert_tf.load_model_directory(path) for path in (config.teacher, config.output_dir))
    task = task_from_directory(teacher)
    examples = task.read(config.dev_file or config.train_file)
    count = min(len(examples), SPEED_BATCHES * config.batch_size)
    sample = task.prepare(task.subset(examples, range(count)), training=False)
    batches = task.prediction_batches(sample, config.batch_size).cache()  # tokenized once, by the first pass
    metric = config.primary_metric()
    teacher_score = None
    if config.dev_file:
        teacher_score = task.evaluate(teacher.model, task.prepare(examples, training=False), config.batch_size)[metric]
    return tuple(ModelFigures(score, directory.model.count_params(), _megabytes(directory.path),
                              _examples_per_second(task, directory.model, batches, count))
                 for score, directory in ((teacher_score, teacher), (student_scores.get(metric), student)))


def _examples_per_second(task: FinetuneTask, model, batches, count: int) -> float:
    """How many of the `count` examples whose inputs `batches` holds (`task.prediction_batches`) `model` runs through
    per second, the text already tokenized."""
    predict_examples(model, batches, task.per_position)  # builds the model's graphs for these batches
    started = time.perf_counter()
    predict_examples(model, batches, task.per_position)
    return count / (time.perf_counter() - started)


def _megabytes(directory: Path) -> float:
    return sum(file.stat().st_size for file in directory.rglob("*") if file.is_file()) / 2**20


def comparison_table(teacher: ModelFigures, student: ModelFigures, metric: str) -> str:
    """The two models' figures, a line each, the student's beside the teacher's (the share kept, the speed-up).

    Example:
        >>> print(comparison_table(ModelFigures(0.8, 11_171_074, 42.7, 1162.0),
        ...                        ModelFigures(0.792, 4_386_178, 16.8, 4648.0), "accuracy"))
        model    accuracy           parameters  on disk  examples/s
        teacher  0.8000             11,171,074  42.7 MB       1,162
        student  0.7920 (99% kept)   4,386,178  16.8 MB       4,648 (4.0× the teacher's)
    """
    def score(figures: ModelFigures, kept: str = "") -> list[str]:
        return [] if teacher.score is None else [f"{figures.score:.4f}{kept}"]

    kept = f" ({student.score / teacher.score:.0%} kept)" if teacher.score else ""
    rows = [["model", *([metric] if teacher.score is not None else []), "parameters", "on disk", "examples/s"],
            ["teacher", *score(teacher), f"{teacher.parameters:,}", f"{teacher.megabytes:.1f} MB",
             f"{teacher.examples_per_second:,.0f}"],
            ["student", *score(student, kept), f"{student.parameters:,}", f"{student.megabytes:.1f} MB",
             f"{student.examples_per_second:,.0f}"]]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) if column < len(row) - 3 else cell.rjust(width)
                       for column, (cell, width) in enumerate(zip(row, widths))) for row in rows]
    speed = student.examples_per_second / teacher.examples_per_second
    return "\n".join([*lines[:2], f"{lines[2]} ({speed:.1f}× the teacher's)"])
