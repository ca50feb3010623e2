"""CoNLL column files (CoNLL-2003 NER) and their tag schemes, BIO and IOB1.

Format: one word per line, its columns separated by whitespace, the word first and the
tag last (`EU NNP B-NP B-ORG`); a blank line between sentences; `-DOCSTART-` lines (and
the blank line after them) are skipped.

Tag schemes. Both use `B-X`, `I-X` and `O`:
- BIO (IOB2): every entity starts with `B-X`.
- IOB1 (the original CoNLL-2003 release): entities start with `I-X`; `B-X` only starts an
  entity that directly follows another of the same type.
The shared copy of CoNLL-2003 is BIO already (its SOURCE.md; `tag_scheme` confirms it).
Training always uses BIO: `to_bio` rewrites an IOB1 `I-X` that starts an entity as `B-X`,
so that every entity start has one label whatever the file's scheme. It keeps the
entities exactly as conlleval reads them (`bert_tf.tasks.ner.metrics`), so scores computed
against BIO tags equal scores against the file's own tags.

Example:
    >>> to_bio(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC']
    >>> tag_scheme([["I-PER", "I-PER", "O"]])
    'IOB1'
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

from bert_tf.text_files import existing_file, utf8_lines

DOCSTART = "-DOCSTART-"


@dataclasses.dataclass
class Sentence:
    """The words of one sentence, their tags (None when the file has none), and where it starts in its file."""

    words: list[str]
    tags: list[str] | None
    line: int  # 1-based line of the first word
    word_lines: list[int] | None = None  # the line of each word (to name it in errors)


def _check_tag(tag: str, source, line: int) -> str:
    if tag == "O":
        return tag
    prefix, dash, entity_type = tag.partition("-")
    if prefix not in ("B", "I") or not dash or not entity_type:
        raise ValueError(f"{source}, line {line}: tag {tag!r} is not 'O', 'B-<type>' or 'I-<type>' (BIO or IOB1).")
    return tag


def read_conll(path: str | Path, need_tags: bool = True) -> list[Sentence]:
    """The sentences of a CoNLL file. With `need_tags`, every word line must have a tag column.

    Without `need_tags`, a line with one column is a word without a tag (the sentence's
    tags are then None), e.g. a file of words to tag.
    """
    path = existing_file(path)
    sentences: list[Sentence] = []
    words, tags, lines = [], [], []

    def close_sentence():
        if words:
            if tags and len(tags) != len(words):
                raise ValueError(f"{path}, line {lines[0]}: some words of this sentence have a tag and some do not.")
            sentences.append(Sentence(list(words), list(tags) if tags else None, lines[0], list(lines)))
        words.clear(), tags.clear(), lines.clear()

    for line_number, line in enumerate(utf8_lines(path), start=1):
        columns = line.split()
        if not columns:
            close_sentence()
            continue
        if columns[0] == DOCSTART:
            close_sentence()
            continue
        if len(columns) == 1 and need_tags:
            raise ValueError(
                f"{path}, line {line_number}: expected 'word ... tag' (whitespace-separated columns), "
                f"got {line.rstrip()!r}."
            )
        if len(columns) > 1:
            tags.append(_check_tag(columns[-1], path, line_number))
        words.append(columns[0])
        lines.append(line_number)
    close_sentence()
    if not sentences:
        raise ValueError(f"{path}: no sentences (the file is empty or holds only -DOCSTART- lines).")
    return sentences


def _starts_entity(tag: str, previous: str) -> bool:
    """An `I-X` that conlleval reads as the start of a new entity (after `O`, at the start, or after another type)."""
    return tag.startswith("I-") and previous[2:] != tag[2:]


def to_bio(tags: Sequence[str]) -> list[str]:
    """BIO tags of the same entities: an `I-X` that starts an entity becomes `B-X` (IOB1 → BIO; BIO unchanged)."""
    bio = []
    previous = "O"
    for tag in tags:
        bio.append("B-" + tag[2:] if _starts_entity(tag, previous) else tag)
        previous = tag
    return bio


def tag_scheme(tag_sequences: Sequence[Sequence[str]]) -> str:
    """"IOB1" if some entity starts with `I-`, else "BIO"."""
    for tags in tag_sequences:
        previous = "O"
        for tag in tags:
            if _starts_entity(tag, previous):
                return "IOB1"
            previous = tag
    return "BIO"
