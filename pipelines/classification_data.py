"""Text classification data: CSV, TSV and JSONL files → examples → `tf.data` with tokenization in the graph.

Files are read by their suffix:
- `.tsv`: tab-separated with a header row and *no quoting* (csv.QUOTE_NONE), as GLUE's
  files need: MRPC's and RTE's sentences contain `"` characters that are text, not quotes.
  A byte-order mark (MRPC) is dropped.
- `.csv`: comma-separated with a header row and standard CSV quoting.
- `.jsonl` (or `.json`, `.ndjson`): one JSON object per line.

Columns are chosen by name. Without names, the first match among GLUE's and common
layouts is used: `#1 String`/`#2 String`/`Quality` (MRPC), `sentence1`/`sentence2`/`label`
(RTE, STS-B), `question1`/`question2`/`is_duplicate` (QQP), `question`/`sentence`/`label`
(QNLI), `premise`/`hypothesis`/`label`, then single texts `sentence`/`label` (SST-2, CoLA)
and `text`/`label`. Labels are kept as strings ("1", "entailment"); for multi-label data a
cell holds several labels split by a separator (JSON: a list).

Example:
    >>> examples = read_classification_file("glue/MRPC/dev.tsv")  # doctest: +SKIP
    >>> examples.columns, examples.texts[0][:30], examples.labels[0]  # doctest: +SKIP
    (('#1 String', '#2 String', 'Quality'), "He said the foodservice pie bu", '1')
    >>> dataset, lengths = tokenized_dataset(examples.texts, examples.text_pairs, tokenizer, 128)  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Iterator

import numpy as np
import tensorflow as tf

from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tokenizer import BertTokenizer

# (text, text pair, label) column names, in the order they are tried.
KNOWN_COLUMNS = (
    ("#1 String", "#2 String", "Quality"),
    ("sentence1", "sentence2", "label"),
    ("question1", "question2", "is_duplicate"),
    ("question", "sentence", "label"),
    ("premise", "hypothesis", "label"),
    ("sentence", None, "label"),
    ("text", None, "label"),
)
FORMATS = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}
TOKENIZE_BATCH = 1024  # texts tokenized per graph call


@dataclasses.dataclass
class ClassificationExamples:
    """The examples of one file: texts (and second texts for pairs), labels as strings, source lines."""

    source: str
    columns: tuple[str, str | None, str | None]  # text, text pair, label column
    texts: list[str]
    text_pairs: list[str] | None
    labels: list | None  # a string per example, or a list of strings (multi-label); None without labels
    lines: list[int]  # 1-based line of each example in the file

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices) -> "ClassificationExamples":
        """The examples at `indices`, in that order."""
        pick = lambda values: None if values is None else [values[i] for i in indices]  # noqa: E731
        return dataclasses.replace(self, texts=pick(self.texts), text_pairs=pick(self.text_pairs),
                                   labels=pick(self.labels), lines=pick(self.lines))


def file_format(path: str | Path) -> str:
    """"tsv", "csv" or "jsonl", from the file name's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path}: unknown file type {suffix!r}; use one of {sorted(FORMATS)}.")
    return FORMATS[suffix]


def _delimited_rows(path: Path, delimiter: str, quoting: int) -> Iterator[tuple[int, dict]]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path}: the file is empty (expected a header row and examples).")
        yield 1, header
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            if len(row) != len(header):
                raise ValueError(
                    f"{path}, line {reader.line_num}: {len(row)} fields, but the header has {len(header)} "
                    f"({header})."
                )
            yield reader.line_num, dict(zip(header, row))


def _json_rows(path: Path) -> Iterator[tuple[int, dict]]:
    with open(path, encoding="utf-8-sig") as handle:
        header_sent = False
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}, line {line_number}: not a JSON object ({error.msg}).") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}, line {line_number}: expected a JSON object, got {type(row).__name__}.")
            if not header_sent:
                yield 0, list(row)
                header_sent = True
            yield line_number, row
    if not header_sent:
        raise ValueError(f"{path}: the file is empty (expected one JSON object per line).")


def read_rows(path: str | Path) -> Iterator[tuple[int, dict]]:
    """The file's column names first (as `(line, names)`), then `(line number, {column: value})` per example."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Data file not found: {path}")
    kind = file_format(path)
    if kind == "tsv":
        return _delimited_rows(path, "\t", csv.QUOTE_NONE)
    if kind == "csv":
        return _delimited_rows(path, ",", csv.QUOTE_MINIMAL)
    return _json_rows(path)


def choose_columns(
    available: list[str], source, text_column=None, text_pair_column=None, label_column=None, need_label=True
) -> tuple[str, str | None, str | None]:
    """The (text, text pair, label) columns: the given names, the rest from `KNOWN_COLUMNS`."""
    if text_column is None:
        for text, pair, label in KNOWN_COLUMNS:
            if text in available and (pair is None or pair in available):
                text_column, text_pair_column = text, text_pair_column or pair
                label_column = label_column or (label if label in available else None)
                break
        else:
            raise ValueError(
                f"{source}: no known text column among {available}; name it (text_column / --text-column)."
            )
    if label_column is None and need_label:
        label_column = next((label for *_, label in KNOWN_COLUMNS if label in available), None)
    for role, column in (("text", text_column), ("text pair", text_pair_column), ("label", label_column)):
        if column is not None and column not in available:
            raise ValueError(f"{source}: no {role} column {column!r}; the columns are {available}.")
    if need_label and label_column is None:
        raise ValueError(f"{source}: no label column found among {available}; name it (label_column / --label-column).")
    return text_column, text_pair_column, label_column


def _label(value, multi_label: bool, separator: str, source, line):
    if multi_label:
        values = value if isinstance(value, list) else str(value).split(separator)
        return sorted({str(part).strip() for part in values if str(part).strip()})
    if isinstance(value, (list, dict)) or value is None or not str(value).strip():
        raise ValueError(f"{source}, line {line}: the label must be one non-empty value, got {value!r}.")
    return str(value).strip()


def read_classification_file(
    path: str | Path,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = None,
    multi_label: bool = False,
    label_separator: str = "|",
    need_labels: bool = True,
) -> ClassificationExamples:
    """Reads every example of a CSV/TSV/JSONL file (see the module docstring for formats and columns).

    Errors name the file and line: a row with too many or too few fields, a missing or
    empty label, a text that is not a string, a file without examples.
    """
    rows = read_rows(path)
    _, available = next(rows)
    text_column, text_pair_column, label_column = choose_columns(
        list(available), path, text_column, text_pair_column, label_column, need_labels)
    texts, pairs, labels, lines = [], [], [], []
    for line, row in rows:
        for column in (text_column, text_pair_column):
            if column is not None and not isinstance(row.get(column), str):
                raise ValueError(f"{path}, line {line}: column {column!r} must hold text, got {row.get(column)!r}.")
        texts.append(row[text_column])
        if text_pair_column is not None:
            pairs.append(row[text_pair_column])
        if label_column is not None:
            if label_column not in row:
                raise ValueError(f"{path}, line {line}: no {label_column!r} field.")
            labels.append(_label(row[label_column], multi_label, label_separator, path, line))
        lines.append(line)
    if not texts:
        raise ValueError(f"{path}: no examples (only a header).")
    return ClassificationExamples(
        source=str(path),
        columns=(text_column, text_pair_column, label_column),
        texts=texts,
        text_pairs=pairs if text_pair_column is not None else None,
        labels=labels if label_column is not None else None,
        lines=lines,
    )


def tokenized_dataset(
    texts: list[str], text_pairs: list[str] | None, tokenizer: BertTokenizer, seq_length: int
) -> tuple[tf.data.Dataset, np.ndarray]:
    """Each example's features, unpadded ({name: int32 [length]}), tokenized in the graph, and the lengths.

    Pairs are cut to `seq_length` as BERT does (`longest_first`: the longer text loses a
    token until both fit). The tokenized examples are cached in memory, so later epochs do
    not tokenize again.
    """
    preprocessor = BertPreprocessor(tokenizer, seq_length, truncation="longest_first", padding="longest")
    segments = list(texts) if text_pairs is None else (list(texts), list(text_pairs))
    dataset = tf.data.Dataset.from_tensor_slices(segments).batch(TOKENIZE_BATCH)

    def pack(*batch):
        features = preprocessor(batch[0] if len(batch) == 1 else batch)
        return features, tf.reduce_sum(features["input_mask"], axis=1)

    dataset = (
        dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        .map(lambda features, length: {name: value[:length] for name, value in features.items()})
        .cache()
    )
    lengths = np.concatenate([
        batch.numpy()
        for batch in dataset.map(lambda features: tf.shape(features["input_word_ids"])[0]).batch(65536)
    ]) if texts else np.zeros([0], np.int32)
    return dataset, lengths
