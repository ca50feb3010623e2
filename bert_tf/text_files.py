"""Text files that must be UTF-8: where one is not, said in one line that names the file, line and byte;
and where a path names no file (`existing_file`), said before anything else is loaded; a JSON file that is not
JSON, or not of the kind expected (`json_file`), likewise.

The readers of data files (vocabularies, classification, CoNLL and SQuAD files) read through
`utf8_lines`, or catch the `UnicodeDecodeError` of a file that is not UTF-8 (a Latin-1 or
Windows-1252 export, say) and raise `not_utf8_error(path)` instead.

Example:
    >>> Path("train.tsv").write_bytes(b"sentence\\tlabel\\ncaf\\xe9\\t1\\n")  # doctest: +SKIP
    >>> print(not_utf8_error("train.tsv"))  # doctest: +SKIP
    train.tsv, line 2, byte offset 18: the file is not UTF-8 (re-save it as UTF-8); byte 0xe9 starts no UTF-8 character.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator


def first_non_utf8_byte(lines: Iterable[bytes]) -> tuple[int, int, int] | None:
    """`(line, byte offset, byte)` of the first byte of `lines` that is not UTF-8 (lines 1-based); None if all are.

    `lines` are consecutive pieces of a file split after b"\\n" (as a binary file iterates): no
    UTF-8 character contains that byte, so each line decodes on its own.
    """
    offset = 0
    for line_number, line in enumerate(lines, start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            return line_number, offset + error.start, line[error.start]
        offset += len(line)
    return None


def not_utf8_message(path, line: int, offset: int, byte: int) -> str:
    """The one-line message for a file's first byte that is not UTF-8 (see `first_non_utf8_byte`)."""
    return (f"{path}, line {line}, byte offset {offset}: the file is not UTF-8 (re-save it as UTF-8); "
            f"byte 0x{byte:02x} starts no UTF-8 character.")


def not_utf8_error(path: str | Path) -> ValueError:
    """The error for a file that failed to decode as UTF-8, naming its first bad byte's line and offset.

    The bytes are read again to find it: text readers decode ahead in blocks, so the line a
    reader had reached when decoding failed is not where the bad byte is.
    """
    with open(path, "rb") as file:
        line, offset, byte = first_non_utf8_byte(file)
    return ValueError(not_utf8_message(path, line, offset, byte))


def utf8_lines(path: str | Path, newline: str | None = None) -> Iterator[str]:
    """The lines of a UTF-8 text file, a byte-order mark dropped (`newline` as `open` takes it; csv needs "").

    A file that is not UTF-8 raises `not_utf8_error`.
    """
    with open(path, encoding="utf-8-sig", newline=newline) as file:
        try:
            yield from file
        except UnicodeDecodeError:
            raise not_utf8_error(path) from None


def existing_file(path: str | Path, what: str = "Data file", flag: str = "--data") -> Path:
    """`path`, if it is a file; else FileNotFoundError, or IsADirectoryError for a folder, each in one line."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder: name the {what.lower()} in it ({flag}).")
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    return path


def json_file(path: str | Path, expected: type | None = None):
    """The JSON value in the UTF-8 file `path`; a file that is not JSON (or, with `expected`, whose value is not of that
    type: `dict` or `list`) is an error in one line that names it.

    Example:
        >>> json_file("modules.json", list)  # doctest: +SKIP
        Traceback (most recent call last):
        ...
        ValueError: modules.json: a list expected, got an object.
    """
    try:
        value = json.loads("".join(utf8_lines(path)))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg}, line {error.lineno}).") from None
    if expected is not None and not isinstance(value, expected):
        raise ValueError(f"{path}: {json_kind(expected())} expected, got {json_kind(value)}.")
    return value


def json_kind(value) -> str:
    """What a JSON value is, in words: "an object", "a list", "a string", "a number", "true/false" or "null".

    Example:
        >>> json_kind({}), json_kind([1]), json_kind(None), json_kind(True), json_kind(2.5)
        ('an object', 'a list', 'null', 'true/false', 'a number')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    kinds = ((dict, "an object"), (list, "a list"), (str, "a string"), ((int, float), "a number"))
    return next((name for kind, name in kinds if isinstance(value, kind)), type(value).__name__)
