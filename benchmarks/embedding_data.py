"""The embedding benchmarks' data, made from the team data folder into a work folder (never into the project).

- `training_pairs`: (anchor, positive) pairs as JSONL for in-batch negatives: each question of the SQuAD subset's
  training articles with its paragraph, and MRPC's training paraphrases (label 1);
- `retrieval_set`: the subset's last `HELD_BACK_ARTICLES` articles in the BEIR layout (their questions against all
  their paragraphs), never trained on;
- `book_sentences`: plain sentences of the twelve books (`bert-tf prepare-corpus`), a seeded sample of those of
  `SENTENCE_WORDS` words, one a line, for unsupervised SimCSE.

Example:
    >>> from benchmarks.settings import Settings
    >>> folder = retrieval_set(Settings(), getfixture("tmp_path"))  # doctest: +SKIP
    >>> sorted(path.name for path in folder.iterdir())  # doctest: +SKIP
    ['corpus.jsonl', 'qrels', 'queries.jsonl']
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from benchmarks.settings import Settings

SQUAD = ("squad", "train-v1.1-subset.json")
MRPC_TRAIN = ("mrpc", "train.tsv")
BOOKS = ("corpus",)
HELD_BACK_ARTICLES = 2  # as the quality benchmark's SQuAD dev split
SENTENCE_WORDS = (6, 40)  # the lengths of the book sentences kept, in words


def _articles(settings: Settings) -> list[dict]:
    return json.loads(settings.data_file(*SQUAD).read_text(encoding="utf-8"))["data"]


def _write_jsonl(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def training_pairs(settings: Settings, work: Path, limit: int | None = None) -> Path:
    """`work/pairs.jsonl`: {anchor, positive} per SQuAD training question (its paragraph) and MRPC paraphrase."""
    pairs = [{"anchor": qa["question"].strip(), "positive": paragraph["context"].strip()}
             for article in _articles(settings)[:-HELD_BACK_ARTICLES] for paragraph in article["paragraphs"]
             for qa in paragraph["qas"]]
    lines = settings.data_file(*MRPC_TRAIN).read_text(encoding="utf-8-sig").splitlines()[1:]
    pairs += [{"anchor": fields[3], "positive": fields[4]} for fields in (line.split("\t") for line in lines)
              if len(fields) == 5 and fields[0] == "1"]
    return _write_jsonl(work / "pairs.jsonl", pairs[:limit] if limit else pairs)


def retrieval_set(settings: Settings, work: Path) -> Path:
    """`work/squad_retrieval/`: the held-back articles' questions against all their paragraphs (BEIR layout)."""
    folder = work / "squad_retrieval"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    documents, queries, judged = [], [], []
    for a, article in enumerate(_articles(settings)[-HELD_BACK_ARTICLES:]):
        for p, paragraph in enumerate(article["paragraphs"]):
            document = f"a{a}p{p}"
            documents.append({"_id": document, "text": paragraph["context"].strip()})
            for qa in paragraph["qas"]:
                queries.append({"_id": qa["id"], "text": qa["question"].strip()})
                judged.append(f"{qa['id']}\t{document}\t1")
    _write_jsonl(folder / "corpus.jsonl", documents)
    _write_jsonl(folder / "queries.jsonl", queries)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(judged) + "\n",
                                               encoding="utf-8")
    return folder


def book_sentences(settings: Settings, work: Path, count: int, seed: int = 0) -> Path:
    """`work/book_sentences.txt`: `count` sentences of the books, drawn with `seed` (the same file on every run)."""
    out = work / f"book_sentences_{count}.txt"
    if out.is_file():
        return out
    books = sorted(settings.data_file(*BOOKS).glob("*.txt"))
    prepared = work / "books"
    subprocess.run([str(Path(sys.executable).with_name("bert-tf")), "prepare-corpus", "--out", str(prepared),
                    *map(str, books)], check=True, stdout=subprocess.DEVNULL)
    low, high = SENTENCE_WORDS
    sentences = sorted({line.strip() for path in sorted(prepared.glob("*.txt"))
                        for line in path.read_text(encoding="utf-8").splitlines()
                        if low <= len(line.split()) <= high})
    chosen = random.Random(seed).sample(sentences, min(count, len(sentences)))
    out.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return out
