"""Cosine similarity and exact semantic search over vectors (NumPy), as sentence-transformers' `util.cos_sim` and
`util.semantic_search` compute them: `cos_sim(a, b)` is the matrix of every `a` row's cosine with every `b` row;
`semantic_search(queries, corpus, top_k)` gives, per query, the `top_k` corpus rows of highest cosine, each as
`{"corpus_id": row, "score": cosine}`, best first (equal scores: the lower row first).

Example:
    >>> import numpy as np
    >>> corpus = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    >>> [round(float(cosine), 4) for cosine in cos_sim(np.array([[0.0, 2.0]]), corpus)[0]]
    [0.0, 0.8, 1.0]
    >>> [(hit["corpus_id"], round(hit["score"], 4)) for hit in semantic_search(np.array([[0.0, 2.0]]), corpus, 2)[0]]
    [(2, 1.0), (1, 0.8)]
"""

from __future__ import annotations

import numpy as np

QUERIES_AT_ONCE = 256  # the queries scored against the whole corpus at a time (bounds the score matrix)


def _matrix(vectors, name: str) -> np.ndarray:
    """`vectors` as a float32 [rows, size] array (one vector: one row)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix = matrix[None] if matrix.ndim == 1 else matrix
    if matrix.ndim != 2:
        raise ValueError(f"{name}: vectors [rows, size] expected, got an array of shape {list(matrix.shape)}.")
    return matrix


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=-1, keepdims=True), 1e-12)


def cos_sim(a, b) -> np.ndarray:
    """The cosine of every row of `a` with every row of `b`: float32 [len(a), len(b)] (a single vector is one row)."""
    a, b = _matrix(a, "cos_sim"), _matrix(b, "cos_sim")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"cos_sim: vectors of {a.shape[1]} and {b.shape[1]} values cannot be compared.")
    return _unit(a) @ _unit(b).T


def semantic_search(query_vectors, corpus_vectors, top_k: int = 10) -> list[list[dict]]:
    """Per query vector, the `top_k` corpus rows of highest cosine, best first: `[{"corpus_id": row, "score":
    cosine}, ...]` (fewer where the corpus is smaller), every cosine computed exactly."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"semantic_search: top_k must be a positive integer, got {top_k!r}.")
    queries = _unit(_matrix(query_vectors, "semantic_search"))
    corpus = _unit(_matrix(corpus_vectors, "semantic_search"))
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"semantic_search: query vectors of {queries.shape[1]} values, corpus vectors of "
                         f"{corpus.shape[1]}.")
    k = min(top_k, len(corpus))
    results = []
    for start in range(0, len(queries), QUERIES_AT_ONCE):
        scores = queries[start:start + QUERIES_AT_ONCE] @ corpus.T
        best = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < len(corpus) else np.tile(np.arange(k),
                                                                                              (len(scores), 1))
        for row, candidates in zip(scores, best):
            ranked = sorted(candidates.tolist(), key=lambda index: (-row[index], index))
            results.append([{"corpus_id": index, "score": float(row[index])} for index in ranked])
    return results
