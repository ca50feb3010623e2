"""`read_corpus`: the documents of a search index (`bert-tf index --corpus`), checked, in one pass.

A corpus is a `.jsonl` file (BEIR's `corpus.jsonl`: `{"_id", "title", "text"}`, title and text joined as BEIR's
sentence-transformers models read them; or `{"id", "text"}`) or a `.txt` file, a document per line (ids: the
line numbers; blank lines are no documents).

Refused, in one line naming the file and line: a line that is not a JSON object, a document without an id or a
text, an id that cannot be asked for (empty, or not a string or number), an id given twice (both lines named).
Kept with one warning counting them: documents whose text and title are empty or blank (no query finds them by
their words), and titles that are not text (left out; the text is indexed).

>>> path = getfixture("tmp_path") / "docs.jsonl"
>>> _ = path.write_text('{"_id": "a", "title": "Paris", "text": "The capital."}\\n{"id": 7, "text": "Berlin."}\\n')
>>> read_corpus(path)
(['a', '7'], ['Paris The capital.', 'Berlin.'])
"""

from __future__ import annotations

import logging
from pathlib import Path

from bert_tf.tasks.data_rows import json_object
from bert_tf.text_files import existing_file, utf8_lines

logger = logging.getLogger(__name__)
SHOWN_LINES = 10  # line numbers a warning lists


def _document_id(row: dict, where: str) -> str:
    identifier = row.get("_id", row.get("id"))
    if identifier is None or not isinstance(row.get("text"), str):
        raise ValueError(f"{where}: a document needs an \"_id\" (or \"id\") and a \"text\".")
    if isinstance(identifier, bool) or not isinstance(identifier, (str, int, float)):
        raise ValueError(f"{where}: the document id {identifier!r} is a {type(identifier).__name__}; "
                         "ids are strings (or numbers).")
    if not str(identifier).strip():
        raise ValueError(f"{where}: the document id is empty; give every document an id to find it by.")
    return str(identifier)


def _warn(path: Path, lines: list[int], what: str) -> None:
    if lines:
        shown = ", ".join(map(str, lines[:SHOWN_LINES])) + (" ..." if len(lines) > SHOWN_LINES else "")
        logger.warning("%s: %d document(s) %s (lines %s).", path, len(lines), what, shown)


def read_corpus(path: str | Path) -> tuple[list[str], list[str]]:
    """(ids, texts) of a corpus file (module docstring); one-line errors name the file and line."""
    path = existing_file(path, "Corpus", "--corpus")
    ids, texts, line_of_id = [], [], {}
    blank, odd_titles = [], []
    for number, line in enumerate(utf8_lines(path), start=1):
        if not line.strip():
            continue
        if path.suffix.lower() == ".txt":
            identifier, text = str(number), line.strip()
        else:
            try:
                row = json_object(line)
            except ValueError as error:
                raise ValueError(f"{path}, line {number}: {error}.") from None
            identifier = _document_id(row, f"{path}, line {number}")
            title = row.get("title")
            if title is not None and not isinstance(title, str):
                odd_titles.append(number)
                title = None
            text = f"{title or ''} {row['text']}".strip()
            if not text:
                blank.append(number)
        if identifier in line_of_id:
            raise ValueError(f"{path}: the document id {identifier!r} is on line {line_of_id[identifier]} and "
                             f"line {number}; ids must be unique.")
        line_of_id[identifier] = number
        ids.append(identifier)
        texts.append(text)
    if not texts:
        raise ValueError(f"{path}: the corpus has no documents.")
    _warn(path, blank, "have an empty text and title: kept, but no query finds them by their words")
    _warn(path, odd_titles, "have a title that is not text: left out, the text is indexed")
    return ids, texts
