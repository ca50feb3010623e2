"""Dense retrieval: exact top-k by cosine similarity over a sentence-embedding model's vectors of the documents.

`DenseIndex(embed, texts)` embeds the documents once with `embed` (texts → vectors [n, size]: any function, e.g.
`model_embedder("all-minilm-l6-v2")`, a bert-tf sentence-embedding model's vectors) and answers
`search(queries, top_k)` with the best documents' indices and cosines, best first, as `bm25.BM25Index` does, so
that mining (`bert_tf.retrieval.mining`) takes either; `scores(queries, indices)` gives the cosine of given
(query, document) pairs (the positives' scores that mining's margins compare with). The scores are computed a
block of queries at a time (memory: block × documents floats), exactly, without an approximate index.

Example:
    >>> import numpy as np
    >>> vectors = {"cats purr": [1.0, 0.0], "dogs bark": [0.0, 1.0], "kittens purr": [0.9, 0.1]}
    >>> index = DenseIndex(lambda texts: np.array([vectors[text] for text in texts]), ["cats purr", "dogs bark"])
    >>> indices, scores = index.search(["kittens purr"], top_k=2)
    >>> indices.tolist(), [round(float(score), 4) for score in scores[0]]
    ([[0, 1]], [0.9939, 0.1104])
"""

from __future__ import annotations

from typing import Callable

import numpy as np

QUERY_BLOCK = 1024  # queries scored at a time


def _unit(vectors) -> np.ndarray:
    vectors = np.asarray(vectors, np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


class DenseIndex:
    """The documents `texts` as unit vectors of `embed`, searched exactly by cosine."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], texts: list[str]):
        self.embed = embed
        self.vectors = _unit(embed(list(texts)))

    def __len__(self) -> int:
        return len(self.vectors)

    def search(self, queries: list[str], top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """(indices int64 [queries, k], cosines float32 [queries, k]) of each query's `top_k` best documents, best
        first (ties: the lower index first); k is at most the documents' count."""
        top_k = min(int(top_k), len(self.vectors))
        query_vectors = _unit(self.embed(list(queries)))
        indices = np.empty((len(query_vectors), top_k), np.int64)
        scores = np.empty((len(query_vectors), top_k), np.float32)
        for start in range(0, len(query_vectors), QUERY_BLOCK):
            block = query_vectors[start:start + QUERY_BLOCK] @ self.vectors.T
            order = np.argsort(-block, axis=1, kind="stable")[:, :top_k]
            indices[start:start + QUERY_BLOCK] = order
            scores[start:start + QUERY_BLOCK] = np.take_along_axis(block, order, axis=1)
        return indices, scores

    def pair_scores(self, queries: list[str], indices: np.ndarray) -> np.ndarray:
        """The cosine of each query with the document of the same row of `indices` (int [queries]), float32."""
        return np.sum(_unit(self.embed(list(queries))) * self.vectors[np.asarray(indices)], axis=-1)


def model_embedder(model, batch_size: int = 64, progress: bool = False,
                   seq_length: int | None = None) -> Callable[[list[str]], np.ndarray]:
    """texts → the vectors [n, size] of a sentence-embedding model: a model directory, a sentence-transformers folder
    or an installed model's name (`bert_tf.load_model_directory`); each text cut to `seq_length` tokens (default: the
    model's)."""
    from bert_tf.model_directory import load_model_directory
    from bert_tf.tasks.registry import task_from_spec

    directory = load_model_directory(model)
    spec = directory.task if seq_length is None else directory.task.replace(seq_length=seq_length)
    spec.check_fits(directory.encoder.config)
    task = task_from_spec(spec, directory.tokenizer())
    if task.name != "embed":
        raise ValueError(f"{model} is a {task.name} model; dense retrieval needs a sentence-embedding (embed) model.")

    def embed(texts: list[str]) -> np.ndarray:
        data = task.prepare(task.examples_from_texts(texts), training=False)  # each distinct text once
        vectors = np.stack(task.outputs(directory.model, data, batch_size, progress=progress))
        return vectors[data.groups[:, 0]]

    return embed
