"""`RerankSettings`: the settings of a reranker (`bert-tf finetune --task rerank`): the loss it trains with and how
its dev set is scored.

Example:
    >>> RerankSettings(loss="bce").to_metadata()["loss"]
    'bce'
    >>> RerankSettings(rerank_top_k=0)
    Traceback (most recent call last):
    ...
    ValueError: rerank_top_k must be a positive integer, got 0.
"""

from __future__ import annotations

import dataclasses
import math

from bert_tf.tasks.settings import TaskSettings, positive_integers, setting

LOSSES = ("listwise", "bce", "margin_mse")  # bert_tf.tasks.rerank.losses


@dataclasses.dataclass(frozen=True)
class RerankSettings(TaskSettings):
    """The loss (loss, listwise_scale, listwise_sigmoid) and the dev scoring (rerank_top_k, dev_split)."""

    description = ("--train: rows of query, positive, negative_1 ... negative_N (bert-tf mine's; a teacher's scores "
                   "for --loss margin_mse in `scores` [positive, negatives...] or score_positive, score_negative_1 "
                   "...) or labelled pairs (query, document, label from 0 to 1); --dev: a BEIR folder (corpus.jsonl, "
                   "queries.jsonl, qrels/SPLIT.tsv): BM25's top --rerank-top-k reranked, nDCG@10")

    # "listwise": softmax cross-entropy of the positive against its negatives (sentence-transformers' CrossEncoder
    # MultipleNegativesRankingLoss on the hard negatives); "bce": binary cross-entropy of every pair (positives 1,
    # negatives 0, or a pair's label); "margin_mse": the margins (positive − each negative) against the teacher's.
    loss: str = setting("listwise", flag="--loss", choices=LOSSES,
                        help="listwise (the positive against its negatives), bce (every pair on its own) or "
                             "margin_mse (a teacher's margins)")
    listwise_scale: float = setting(10.0, flag="--scale", type=float, metavar="SCALE",
                                    help="the listwise loss's scores: sigmoid(logit) × SCALE")
    listwise_sigmoid: bool = setting(True, flag="--no-sigmoid",
                                     help="the listwise loss over the raw logits (default: sigmoid(logit) × SCALE, "
                                          "as sentence-transformers)")
    rerank_top_k: int = setting(100, flag="--rerank-top-k", type=int, metavar="K",
                                help="dev: BM25's top K of each query reranked")
    dev_split: str = setting("test", flag="--dev-split", metavar="SPLIT",
                             help="dev: the BEIR folder's qrels/SPLIT.tsv scored")

    def check(self):
        if self.loss not in LOSSES:
            raise ValueError(f"Unknown loss {self.loss!r}; use one of {list(LOSSES)}.")
        if not math.isfinite(self.listwise_scale) or self.listwise_scale <= 0:
            raise ValueError(f"listwise_scale must be a positive number, got {self.listwise_scale!r}.")
        positive_integers(self, "rerank_top_k")
        if not isinstance(self.dev_split, str) or not self.dev_split:
            raise ValueError(f"dev_split must name a split (test, dev, ...), got {self.dev_split!r}.")

    def shortest_seq_length(self, text_pair):
        """[CLS], [SEP] twice and a token of each text."""
        return 5

    def text_inputs(self, text_pair):
        """A query and a document, always."""
        return ("query", "document")
