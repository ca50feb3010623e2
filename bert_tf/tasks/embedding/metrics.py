"""Sentence-embedding scores as the embedding community reports them (SentEval, BEIR, MTEB), in NumPy.

STS: Spearman and Pearson correlation × 100 between predicted similarities (the cosine of the
two sentences' vectors) and gold scores. Spearman ranks tied values by their average rank, as
`scipy.stats.spearmanr` does.

Retrieval: `bert_tf.retrieval.ranking_metrics`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np



def _varying_values(values, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all():
        raise ValueError(f"sts_scores: the {name} include NaN or infinity.")
    if values.min() == values.max():
        raise ValueError(f"sts_scores: the {name} are all {values[0]:g}; a correlation needs them to vary.")
    return values


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x - x.mean(), y - y.mean()
    return float(np.clip(np.dot(x / np.linalg.norm(x), y / np.linalg.norm(y)), -1.0, 1.0))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, tied values sharing the mean of their ranks (`scipy.stats.rankdata`'s "average")."""
    order = np.argsort(values, kind="stable")
    _, first, counts = np.unique(values[order], return_index=True, return_counts=True)
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
    return ranks


def sts_scores(predicted: Sequence[float], gold: Sequence[float]) -> dict:
    """Spearman and Pearson correlation × 100 of predicted similarities with gold scores, one of each per pair.

    >>> scores = sts_scores([0.9, 0.1, 0.5, 0.5], [5.0, 0.0, 2.0, 4.0])
    >>> round(scores["spearman"], 2), round(scores["pearson"], 2), scores["examples"]
    (94.87, 92.06, 4)
    """
    if np.ndim(predicted) != 1 or np.ndim(gold) != 1 or len(predicted) != len(gold):
        raise ValueError(f"sts_scores: predicted similarities of shape {np.shape(predicted)} but gold scores of shape "
                         f"{np.shape(gold)}; expected one of each per pair.")
    if len(gold) < 2:
        raise ValueError(f"sts_scores: a correlation needs at least 2 pairs, got {len(gold)}.")
    predicted, gold = _varying_values(predicted, "predicted similarities"), _varying_values(gold, "gold scores")
    return {"spearman": 100 * _pearson(_average_ranks(predicted), _average_ranks(gold)),
            "pearson": 100 * _pearson(predicted, gold),
            "examples": len(gold)}


def format_sts(scores: dict) -> str:
    """One line for a report.

    >>> format_sts({"spearman": 84.1234, "pearson": 83.9, "examples": 1500})
    'Spearman 84.12  Pearson 83.90  (1,500 pairs)'
    """
    return f"Spearman {scores['spearman']:.2f}  Pearson {scores['pearson']:.2f}  ({scores['examples']:,} pairs)"
