"""What a reranker is scored on: lists of (query, document) pairs to score, each query's list ranked by the scores.

`RankingData` holds every pair to score, in order, with the query (`rows`) and the place in its list (`columns`)
of each, and per query its relevant documents by place; a relevant document that is not in the list has a place
after the list's, where it is never scored (found by no reranking, but counted in the ideal ranking and the recall).
Places never scored hold -inf; `UNFOUND_PLACES` more after them, never relevant, come first among those in the
metrics' order (of equal scores, the larger place first: `bert_tf.tasks.embedding.metrics`), so that a list shorter
than the metrics' depth is followed by those, not by the relevant documents it missed. Made from:
- a BEIR retrieval set (`first_stage_candidates`): each query's list is BM25's top `top_k` of the whole corpus
  (`bert_tf.retrieval.bm25.BM25Index`), and BM25's scores are kept to report the first stage's own ranking;
- a file of groups (`bert_tf.tasks.rerank.data`): each row's positive and negatives, the positive relevant;
- pairs: the documents of each query (pairs of the same query text), those labelled 0.5 or more relevant; pairs
  without labels (texts to score) in their order.

Example:
    >>> from bert_tf.retrieval.retrieval_set import RetrievalSet
    >>> corpus = RetrievalSet(["d0", "d1", "d2"], ["cats purr", "dogs bark", "cats and dogs"], ["q0"], ["cats"],
    ...                       [{0: 1}])
    >>> data = first_stage_candidates(corpus, top_k=2)
    >>> data.documents, data.columns.tolist(), data.relevant
    (['cats purr', 'cats and dogs'], [0, 1], [{0: 1}])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bert_tf.retrieval.bm25 import BM25Index
from bert_tf.retrieval.retrieval_set import RetrievalSet

UNFOUND_PLACES = 100  # the deepest the metrics look (nDCG@10, Recall@k for k up to this)
RELEVANT_LABEL = 0.5  # a labelled pair at least this relevant counts as relevant when ranking


@dataclasses.dataclass
class RankingData:
    """Pairs to score (module docstring)."""

    queries: list[str]  # the query of each pair
    documents: list[str]  # the document of each pair
    rows: np.ndarray  # int [pairs]: the query's index among the lists
    columns: np.ndarray  # int [pairs]: the document's place in its query's list
    relevant: list[dict[int, int]]  # per query: {place: grade > 0}, places past the list for documents not in it
    width: int  # places per list, those past the lists included
    first_stage: np.ndarray | None = None  # float32 [queries, width]: the first stage's scores (-inf: not found)

    def score_matrix(self, scores) -> np.ndarray:
        """float64 [queries, width]: `scores` (one per pair) at each pair's place, -inf where no pair is."""
        matrix = np.full((len(self.relevant), self.width), -np.inf)
        matrix[self.rows, self.columns] = np.asarray(scores, np.float64).reshape(-1)
        return matrix


def first_stage_candidates(retrieval_set: RetrievalSet, top_k: int) -> RankingData:
    """Each query of `retrieval_set` with BM25's best `top_k` documents of its corpus (module docstring)."""
    indices, scores = BM25Index(retrieval_set.documents).search(retrieval_set.queries, top_k)
    k = indices.shape[1]
    relevant, missed = [], []
    for found, grades in zip(indices.tolist(), retrieval_set.relevant):
        place = {document: column for column, document in enumerate(found)}
        outside = [document for document in sorted(grades) if document not in place]
        place.update({document: k + number for number, document in enumerate(outside)})
        relevant.append({place[document]: grade for document, grade in grades.items()})
        missed.append(len(outside))
    width = k + max(missed) + UNFOUND_PLACES
    first_stage = np.full((len(indices), width), -np.inf, np.float32)
    first_stage[:, :k] = scores
    return RankingData([query for query in retrieval_set.queries for _ in range(k)],
                       [retrieval_set.documents[index] for index in indices.reshape(-1)],
                       np.repeat(np.arange(len(indices)), k), np.tile(np.arange(k), len(indices)), relevant, width,
                       first_stage)


def listed_pairs(queries: list[str], documents: list[tuple[str, ...]], labels: list[float] | None) -> RankingData:
    """The pairs of groups (each row a list, its first document relevant) or of single documents (`labels`, one
    per pair, or None; a list per query text) in their order (module docstring)."""
    if len(documents[0]) > 1:
        rows = np.repeat(np.arange(len(queries)), [len(group) for group in documents])
        columns = np.concatenate([np.arange(len(group)) for group in documents])
        return RankingData([query for query, group in zip(queries, documents) for _ in group],
                           [document for group in documents for document in group], rows, columns,
                           [{0: 1} for _ in queries], max(len(group) for group in documents) + UNFOUND_PLACES)
    lists: dict[str, int] = {}
    rows = np.array([lists.setdefault(query, len(lists)) for query in queries])
    columns = np.zeros(len(queries), int)
    counts = np.zeros(len(lists), int)
    relevant: list[dict[int, int]] = [{} for _ in lists]
    for pair, row in enumerate(rows):
        columns[pair] = counts[row]
        counts[row] += 1
        if labels is not None and labels[pair] >= RELEVANT_LABEL:
            relevant[row][int(columns[pair])] = 1
    return RankingData(list(queries), [group[0] for group in documents], rows, columns, relevant,
                       int(counts.max()) + UNFOUND_PLACES)
