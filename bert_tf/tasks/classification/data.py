"""Text classification data: CSV, TSV and JSONL files → examples → model inputs tokenized in the graph.

Files are read by their suffix, as `bert_tf.tasks.data_rows` reads them (TSV without quoting, as
GLUE's files need; CSV with quoting; JSON lines).

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
    >>> spec = TaskSpec(task="classify", seq_length=128, text_pair=True)  # doctest: +SKIP
    >>> features = TextPacker(tokenizer, spec)(examples.texts, examples.text_pairs)  # doctest: +SKIP
    >>> features["input_word_ids"].row_lengths()[:3]  # doctest: +SKIP
    <tf.Tensor: shape=(3,), dtype=int64, numpy=array([30, 29, 24])>
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import tensorflow as tf

from bert_tf.tasks.data_rows import read_rows
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.text_serving import text_packer
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


class TextPacker:
    """Texts (or text pairs) → model inputs, unpadded: {name: int32 RaggedTensor [examples, (length)]}.

    Tokenization runs in the TensorFlow graph: the task's packer
    (`bert_tf.tasks.text_serving.text_packer`, which every export of the model uses too:
    texts cut to `max_text_bytes`, pairs by the task's `truncation`) in a `tf.function` (traced once per packer),
    `TOKENIZE_BATCH` texts per call. The tokens are made once per file and fed to `tf.data` from memory
    (`bert_tf.tasks.bucketing.rows_dataset`): building the tokenizer into a `tf.data` map
    instead costs seconds of graph set-up for every dataset (every file, every prediction
    call), and the examples are the same every epoch.
    """

    def __init__(self, tokenizer: BertTokenizer, spec: TaskSpec):
        packer = text_packer(tokenizer, spec)
        text_pair = self.text_pair = spec.text_pair

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * (2 if text_pair else 1))
        def pack(*segments):
            features = packer(segments)
            lengths = tf.reduce_sum(features["input_mask"], axis=1)
            return {name: tf.RaggedTensor.from_tensor(value, lengths=lengths) for name, value in features.items()}

        self._pack = pack

    def __call__(self, texts: list[str], text_pairs: list[str] | None = None) -> dict[str, tf.RaggedTensor]:
        if self.text_pair != (text_pairs is not None):
            raise ValueError("TextPacker: give text_pairs exactly when it was made with text_pair=True.")
        if not texts:
            raise ValueError("TextPacker: no texts.")
        segments = [list(texts)] + ([list(text_pairs)] if self.text_pair else [])
        chunks = [self._pack(*[tf.constant(segment[start:start + TOKENIZE_BATCH], tf.string) for segment in segments])
                  for start in range(0, len(texts), TOKENIZE_BATCH)]
        return {name: tf.concat([chunk[name] for chunk in chunks], axis=0) for name in chunks[0]}
