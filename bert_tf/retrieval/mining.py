"""Hard negatives for (query, positive) pairs: the documents a retriever ranks high for a query that are not its
positives, as sentence-transformers' `mine_hard_negatives` chooses them (output "n-tuple").

For each query, the retriever (`bert_tf.retrieval.dense.DenseIndex`, `bert_tf.retrieval.bm25.BM25Index`: anything
with `search(queries, top_k) -> (indices [q, k], scores [q, k])`, best first) gives its `range_max` + (most
positives of a query) best documents. Out go: the query's positives, and documents whose text repeats an earlier
one's (a text is a candidate once, as sentence-transformers de-duplicates its corpus); with `absolute_margin`, every
candidate scored above (the query's lowest positive score − the margin); with `relative_margin`, above that score
− |that score| × the margin (likely false negatives: unjudged documents as relevant as the positive); with
`max_score` / `min_score`, those above / below them. Of the rest, best first, the first `range_max` are kept and
the first `range_min` of them skipped; `sampling` "top" takes the next `num_negatives`, "random" draws them
(seeded) and orders them by score. A query with fewer than `num_negatives` left gets no row. Each (query, positive)
pair is a row: the query, the positive, `negative_1` ... `negative_N` and `scores` (the positive's score, then each
negative's: what MarginMSE distillation reads), the columns `bert-tf finetune --task embed` reads.

Margins need the positive's score for the query, which the retriever must give (`pair_scores(queries, indices)`:
the dense and the BM25 index do; a retriever without it mines without margins).

Example:
    >>> import numpy as np
    >>> from bert_tf.retrieval.dense import DenseIndex
    >>> vectors = {"q": [1.0, 0.0], "p": [0.9, 0.1], "n1": [0.8, 0.2], "n2": [0.1, 0.9], "far": [-1.0, 0.0]}
    >>> documents = ["p", "n1", "n2", "far"]
    >>> index = DenseIndex(lambda texts: np.array([vectors[text] for text in texts]), documents)
    >>> rows = mine_hard_negatives(["q"], [[0]], documents, index, MiningSettings(num_negatives=2))
    >>> rows[0].to_json()["negative_1"], rows[0].to_json()["negative_2"]
    ('n1', 'n2')
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

SAMPLINGS = ("top", "random")


@dataclasses.dataclass(frozen=True)
class MiningSettings:
    """Which candidates become negatives (module docstring); the names and defaults of sentence-transformers'."""

    num_negatives: int = 3
    range_min: int = 0  # the best candidates skipped
    # Candidates considered; None: range_min + num_negatives (x 10 with a margin or max_score) + the most positives.
    range_max: int | None = None
    absolute_margin: float | None = None
    relative_margin: float | None = None
    max_score: float | None = None
    min_score: float | None = None
    sampling: str = "top"  # SAMPLINGS
    seed: int = 12  # of "random" sampling

    def __post_init__(self):
        if isinstance(self.num_negatives, bool) or not isinstance(self.num_negatives, int) or self.num_negatives < 1:
            raise ValueError(f"num_negatives must be a positive integer, got {self.num_negatives!r}.")
        if self.range_min < 0:
            raise ValueError(f"range_min must be >= 0, got {self.range_min!r}.")
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"Unknown sampling {self.sampling!r}; use one of {list(SAMPLINGS)}.")
        if self.range_max is not None and self.range_max - self.range_min < self.num_negatives:
            raise ValueError(f"Cannot mine {self.num_negatives} negatives per query: range_max {self.range_max} "
                             f"leaves {self.range_max - self.range_min} candidates after range_min {self.range_min}.")

    def candidates(self, most_positives: int) -> int:
        """range_max, or sentence-transformers' default for queries of up to `most_positives` positives."""
        if self.range_max is not None:
            return self.range_max
        filters = any(value is not None for value in (self.absolute_margin, self.relative_margin, self.max_score))
        return self.range_min + self.num_negatives * (10 if filters else 1) + most_positives


@dataclasses.dataclass
class MinedRow:
    """A query, one of its positives, its hard negatives and the retriever's scores (the positive's first; None
    where the retriever gives no score of the positive)."""

    query: str
    positive: str
    negatives: list[str]
    scores: list[float | None]

    def to_json(self) -> dict:
        """The row as `bert-tf finetune --task embed` reads it: query, positive, negative_1 ... negative_N, scores."""
        return {"query": self.query, "positive": self.positive,
                **{f"negative_{number}": text for number, text in enumerate(self.negatives, start=1)},
                "scores": self.scores}


def _first_of_each_text(documents: list[str]) -> np.ndarray:
    """Per document, the index of the first document with its text."""
    first: dict[str, int] = {}
    return np.array([first.setdefault(text, index) for index, text in enumerate(documents)], np.int64)


def mine_hard_negatives(queries: list[str], positives: list[list[int]], documents: list[str], retriever,
                        settings: MiningSettings = MiningSettings()) -> list[MinedRow]:
    """The rows of (query, positive, hard negatives) of each query of `queries` (distinct) and each of its
    `positives` (indices into `documents`, the texts `retriever` searches); module docstring."""
    if len(queries) != len(positives) or not all(positives):
        raise ValueError("mine_hard_negatives: every query needs one positive or more (positives[i] for queries[i]).")
    margins = settings.absolute_margin is not None or settings.relative_margin is not None
    if margins and not hasattr(retriever, "pair_scores"):
        raise ValueError(f"Margins compare each candidate with the positive's score, which {type(retriever).__name__} "
                         "does not give: mine without margins, or with a model's candidates.")
    first = _first_of_each_text(documents)
    positives = [list(dict.fromkeys(first[np.asarray(group)].tolist())) for group in positives]
    most_positives = max(len(group) for group in positives)
    kept = settings.candidates(most_positives)
    width = kept + most_positives
    indices, scores = retriever.search(queries, min(width, len(documents)))
    indices, scores = np.asarray(indices, np.int64), np.asarray(scores, np.float32)
    missing = width - indices.shape[1]  # fewer documents than candidates asked for: padding, never chosen
    indices = np.pad(indices, ((0, 0), (0, missing)), constant_values=-1)
    scores = np.pad(scores, ((0, 0), (0, missing)), constant_values=-np.inf)
    positive_scores = _positive_scores(queries, positives, retriever, indices, scores)
    candidates = scores.copy()
    known = indices >= 0
    candidates[~known] = -np.inf
    candidates[known & (first[np.maximum(indices, 0)] != indices)] = -np.inf  # a repeated text
    for row, group in enumerate(positives):
        candidates[row, np.isin(indices[row], group)] = -np.inf
    if margins:  # against the query's lowest positive score (its hardest positive), as sentence-transformers
        lowest = np.array([min(values) for values in positive_scores], np.float32)[:, None]
        if settings.absolute_margin is not None:
            candidates[candidates + np.float32(settings.absolute_margin) > lowest] = -np.inf
        if settings.relative_margin is not None:
            candidates[candidates > lowest - np.abs(lowest) * np.float32(settings.relative_margin)] = -np.inf
    if settings.max_score is not None:
        candidates[candidates > settings.max_score] = -np.inf
    if settings.min_score is not None:
        candidates[candidates < settings.min_score] = -np.inf
    order = np.argsort(-candidates, axis=1, kind="stable")[:, :kept][:, settings.range_min:]
    chosen_scores = np.take_along_axis(candidates, order, axis=1)
    chosen = np.take_along_axis(indices, order, axis=1)
    if settings.sampling == "top":
        chosen, chosen_scores = chosen[:, :settings.num_negatives], chosen_scores[:, :settings.num_negatives]
    else:
        chosen, chosen_scores = _sampled(chosen, chosen_scores, settings)
    rows = []
    for row, group in enumerate(positives):
        if not np.isfinite(chosen_scores[row]).all():
            continue  # too few candidates left
        negatives = [documents[index] for index in chosen[row]]
        for positive, positive_score in zip(group, positive_scores[row]):
            rows.append(MinedRow(queries[row], documents[positive], negatives,
                                 [None if positive_score is None else float(positive_score),
                                  *(float(score) for score in chosen_scores[row])]))
    return rows


def _positive_scores(queries, positives, retriever, indices, scores) -> list[list[float | None]]:
    """Per query, the retriever's score of each positive: `retriever.pair_scores`, else its score among the candidates
    (None where it is not among them)."""
    if hasattr(retriever, "pair_scores"):
        flat = retriever.pair_scores([query for query, group in zip(queries, positives) for _ in group],
                                np.array([index for group in positives for index in group]))
        flat = iter(np.asarray(flat, np.float32).tolist())
        return [[next(flat) for _ in group] for group in positives]
    found = []
    for row, group in enumerate(positives):
        at = {int(index): float(score) for index, score in zip(indices[row], scores[row]) if index >= 0}
        found.append([at.get(index) for index in group])
    return found


def _sampled(chosen, chosen_scores, settings: MiningSettings):
    """`num_negatives` of each row's candidates drawn at random (the valid ones where there are enough), best first."""
    rng = np.random.default_rng(settings.seed)
    rows, picked_scores = [], []
    for candidates, candidate_scores in zip(chosen, chosen_scores):
        options = max(int(np.isfinite(candidate_scores).sum()), settings.num_negatives)
        picks = rng.choice(options, settings.num_negatives, replace=False)
        picks = picks[np.argsort(-candidate_scores[picks], kind="stable")]
        rows.append(candidates[picks])
        picked_scores.append(candidate_scores[picks])
    return np.array(rows), np.array(picked_scores)


def write_mined(rows: list[MinedRow], path) -> Path:
    """Writes `rows` as JSON lines (`MinedRow.to_json`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as file:
        for row in rows:
            file.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
    return path


@dataclasses.dataclass
class PairsToMine:
    """Distinct queries, the documents searched, and each query's positives among them (indices)."""

    queries: list[str]
    documents: list[str]
    positives: list[list[int]]


def pairs_to_mine(path, split: str = "train") -> PairsToMine:
    """The pairs of a BEIR folder's `split` or of a pairs file (`EmbeddingTask.pairs_to_mine`)."""
    from bert_tf.tasks.registry import task_named

    return PairsToMine(*task_named("embed").pairs_to_mine(path, split))
