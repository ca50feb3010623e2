"""Sentence-embedding data: scored pairs, pairs or triples, and plain sentences, from the files users have.

What a file holds decides how it trains (`EmbeddingExamples.kind`):
- "scored": pairs with a similarity score (CoSENT or cosine regression; STS scoring on a dev file). The STS
  Benchmark's own files (`sts-train.csv`, `sts-dev.csv`: tab-separated, no header, the score in the 5th field
  and the sentences in the 6th and 7th) are recognised; otherwise columns `sentence1`, `sentence2`, `score`.
- "pairs": (anchor, positive) or (anchor, positive, hard negative), columns `anchor`, `positive`, `negative`
  (or `query`/`positive`/`negative`, `sentence1`/`sentence2`), or several hard negatives, `negative_1`,
  `negative_2`, ... (sentence-transformers' "n-tuple", as `bert-tf mine` writes them) — in-batch negatives;
  retrieval scoring on a dev file (each anchor looks for its positive among all of them).
- "sentences": one text per example (a `.txt` file, a line each; or a `text` / `sentence` column) —
  unsupervised SimCSE, each sentence paired with itself.
CSV, TSV and JSONL files are read as `bert_tf.tasks.data_rows` reads them. Scores must lie in the declared
`score_range` (0–5 by default, STS-B's); a line outside it is an error that names it. A `label` column without a
score is a classification (or NLI) file: an error, not texts whose labels would be dropped.

Example:
    >>> examples = read_embedding_file("../shared/data/stsb/sts-dev.csv")  # doctest: +SKIP
    >>> examples.kind, len(examples), examples.texts[0], examples.scores[0]  # doctest: +SKIP
    ('scored', 1500, ('A man with a hard hat is dancing.', 'A man wearing a hard hat is dancing.'), 5.0)
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

from bert_tf.tasks.data_rows import read_rows, row_texts
from bert_tf.text_files import existing_file, json_kind, utf8_lines

KINDS = ("scored", "pairs", "sentences")
# (columns of the texts, score column or None), in the order they are tried.
KNOWN_COLUMNS = (
    (("sentence1", "sentence2"), "score"),
    (("anchor", "positive", "negative"), None),
    (("query", "positive", "negative"), None),
    (("anchor", "positive"), None),
    (("query", "positive"), None),
    (("sentence1", "sentence2"), None),
    (("text",), None),
    (("sentence",), None),
)
STSB_FIELDS = 7  # genre, file, year, id, score, sentence 1, sentence 2 (some rows carry notes after them)


@dataclasses.dataclass
class EmbeddingExamples:
    """The examples of one file: a tuple of texts each, their scores ("scored" files), their lines."""

    source: str
    kind: str  # KINDS
    texts: list[tuple[str, ...]]
    scores: list[float] | None
    lines: list[int]

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices) -> "EmbeddingExamples":
        """The examples at `indices`, in that order."""
        return dataclasses.replace(self, texts=[self.texts[i] for i in indices], lines=[self.lines[i] for i in indices],
                                   scores=None if self.scores is None else [self.scores[i] for i in indices])


def _is_stsb_line(line: str) -> bool:
    fields = line.rstrip("\r\n").split("\t")
    try:
        return len(fields) >= STSB_FIELDS and math.isfinite(float(fields[4]))
    except ValueError:
        return False


def _stsb_rows(path: Path):
    for number, line in enumerate(utf8_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) < STSB_FIELDS:
            raise ValueError(f"{path}, line {number}: {len(fields)} fields; an STS Benchmark line has at least "
                             f"{STSB_FIELDS} (genre, file, year, id, score, sentence 1, sentence 2).")
        yield number, (fields[5], fields[6]), fields[4]


def _column_rows(path: Path) -> tuple[bool, object]:
    """Whether the file is of scored pairs, and its rows: (line, texts, score or None)."""
    rows = read_rows(path)
    _, available = next(rows)
    for columns, score in KNOWN_COLUMNS:
        if all(column in available for column in columns) and (score is None or score in available):
            break
    else:
        raise ValueError(f"{path}: no known text columns among {list(available)}; use sentence1/sentence2/score "
                         "(scored pairs), anchor/positive[/negative] (pairs), or text (sentences).")
    if columns[-1] == "positive":  # and hard negatives negative_1, negative_2, ..., if the file has them
        columns += tuple(itertools.takewhile(lambda name: name in available,
                                             (f"negative_{number}" for number in itertools.count(1))))
    if score is None and "label" in available:
        raise ValueError(f"{path} has a label column, as classification files have: sentence embeddings read scored "
                         "pairs (sentence1/sentence2/score), pairs (anchor/positive[/negative]) or sentences (text, or "
                         "a .txt file of a line each).")
    return score is not None, ((number, row_texts(row, columns, path, number), None if score is None else
                                row.get(score)) for number, row in rows)


def _kind(width: int, scored: bool) -> str:
    return "scored" if scored else ("sentences" if width == 1 else "pairs")


def read_embedding_file(path: str | Path, score_range: tuple[float, float] = (0.0, 5.0)) -> EmbeddingExamples:
    """The examples of a scored-pair, pair/triple or sentence file (module docstring)."""
    path = existing_file(path)
    first = next((line for line in utf8_lines(path) if line.strip()), None)
    if first is None:
        raise ValueError(f"{path}: the file is empty.")
    if path.suffix.lower() == ".txt" and not _is_stsb_line(first):
        scored, rows = False, ((number, (line.strip(),), None) for number, line in enumerate(utf8_lines(path), start=1)
                               if line.strip())
    else:
        scored, rows = (True, _stsb_rows(path)) if _is_stsb_line(first) else _column_rows(path)
    texts, scores, lines = [], [], []
    for number, example, score in rows:
        if any(not text.strip() for text in example):
            raise ValueError(f"{path}, line {number}: an empty text.")
        texts.append(example)
        lines.append(number)
        if scored:
            scores.append(_score(score, score_range, path, number))
    if not texts:
        raise ValueError(f"{path}: no examples.")
    return EmbeddingExamples(str(path), _kind(len(texts[0]), scored), texts, scores or None, lines)


def _score(value, score_range: tuple[float, float], path, line: int) -> float:
    low, high = score_range
    if value is None or isinstance(value, bool):
        raise ValueError(f"{path}, line {line}: " + ("no score." if value is None else
                                                      f"the score {json_kind(value)} is not a number."))
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{path}, line {line}: the score {value!r} is not a number.") from None
    if not low <= score <= high:
        raise ValueError(f"{path}, line {line}: the score {score:g} is outside the declared range {low:g} to "
                         f"{high:g} (--score-range).")
    return score
