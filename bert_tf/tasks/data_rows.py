"""Data files of rows with named columns — CSV, TSV and JSON lines — read the same way for every task.

Files are read by their suffix:
- `.tsv`: tab-separated with a header row and *no quoting* (csv.QUOTE_NONE), as GLUE's
  files need: MRPC's and RTE's sentences contain `"` characters that are text, not quotes.
  A byte-order mark (MRPC) is dropped.
- `.csv`: comma-separated with a header row and standard CSV quoting.
- `.jsonl` (or `.json`, `.ndjson`): one JSON object per line.
All are UTF-8 (otherwise an error names the line and byte); a field may be as long as the file
(csv's own limit is 128 KiB).

Example:
    >>> rows = read_rows("train.tsv")  # doctest: +SKIP
    >>> next(rows), next(rows)  # doctest: +SKIP
    ((1, ['sentence', 'label']), (2, {'sentence': 'a fine film', 'label': '1'}))
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterator

from bert_tf.text_files import existing_file, json_kind, utf8_lines

FORMATS = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}
MAX_FIELD_CHARACTERS = 2**31 - 1  # the most csv's field limit (a C long) takes everywhere


def file_format(path: str | Path) -> str:
    """"tsv", "csv" or "jsonl", from the file name's suffix; a file of another name whose first line holds a tab is
    tab-separated (the MSR paraphrase corpus ships as .txt)."""
    suffix = Path(path).suffix.lower()
    if suffix in FORMATS:
        return FORMATS[suffix]
    with open(path, "rb") as file:
        if b"\t" in file.readline():
            return "tsv"
    raise ValueError(f"{path}: unknown file type {suffix!r} and no tab in its first line; use one of {sorted(FORMATS)}.")


def _delimited_rows(path: Path, delimiter: str, quoting: int) -> Iterator[tuple[int, dict]]:
    # A field may be as long as the file: csv refuses fields over 128 KiB unless its (process-wide) limit is
    # raised. The limit only grows, so that readers of other files are not cut short.
    csv.field_size_limit(max(csv.field_size_limit(), min(path.stat().st_size, MAX_FIELD_CHARACTERS)))
    reader = csv.reader(utf8_lines(path, newline=""), delimiter=delimiter, quoting=quoting)
    try:
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
    except csv.Error as error:
        raise ValueError(f"{path}, line {reader.line_num}: {error}.") from None


def json_object(line: str) -> dict:
    """The JSON object that `line` holds; ValueError naming what is wrong (no file or line: callers add them).

    >>> json_object('{"text": "a fine film"}'), json_object('["a"]')  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ValueError: expected a JSON object, got list
    """
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a JSON object ({error.msg}, column {error.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _json_rows(path: Path) -> Iterator[tuple[int, dict]]:
    header_sent = False
    for line_number, line in enumerate(utf8_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json_object(line)
        except ValueError as error:
            raise ValueError(f"{path}, line {line_number}: {error}.") from None
        if not header_sent:
            yield 0, list(row)
            header_sent = True
        yield line_number, row
    if not header_sent:
        raise ValueError(f"{path}: the file is empty (expected one JSON object per line).")


def read_rows(path: str | Path) -> Iterator[tuple[int, dict]]:
    """The file's column names first (as `(line, names)`), then `(line number, {column: value})` per example."""
    path = existing_file(path)
    kind = file_format(path)
    if kind == "tsv":
        return _delimited_rows(path, "\t", csv.QUOTE_NONE)
    if kind == "csv":
        return _delimited_rows(path, ",", csv.QUOTE_MINIMAL)
    return _json_rows(path)


def row_texts(row: dict, columns: tuple[str, ...], path, line: int) -> tuple[str, ...]:
    """The texts of `columns` in `row` (line `line` of `path`); a column the row lacks, or a value that is not text
    (null, a number, a list: a JSON line's), is an error that names the line.

    Example:
        >>> row_texts({"anchor": "a fine film", "positive": None}, ("anchor", "positive"), "pairs.jsonl", 3)
        Traceback (most recent call last):
        ...
        ValueError: pairs.jsonl, line 3: positive is null, not a text.
    """
    for column in columns:
        if column not in row:
            raise ValueError(f"{path}, line {line}: no {column}; every row of this file needs {', '.join(columns)}.")
        if not isinstance(row[column], str):
            raise ValueError(f"{path}, line {line}: {column} is {json_kind(row[column])}, not a text.")
    return tuple(row[column] for column in columns)
