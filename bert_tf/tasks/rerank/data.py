"""Reranker training data: a query with its positive and hard negatives (the rows `bert-tf mine` writes), or labelled
pairs, from CSV, TSV and JSONL files (read as `bert_tf.tasks.data_rows` reads them).

What a file holds (`RerankExamples.kind`):
- "groups": columns `query` (or `anchor`), `positive`, and `negative` or `negative_1` ... `negative_N` (as `bert-tf
  mine` writes them); optionally a teacher's score of each document, for MarginMSE distillation: `scores`, a list of
  the positive's score then each negative's (what `bert-tf mine` writes: its retriever's), or columns
  `score_positive` and `score_negative` / `score_negative_1` ... `score_negative_N`.
- "pairs": columns `query`, `document` and, to train (binary cross-entropy) or score, `label`: 1 relevant, 0 not,
  or a soft label in between.
A line without one of its texts, with an empty text, a score that is not a number or a label outside 0 to 1 is an
error that names it.

Example:
    >>> examples = read_rerank_file("mined.jsonl")  # doctest: +SKIP
    >>> examples.kind, examples.documents[0][:2], examples.teacher_scores[0][:2]  # doctest: +SKIP
    ('groups', ('Pandas are bears.', 'Pandas are fish.'), (0.81, 0.62))
"""

from __future__ import annotations

import dataclasses
import itertools
import math

from bert_tf.tasks.data_rows import read_rows
from bert_tf.tasks.data_rows import row_texts
from bert_tf.text_files import json_kind


@dataclasses.dataclass
class RerankExamples:
    """The examples of one file: a query and its documents each (module docstring), their lines."""

    source: str
    kind: str  # "groups" (positive first, then the negatives) or "pairs" (one document)
    queries: list[str]
    documents: list[tuple[str, ...]]
    labels: list[float] | None  # pairs: each pair's label; None for groups (the positive is 1, the negatives 0)
    teacher_scores: list[tuple[float, ...]] | None  # groups: the teacher's score of each document, if the file has
    lines: list[int]

    def __len__(self) -> int:
        return len(self.queries)

    def subset(self, indices) -> "RerankExamples":
        """The examples at `indices`, in that order."""
        pick = lambda values: None if values is None else [values[i] for i in indices]  # noqa: E731
        return dataclasses.replace(self, queries=pick(self.queries), documents=pick(self.documents),
                                   labels=pick(self.labels), teacher_scores=pick(self.teacher_scores),
                                   lines=pick(self.lines))


def _numbers(values, what: str, count: int, path, line: int) -> tuple[float, ...]:
    if not isinstance(values, (list, tuple)) or len(values) != count:
        given = len(values) if isinstance(values, (list, tuple)) else json_kind(values)
        raise ValueError(f"{path}, line {line}: {what} must be {count} numbers (the positive's, then each "
                         f"negative's), got {given}.")
    return tuple(_number(value, what, path, line) for value in values)


def _number(value, what: str, path, line: int) -> float:
    if value is None or isinstance(value, bool):
        raise ValueError(f"{path}, line {line}: {what} is {json_kind(value)}, not a number.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{path}, line {line}: {what} {value!r} is not a number.") from None
    if not math.isfinite(number):
        raise ValueError(f"{path}, line {line}: {what} {value!r} is not a finite number.")
    return number


def _negative_columns(available, prefix: str) -> tuple[str, ...]:
    """`prefix` alone, or `prefix_1`, `prefix_2`, ... as far as the file has them."""
    if prefix in available:
        return (prefix,)
    return tuple(itertools.takewhile(lambda name: name in available,
                                     (f"{prefix}_{number}" for number in itertools.count(1))))


def read_rerank_file(path, need_labels: bool = True, teacher_scores: bool = True) -> RerankExamples:
    """The examples of a file of groups or labelled pairs (module docstring); `need_labels`: pairs must have labels;
    `teacher_scores`: read the teacher's scores where the file has them (else they are left unread: a mined file
    whose retriever gave no positive a score trains with the other losses)."""
    rows = read_rows(path)
    _, available = next(rows)
    query = next((name for name in ("query", "anchor") if name in available), None)
    negatives = _negative_columns(available, "negative")
    if query and "positive" in available and negatives:
        kind, columns = "groups", (query, "positive", *negatives)
    elif query and "document" in available:
        kind, columns = "pairs", (query, "document")
    else:
        raise ValueError(f"{path}: no reranking columns among {list(available)}; use query, positive, negative_1 ... "
                         "(a query with its positive and negatives: bert-tf mine's rows) or query, document, label "
                         "(labelled pairs).")
    label = "label" if kind == "pairs" and "label" in available else None
    if kind == "pairs" and need_labels and label is None:
        raise ValueError(f"{path}: pairs (query, document) without a label column (1 relevant, 0 not).")
    teacher = None  # the teacher's scores: the `scores` list, or the score_... columns
    if teacher_scores and kind == "groups" and "scores" in available:
        teacher = "scores"
    elif teacher_scores and kind == "groups" and "score_positive" in available:
        teacher = ("score_positive", *_negative_columns(available, "score_negative"))
    queries, documents, labels, scores, lines = [], [], [], [], []
    for line, row in rows:
        texts = row_texts(row, columns, path, line)
        if any(not text.strip() for text in texts):
            raise ValueError(f"{path}, line {line}: an empty text.")
        queries.append(texts[0])
        documents.append(texts[1:])
        lines.append(line)
        if label is not None:
            value = _number(row.get(label), "the label", path, line)
            if not 0 <= value <= 1:
                raise ValueError(f"{path}, line {line}: the label {value:g} is outside 0 to 1 (1 relevant, 0 not).")
            labels.append(value)
        if teacher is not None:
            values = row[teacher] if teacher == "scores" else [row.get(name) for name in teacher]
            what = "scores" if teacher == "scores" else "score_positive, score_negative_..."
            scores.append(_numbers(values, what, len(columns) - 1, path, line))
    if not queries:
        raise ValueError(f"{path}: no examples.")
    return RerankExamples(str(path), kind, queries, documents, labels if label else None,
                          scores if teacher is not None else None, lines)
