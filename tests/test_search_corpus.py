"""The corpus of a search index (`bert-tf index --corpus`): refused in one line where a document cannot be searched,
warned about with counts where it is kept, duplicate ids found in linear time."""

import json
import time

import pytest

from serving.export.search_corpus import read_corpus


@pytest.mark.parametrize("name, text, message", [
    ("empty.jsonl", "\n", "the corpus has no documents"),
    ("bad.jsonl", "{nope\n", r"line 1: not a JSON object"),
    ("keys.jsonl", '{"_id": "a"}\n', r'line 1: a document needs an "_id" \(or "id"\) and a "text"'),
    ("twice.jsonl", '{"id": "a", "text": "x"}\n\n{"id": "a", "text": "y"}\n',
     "the document id 'a' is on line 1 and line 3; ids must be unique"),
    ("blank_id.jsonl", '{"_id": " ", "text": "x"}\n', "line 1: the document id is empty"),
    ("object_id.jsonl", '{"_id": "a", "text": "x"}\n{"_id": {"n": 1}, "text": "y"}\n',
     r"line 2: the document id \{'n': 1\} is a dict; ids are strings"),
    ("list_id.jsonl", '{"_id": ["a"], "text": "x"}\n', "line 1: the document id .* is a list"),
    ("bool_id.jsonl", '{"_id": true, "text": "x"}\n', "line 1: the document id True is a bool"),
])
def test_bad_corpora_are_refused_in_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_corpus(path)


def test_what_is_kept_is_counted(tmp_path, caplog):
    path = tmp_path / "odd.jsonl"
    rows = [{"_id": "a", "text": "  "}, {"_id": 2, "title": 7, "text": "seven"}, {"_id": "c", "title": {"x": 1},
                                                                                  "text": ""},
            {"_id": "d", "title": "Title", "text": " "}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert read_corpus(path) == (["a", "2", "c", "d"], ["", "seven", "", "Title"])
    assert "2 document(s) have an empty text and title: kept, but no query finds them by their words (lines 1, 3)" \
        in caplog.text
    assert "2 document(s) have a title that is not text: left out, the text is indexed (lines 2, 3)" in caplog.text


def test_a_repeated_id_among_many_is_found_at_once(tmp_path):
    path = tmp_path / "many.jsonl"
    count = 60_000
    path.write_text("".join(f'{{"_id": "{i}", "text": "x"}}\n' for i in range(count)) + '{"_id": "7", "text": "y"}\n')
    start = time.monotonic()
    with pytest.raises(ValueError, match=f"the document id '7' is on line 8 and line {count + 1}"):
        read_corpus(path)
    assert time.monotonic() - start < 10  # a list's count per id took minutes at this size


def test_a_text_file_is_a_document_per_line(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("first document\n\n   \nsecond one\n")
    assert read_corpus(path) == (["1", "4"], ["first document", "second one"])
