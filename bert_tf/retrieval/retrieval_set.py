"""A retrieval test set in the BEIR/MTEB layout: documents, queries, and the documents relevant to each query.

The folder holds (as BEIR distributes its sets):
- `corpus.jsonl`, a document a line: `{"_id", "title", "text"}`, the title optional;
- `queries.jsonl`, a query a line: `{"_id", "text"}`;
- `qrels/<split>.tsv`: a header `query-id<TAB>corpus-id<TAB>score`, then a judged pair a line;
  a score above 0 is the document's relevance grade, 0 or less judges it not relevant.
A document's text is `(title + " " + text).strip()`, as BEIR's and MTEB's sentence-transformers
models encode it (the text alone, stripped, without a title). Only the queries with a relevant
document in the split are kept, in the order of queries.jsonl. A pair listed twice keeps its last
score, as BEIR's loader does.

Example:
    >>> folder = getfixture("tmp_path")
    >>> _ = (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "Paris", "text": "The capital of France."}\\n'
    ...                                          '{"_id": "d2", "text": "Berlin is in Germany."}\\n')
    >>> _ = (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "capital of France"}\\n')
    >>> (folder / "qrels").mkdir()
    >>> _ = (folder / "qrels" / "test.tsv").write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\n")
    >>> retrieval_set = read_retrieval_set(folder)
    >>> retrieval_set.documents, retrieval_set.queries, retrieval_set.relevant
    (['Paris The capital of France.', 'Berlin is in Germany.'], ['capital of France'], [{0: 1}])
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

from bert_tf.tasks.data_rows import read_rows

QRELS_COLUMNS = ["query-id", "corpus-id", "score"]


@dataclasses.dataclass
class RetrievalSet:
    """A corpus, the queries to look up in it, and the relevant documents of each query (by index)."""

    document_ids: list[str]
    documents: list[str]  # (title + " " + text).strip()
    query_ids: list[str]
    queries: list[str]
    relevant: list[dict[int, int]]  # per query: {document index: relevance grade > 0}, as `retrieval_scores` takes it


def _missing(folder: Path, name: str) -> FileNotFoundError:
    contents = sorted(f"{path.name}/" if path.is_dir() else path.name for path in folder.iterdir())
    return FileNotFoundError(f"{folder}: no {name} in the folder (it has: {', '.join(contents) or 'nothing'}).")


def _string(record: dict, key: str, where: str) -> str:
    if key not in record:
        raise ValueError(f"{where}: missing key {key!r}.")
    if not isinstance(record[key], str):
        raise ValueError(f"{where}: {key!r} must be a string, got {type(record[key]).__name__}.")
    return record[key]


def _records(path: Path, what: str) -> Iterator[tuple[str, str, dict]]:
    """`(id, where, record)` for each line of a JSON-lines file of records with distinct string `_id`s."""
    if path.stat().st_size == 0:
        raise ValueError(f"{path} has no {what}.")
    rows = read_rows(path)
    next(rows)  # the first record's keys
    line_of_id = {}
    for line, record in rows:
        where = f"{path}, line {line}"
        record_id = _string(record, "_id", where)
        if record_id in line_of_id:
            raise ValueError(f"{where}: _id {record_id!r} is already on line {line_of_id[record_id]}.")
        line_of_id[record_id] = line
        yield record_id, where, record


def _read_corpus(path: Path) -> dict[str, str]:
    """{document id: text}, in the file's order."""
    corpus = {}
    for document_id, where, record in _records(path, "documents"):
        title = _string(record, "title", where) if "title" in record else ""
        corpus[document_id] = f"{title} {_string(record, 'text', where)}".strip()
    return corpus


def _read_qrels(path: Path, query_ids: set[str], document_ids: set[str]) -> dict[str, dict[str, int]]:
    """{query id: {document id: relevance grade}}, of the pairs scored above 0."""
    rows = read_rows(path)
    _, header = next(rows)
    if header != QRELS_COLUMNS:
        raise ValueError(f"{path}, line 1: expected the header {'<TAB>'.join(QRELS_COLUMNS)}, "
                         f"got {'<TAB>'.join(header)}.")
    qrels = {}
    for line, row in rows:
        query_id, document_id, score = (row[column] for column in QRELS_COLUMNS)
        if query_id not in query_ids:
            raise ValueError(f"{path}, line {line}: query {query_id!r} is not in queries.jsonl.")
        if document_id not in document_ids:
            raise ValueError(f"{path}, line {line}: document {document_id!r} is not in corpus.jsonl.")
        try:
            qrels.setdefault(query_id, {})[document_id] = int(score)
        except ValueError:
            raise ValueError(f"{path}, line {line}: score {score!r} is not an integer.") from None
    relevant = {query_id: {document_id: score for document_id, score in scores.items() if score > 0}
                for query_id, scores in qrels.items()}
    return {query_id: grades for query_id, grades in relevant.items() if grades}


def read_retrieval_set(folder: str | Path, split: str = "test") -> RetrievalSet:
    """The documents, the queries with a relevant document in `qrels/<split>.tsv`, and their relevant documents."""
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder (expected corpus.jsonl, queries.jsonl and qrels/).")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise _missing(folder, name)
    if not (folder / "qrels").is_dir():
        raise _missing(folder, "qrels/")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = ", ".join(sorted(path.stem for path in qrels_path.parent.glob("*.tsv"))) or "none"
        raise FileNotFoundError(f"{qrels_path.parent}: no split {split!r} (splits found: {splits}).")
    corpus = _read_corpus(folder / "corpus.jsonl")
    queries = {query_id: _string(record, "text", where)
               for query_id, where, record in _records(folder / "queries.jsonl", "queries")}
    qrels = _read_qrels(qrels_path, set(queries), set(corpus))
    if not qrels:
        raise ValueError(f"{qrels_path}: no query has a relevant document (a score above 0).")
    document_index = {document_id: index for index, document_id in enumerate(corpus)}
    query_ids = [query_id for query_id in queries if query_id in qrels]
    return RetrievalSet(
        document_ids=list(corpus),
        documents=list(corpus.values()),
        query_ids=query_ids,
        queries=[queries[query_id] for query_id in query_ids],
        relevant=[{document_index[document_id]: grade for document_id, grade in qrels[query_id].items()}
                  for query_id in query_ids],
    )
