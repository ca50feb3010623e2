"""Corpus preparation: raw files as they come → one sentence per line, a blank line after each document."""

import logging

import pytest

pytest.importorskip("syntok")

from pipelines.corpus import prepare_corpus, read_raw_text, strip_gutenberg_boilerplate, unwrap_paragraphs  # noqa: E402

RAW_BOOK = (
    "\ufeffThe Project Gutenberg EBook of Tiny, by Nobody\r\n"
    "\r\n"
    "This eBook is for the use of anyone anywhere at no cost.\r\n"
    "\r\n"
    "*** START OF THIS PROJECT GUTENBERG EBOOK TINY ***\r\n"
    "\r\n"
    "Produced by Some Volunteers\r\n"
    "\r\n"
    "CHAPTER I.\r\n"
    "\r\n"
    "Mr. Bennet replied that he had not. It was 3.5 miles\r\n"
    "away, and they left at 5 p.m. yesterday. \u201cBut soon,\u201d he cried,\r\n"
    "\u201cI shall die. Soon these miseries will be extinct.\u201d\r\n"
    "\r\n"
    "   \r\n"
    "A caf\xe9 na\xefve sentence!\r\n"
    "\r\n"
    "End of the Project Gutenberg EBook of Tiny, by Nobody\r\n"
    "\r\n"
    "*** END OF THIS PROJECT GUTENBERG EBOOK TINY ***\r\n"
    "This file should be named tiny.txt\r\n"
)

EXPECTED_SENTENCES = [
    "CHAPTER I.",
    "Mr. Bennet replied that he had not.",
    "It was 3.5 miles away, and they left at 5 p.m. yesterday.",
    "\u201cBut soon,\u201d he cried, \u201cI shall die.",
    "Soon these miseries will be extinct.\u201d",
    "A caf\xe9 na\xefve sentence!",
]


def test_prepares_a_gutenberg_book(tmp_path):
    raw = tmp_path / "raw" / "tiny.txt"
    raw.parent.mkdir()
    raw.write_bytes(RAW_BOOK.encode("utf-8"))
    (report,) = prepare_corpus([raw], tmp_path / "out", progress=False)
    assert report.output == tmp_path / "out" / "tiny.txt"
    assert (report.sentences, report.replaced_bytes, report.gutenberg_boilerplate_removed) == (6, 0, True)
    assert report.output.read_text(encoding="utf-8") == "\n".join(EXPECTED_SENTENCES) + "\n\n"


def test_bad_bytes_are_replaced_and_reported(tmp_path, caplog):
    raw = tmp_path / "broken.txt"
    raw.write_bytes(b"One sentence here. A bad \xff\xfe byte\rand CR endings.\r\rLast \xe2\x82 one.")
    with caplog.at_level(logging.WARNING, logger="pipelines.corpus"):
        (report,) = prepare_corpus([raw], tmp_path / "out", progress=False)
    assert report.replaced_bytes == 4  # one U+FFFD per bad byte
    assert "4 bytes were not valid utf-8" in caplog.text
    assert report.output.read_text(encoding="utf-8").split("\n") == [
        "One sentence here.",
        "A bad \ufffd\ufffd byte and CR endings.",
        "Last \ufffd\ufffd one.",
        "",
        "",
    ]


def test_other_encodings_and_plain_files(tmp_path):
    raw = tmp_path / "latin.txt"
    raw.write_bytes("Caf\xe9 cr\xe8me. Second line.".encode("latin-1"))
    (report,) = prepare_corpus([raw], tmp_path / "out", progress=False, encoding="latin-1")
    assert (report.replaced_bytes, report.gutenberg_boilerplate_removed) == (0, False)
    assert report.output.read_text(encoding="utf-8") == "Caf\xe9 cr\xe8me.\nSecond line.\n\n"


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        prepare_corpus([tmp_path / "missing.txt"], tmp_path / "out", progress=False)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "book.txt").write_text("Text.", encoding="utf-8")
    with pytest.raises(ValueError, match="same output name"):
        prepare_corpus([tmp_path / "a" / "book.txt", tmp_path / "b" / "book.txt"], tmp_path / "out", progress=False)


def test_real_books(shared_data, tmp_path):
    """Two Gutenberg books (UTF-8 with BOM; ASCII): no licence text left, no text lost, sentence-sized lines."""
    sources = [shared_data / "corpus" / "84-0.txt", shared_data / "corpus" / "345.txt"]
    reports = prepare_corpus(sources, tmp_path, progress=False)
    for source, report in zip(sources, reports):
        text = report.output.read_text(encoding="utf-8")
        lines = text.split("\n")
        assert report.gutenberg_boilerplate_removed and report.replaced_bytes == 0
        assert "gutenberg" not in text.lower()
        assert lines[-2:] == ["", ""] and "" not in lines[:-2]
        assert report.sentences == len(lines) - 2 > 2500
        assert sum(len(line) for line in lines) / report.sentences < 200
        body, _ = strip_gutenberg_boilerplate(read_raw_text(source)[0])
        assert " ".join(lines).split() == " ".join(unwrap_paragraphs(body)).split()
