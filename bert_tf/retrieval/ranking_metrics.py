"""Retrieval scores as the embedding community reports them (BEIR, MTEB), in NumPy.

Recall@k, MRR@10 and nDCG@10 × 100 from the full query × document score matrix,
averaged over the queries that have a relevant document, as BEIR and MTEB report them through
pytrec_eval: trec_eval's `recall_k` (relevant documents in the top k / all relevant documents),
`recip_rank` counted in the top 10 only (0 when the first relevant document is lower), and
`ndcg_cut_10` (the relevance grades are the gains, discounted by log2(rank + 1)).

Ties: trec_eval ranks a query's documents by score descending, then by document id descending
(as strings). Here, of two documents with the same score, the one with the larger index ranks
first: trec_eval's order when the ids sort as the indices do (zero-padded numbers, say).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

CUTOFF = 10  # MRR and nDCG look at the top 10 documents (nDCG@10 is MTEB's main retrieval score)
SCORES_PER_CHUNK = 1 << 22  # queries are ranked in chunks of at most this many scores (about 100 MB of work arrays)


def _check_relevant(relevant: Sequence[Mapping[int, int]], queries: int, documents: int) -> None:
    if len(relevant) != queries:
        raise ValueError(f"retrieval_scores: {queries} queries in the scores but {len(relevant)} in `relevant`.")
    for query, grades in enumerate(relevant):
        for document, grade in grades.items():
            if not isinstance(document, (int, np.integer)) or not 0 <= document < documents:
                raise ValueError(f"retrieval_scores: query {query}: document {document!r} is not an index "
                                 f"of the {documents} documents.")
            if not isinstance(grade, (int, np.integer)) or grade <= 0:
                raise ValueError(f"retrieval_scores: query {query}, document {document}: relevance {grade!r} "
                                 "is not a positive integer.")


def _top_documents(scores: np.ndarray, k: int) -> np.ndarray:
    """[queries, k]: each row's k best column indices, best first, by score descending and then index descending.

    Only the k-th best score is searched for (`np.partition`); the documents scoring at least that
    much are then sorted, all of them, so that a tie at the k-th place keeps the larger indices.
    """
    kth_best = np.partition(scores, scores.shape[1] - k, axis=1)[:, -k, None]
    rows, columns = np.nonzero(scores >= kth_best)
    order = np.lexsort((-columns, -scores[rows, columns], rows))
    per_row = np.bincount(rows, minlength=len(scores))
    place_in_row = np.arange(len(rows)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    return columns[order][place_in_row < k].reshape(len(scores), k)


def _per_query(top: np.ndarray, relevant: Sequence[Mapping[int, int]], ks: Sequence[int]) -> dict[str, np.ndarray]:
    """nDCG@10, MRR@10 and Recall@k (fractions) of each query, from its best documents in order (a row of `top`)."""
    grades = np.array([[judged.get(document, 0) for document in row] for judged, row in zip(relevant, top)])
    discounts = 1 / np.log2(np.arange(2, min(CUTOFF, top.shape[1]) + 2))
    ideal = [sorted(judged.values(), reverse=True)[:len(discounts)] for judged in relevant]
    found = grades > 0
    first_found = found[:, :CUTOFF].argmax(axis=1)
    ideal_gains = np.array([np.dot(gains, discounts[:len(gains)]) for gains in ideal])
    relevant_counts = np.array([len(judged) for judged in relevant])
    return {
        "ndcg@10": grades[:, :CUTOFF] @ discounts / ideal_gains,
        "mrr@10": np.where(found[:, :CUTOFF].any(axis=1), 1 / (first_found + 1), 0.0),
        **{f"recall@{k}": found[:, :k].sum(axis=1) / relevant_counts for k in ks},
    }


def retrieval_scores(scores, relevant: Sequence[Mapping[int, int]], ks: Sequence[int] = (1, 10, 100)) -> dict:
    """nDCG@10, MRR@10 and Recall@k × 100 over the queries with a relevant document, and how many those are.

    `scores`: float [queries, documents], every document scored for every query. `relevant`: per
    query, {document index: relevance grade, a positive integer}; a query with none is left out.

    >>> similarities = [[0.9, 0.8, 0.1], [0.2, 0.3, 0.7], [0.5, 0.5, 0.5]]
    >>> scores = retrieval_scores(similarities, [{1: 1}, {2: 2, 0: 1}, {}], ks=(1, 3))
    >>> {name: round(value, 2) for name, value in scores.items()}
    {'ndcg@10': 79.06, 'mrr@10': 75.0, 'recall@1': 25.0, 'recall@3': 100.0, 'queries': 2}
    """
    scores = np.asarray(scores)
    if scores.ndim != 2 or scores.shape[1] == 0 or scores.dtype.kind != "f":
        raise ValueError(f"retrieval_scores: expected a float matrix [queries, documents], "
                         f"got {scores.dtype} of shape {scores.shape}.")
    if any(not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
        raise ValueError(f"retrieval_scores: ks must be positive integers, got {tuple(ks)}.")
    _check_relevant(relevant, *scores.shape)
    judged = [query for query, grades in enumerate(relevant) if grades]
    if not judged:
        raise ValueError("retrieval_scores: no query has a relevant document.")
    depth = min(max([CUTOFF, *ks]), scores.shape[1])
    queries_per_chunk = max(1, SCORES_PER_CHUNK // scores.shape[1])
    totals = dict.fromkeys(["ndcg@10", "mrr@10", *(f"recall@{k}" for k in ks)], 0.0)
    for start in range(0, len(judged), queries_per_chunk):
        chunk = judged[start:start + queries_per_chunk]
        chunk_scores = scores[chunk]
        nan_rows = np.isnan(chunk_scores).any(axis=1)
        if nan_rows.any():
            raise ValueError(f"retrieval_scores: query {chunk[nan_rows.argmax()]} has a NaN score.")
        per_query = _per_query(_top_documents(chunk_scores, depth), [relevant[query] for query in chunk], ks)
        for name, values in per_query.items():
            totals[name] += values.sum()
    return {**{name: float(100 * total / len(judged)) for name, total in totals.items()}, "queries": len(judged)}


def format_retrieval(scores: dict) -> str:
    """One line for a report, the recalls in the order `retrieval_scores` gave them.

    >>> format_retrieval({"ndcg@10": 61.2, "mrr@10": 57.0, "recall@1": 45.0, "recall@10": 80.0, "queries": 1000})
    'nDCG@10 61.20  MRR@10 57.00  Recall@1 45.00  Recall@10 80.00  (1,000 queries)'
    """
    recalls = [f"Recall@{name.removeprefix('recall@')} {value:.2f}"
               for name, value in scores.items() if name.startswith("recall@")]
    return "  ".join([f"nDCG@10 {scores['ndcg@10']:.2f}", f"MRR@10 {scores['mrr@10']:.2f}", *recalls,
                      f"({scores['queries']:,} queries)"])
