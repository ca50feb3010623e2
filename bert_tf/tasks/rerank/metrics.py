"""A reranker's scores: nDCG@10, MRR@10 and Recall@k × 100 of the lists it re-ordered
(`bert_tf.tasks.embedding.metrics.retrieval_scores`), and of the first stage's own order where there is one
(`first_stage_ndcg@10`, ...), so that a report shows what reranking added.

Example:
    >>> import numpy as np
    >>> from bert_tf.tasks.rerank.ranking import RankingData
    >>> data = RankingData(["q"] * 3, ["a", "b", "c"], np.zeros(3, int), np.arange(3), [{2: 1}], 3,
    ...                    first_stage=np.array([[3.0, 2.0, 1.0]], np.float32))
    >>> scores = ranking_scores(data, [0.1, 0.2, 0.9])
    >>> scores["ndcg@10"], scores["first_stage_ndcg@10"]
    (100.0, 50.0)
    >>> format_ranking(scores)
    'nDCG@10 100.00  MRR@10 100.00  Recall@1 100.00  Recall@10 100.00  (1 queries); first stage nDCG@10 50.00'
"""

from __future__ import annotations

from bert_tf.retrieval.ranking_metrics import format_retrieval, retrieval_scores
from bert_tf.tasks.rerank.ranking import RankingData

KS = (1, 10)  # the recalls reported (Recall@100 of a reranked top 100 is the first stage's own)
FIRST_STAGE = "first_stage_"  # the prefix of the first stage's scores


def ranking_scores(data: RankingData, scores) -> dict:
    """The scores of the lists of `data` ranked by `scores` (one per pair), and the first stage's if it has one."""
    reranked = retrieval_scores(data.score_matrix(scores), data.relevant, KS)
    if data.first_stage is None:
        return reranked
    first = retrieval_scores(data.first_stage.astype("float64"), data.relevant, KS)
    return {**reranked, **{FIRST_STAGE + name: value for name, value in first.items() if name != "queries"}}


def format_ranking(scores: dict) -> str:
    """One line for a report: the reranked lists', then the first stage's nDCG@10 where there is one."""
    reranked = {name: value for name, value in scores.items() if not name.startswith(FIRST_STAGE)}
    line = format_retrieval(reranked)
    if FIRST_STAGE + "ndcg@10" in scores:
        line += f"; first stage nDCG@10 {scores[FIRST_STAGE + 'ndcg@10']:.2f}"
    return line
