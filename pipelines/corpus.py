"""Corpus preparation: raw text files → BERT's pretraining text format.

The format google-research/bert's `create_pretraining_data` reads: one sentence per line, a blank
line between documents. Each raw file becomes one document, written to `out_dir/<name>.txt`.

What real files bring, and what happens to it:
- a byte-order mark: dropped; CRLF or CR line endings: become LF;
- bytes that are not valid in the file's encoding: each replaced by U+FFFD and counted in the
  report (and logged), never an exception;
- Project Gutenberg's licence header and footer: removed (everything before the
  "*** START OF ... PROJECT GUTENBERG EBOOK" line, the "Produced by ..." credit after it, and
  everything from "End of the Project Gutenberg EBook" or "*** END OF ..." on);
- hard-wrapped paragraphs (blank-line separated): unwrapped into one line each, whitespace runs
  collapsed, then split into sentences by `syntok` (rule-based; it keeps "Mr. Bennet", "3.5" and
  "p.m." whole, which tensorflow-text's `StateBasedSentenceBreaker` does not, and splits inside
  long quoted speech, which `sentencex` does not).

Example:
    >>> reports = prepare_corpus(["corpus/84-0.txt"], "pretraining_text")  # doctest: +SKIP
    >>> reports[0].sentences, reports[0].gutenberg_boilerplate_removed  # doctest: +SKIP
    (3542, True)
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from pathlib import Path
from typing import Sequence

import syntok.segmenter

from bert_tf.progress import progress_bar

logger = logging.getLogger(__name__)

# Project Gutenberg's boilerplate markers, matched by hand: no maintained library strips them
# (the `gutenberg` package that once did is unmaintained and heavy).
_GUTENBERG_START = re.compile(
    r"^\*{3}\s*START OF (THE|THIS) PROJECT GUTENBERG E-?BOOK.*$", re.IGNORECASE | re.MULTILINE
)
_GUTENBERG_END = re.compile(
    r"^(\*{3}\s*END OF (THE|THIS) PROJECT GUTENBERG E-?BOOK|End of (the )?Project Gutenberg).*$",
    re.IGNORECASE | re.MULTILINE,
)
_GUTENBERG_CREDIT = re.compile(
    r"^\s*(Produced by|E-?text prepared by|Transcribed from)\b[^\n]*(\n[^\n]+)*", re.IGNORECASE
)
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # how errors="surrogateescape" marks a bad byte


@dataclasses.dataclass(frozen=True)
class PreparedFile:
    """What `prepare_corpus` did with one raw file."""

    source: Path
    output: Path
    sentences: int
    replaced_bytes: int  # bytes not valid in the encoding, written as U+FFFD
    gutenberg_boilerplate_removed: bool


def prepare_corpus(
    raw_files: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    progress: bool = True,
    encoding: str = "utf-8",
) -> list[PreparedFile]:
    """Writes each raw file as one document of BERT pretraining text into `out_dir`; returns a report per file."""
    sources = [Path(f) for f in raw_files]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"Raw text files not found: {missing}")
    names = [p.stem for p in sources]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ValueError(f"Raw files would write the same output name: {clashes}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    reports = []
    total_bytes = sum(p.stat().st_size for p in sources)
    with progress_bar(total=total_bytes, unit="B", unit_scale=True, desc="preparing corpus",
                      disable=not progress) as bar:
        for source in sources:
            text, replaced = read_raw_text(source, encoding)
            if replaced:
                logger.warning("%s: %d bytes were not valid %s; written as U+FFFD.", source, replaced, encoding)
            text, boilerplate_removed = strip_gutenberg_boilerplate(text)
            sentences = [s for paragraph in unwrap_paragraphs(text) for s in split_sentences(paragraph)]
            if not sentences:
                logger.warning("%s holds no text: nothing was written for it.", source)
                bar.update(source.stat().st_size)
                continue
            output = out_dir / f"{source.stem}.txt"
            output.write_text("".join(f"{s}\n" for s in sentences) + "\n", encoding="utf-8")
            reports.append(PreparedFile(source, output, len(sentences), replaced, boilerplate_removed))
            bar.update(source.stat().st_size)
    return reports


def read_raw_text(path: Path, encoding: str = "utf-8") -> tuple[str, int]:
    """The file's text with LF line endings and no BOM, and how many bytes could not be decoded."""
    data = path.read_bytes()
    if encoding.replace("_", "-").lower() in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # drops a BOM
    text = data.decode(encoding, errors="surrogateescape")
    text, replaced = _UNDECODABLE.subn("\ufffd", text)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return text, replaced


def strip_gutenberg_boilerplate(text: str) -> tuple[str, bool]:
    """The text without Project Gutenberg's licence header and footer; and whether there were any."""
    start = _GUTENBERG_START.search(text)
    if start is None:
        return text, False
    body = text[start.end():]
    end = _GUTENBERG_END.search(body)
    if end is not None:
        body = body[: end.start()]
    body = body.lstrip("\n")
    return _GUTENBERG_CREDIT.sub("", body, count=1), True


def unwrap_paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks, each joined into one line with single spaces."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph (syntok), stripped, without empty ones, the text unchanged."""
    # Sliced at each sentence's first token: syntok's token values are normalized ("don't" → "do", "not").
    starts = [sentence[0].offset for block in syntok.segmenter.process(paragraph) for sentence in block if sentence]
    pieces = (paragraph[start:end] for start, end in zip(starts, starts[1:] + [len(paragraph)]))
    return [piece.strip() for piece in pieces if piece.strip()]
