"""Does a training file fit its task? Checked from its name and first lines before TensorFlow is imported.

`finetune --task classify` of a CoNLL file, or `--task ner` of a CSV, would otherwise fail seconds
later, deep in the reader; here it is refused at once with the task (or `--text-column`) that fits:
"train.conll looks like CoNLL (a word and its tag per line): --task ner reads it". Only what the
first lines show is checked (the format, the columns named); the task's reader checks the rest.

Example:
    >>> file_kind("train.conll", ["EU B-ORG", "rejects O", ""])
    'conll'
    >>> file_kind("dev.jsonl", ['{"text": "a fine film", "label": 1}'])
    'table'
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from bert_tf_cli.argument_checks import did_you_mean
from bert_tf_cli.config_defaults import module_constants

FIRST_LINES = 20
TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
TAG = re.compile(r"^(O|[BIES]-\S+|-X-)$")  # a CoNLL line's last column
# The kinds of file (`file_kind`) each task's reader cannot read (bert_tf/tasks/*). NER files of tags that are not
# BIO's ("PER") look like text; a SQuAD file whose "paragraphs" come late looks like a table: neither is refused. A task
# not listed (a newer one) has its reader judge every file.
REFUSES = {"classify": ("conll", "squad", "text"), "ner": ("table", "squad"), "squad": ("conll", "text"),
           "embed": ("conll", "squad")}
KIND_NAMES = {"conll": "CoNLL (a word and its tag per line)", "squad": "SQuAD JSON (data → paragraphs → qas)",
              "table": "a table of named columns", "text": "plain text, a line each"}
TASK_OF_KIND = {"conll": "ner", "squad": "squad", "table": "classify"}


def file_kind(path: str | Path, lines: list[str]) -> str:
    """"table" (CSV/TSV with a header, JSON lines), "squad", "conll" or "text", from the name and first `lines`."""
    suffix = Path(path).suffix.lower()
    text = [line for line in lines if line.strip()]
    if suffix in TABLE_SUFFIXES or suffix in JSON_LINES_SUFFIXES:
        return "table"
    if text and text[0].lstrip().startswith("{"):
        return "squad" if '"paragraphs"' in "".join(lines) else "table"
    words = [line.split() for line in text if not line.startswith("-DOCSTART-")]
    if words and all(len(fields) >= 2 and TAG.match(fields[-1]) for fields in words):
        return "conll"
    if text and "\t" in text[0]:
        return "table"  # a tab-separated file of another name (the MSR paraphrase corpus's .txt)
    return "text"


def columns(path: str | Path, lines: list[str]) -> list[str] | None:
    """The column names of a table (a CSV/TSV header, or the keys of the first JSON line); None when unknown."""
    text = [line for line in lines if line.strip()]
    if not text:
        return None
    if text[0].lstrip().startswith("{"):
        try:
            first = json.loads(text[0])
        except json.JSONDecodeError:
            return None
        return list(first) if isinstance(first, dict) else None
    delimiter = TABLE_SUFFIXES.get(Path(path).suffix.lower(), "\t")
    quoting = csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
    return next(csv.reader([text[0].lstrip("\ufeff")], delimiter=delimiter, quoting=quoting))


def check_task_file(task: str, path: str, flag: str, text_column=None, text_pair_column=None,
                    label_column=None) -> None:
    """ValueError naming `flag` when `path` (a file) cannot be `task`'s data: of another task's format (which it
    names), or without the columns named (the closest one suggested) or a text column the task knows."""
    if not Path(path).is_file():
        return  # a folder (a BEIR dev folder), or - : the reader's to judge
    with open(path, encoding="utf-8", errors="replace") as file:
        lines = [line.rstrip("\r\n") for line, _ in zip(file, range(FIRST_LINES))]
    kind = file_kind(path, lines)
    if kind in REFUSES.get(task, ()):
        fits = TASK_OF_KIND.get(kind)
        advice = f": --task {fits} reads it" if fits else ""
        raise ValueError(f"{flag} {path} looks like {KIND_NAMES[kind]}, not --task {task}'s data{advice}.")
    if task != "classify" or kind != "table":
        return
    available = columns(path, lines)
    if available is None:
        return
    for option, column in (("--text-column", text_column), ("--text-pair-column", text_pair_column),
                           ("--label-column", label_column)):
        if column is not None and column not in available:
            raise ValueError(f"{flag} {path} has no column {column!r} ({option}){did_you_mean(column, available)} "
                             f"Its columns: {', '.join(available)}.")
    known = module_constants("bert_tf/tasks/classification/data.py")["KNOWN_COLUMNS"]
    if text_column is None and not any(text in available for text, *_ in known):
        raise ValueError(f"{flag} {path} has none of the text columns bert-tf knows ({', '.join(t for t, *_ in known)}):"
                         f" name it with --text-column, one of {', '.join(available)}.")
