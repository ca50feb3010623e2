"""`EmbeddingSettings`: the settings of sentence embeddings (`bert-tf finetune --task embed`): how a text becomes a
vector (saved with the model), and the loss that trains it.

Example:
    >>> EmbeddingSettings(pooling="cls").to_metadata()["pooling"]
    'cls'
    >>> EmbeddingSettings(score_range=(5.0, 0.0))
    Traceback (most recent call last):
    ...
    ValueError: score_range must be two finite numbers, the lower first; got (5.0, 0.0).
"""

from __future__ import annotations

import dataclasses
import math

from bert_tf.layers.pooling import POOLINGS
from bert_tf.tasks.settings import TaskSettings, setting

LOSSES = ("in_batch_negatives", "cosent", "cosine")  # bert_tf.tasks.embedding.losses


def _sizes(text: str) -> tuple[int, ...]:
    import argparse

    try:
        return tuple(int(size) for size in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 256,128,64, got {text!r}") from None


@dataclasses.dataclass(frozen=True)
class EmbeddingSettings(TaskSettings):
    """The vectors (pooling, normalize, size) and the loss (embedding_loss, similarity_scale, symmetric, matryoshka)."""

    description = ("--train: scored pairs (STS-B's files, or sentence1/sentence2/score columns), pairs or triples "
                   "(anchor/positive[/negative]) or sentences (a .txt file, a line each: unsupervised SimCSE); --dev: "
                   "scored pairs (Spearman), pairs, or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv: "
                   "nDCG@10)")

    pooling: str = setting("mean", flag="--pooling", choices=POOLINGS, help="of the token vectors")
    normalize: bool = setting(True, flag="--no-normalize", help="keep the vectors' lengths (default: length 1)")
    # The similarity scores of scored pairs (STS-B: 0 to 5).
    score_range: tuple[float, float] = setting((0.0, 5.0), flag="--score-range", type=float, nargs=2,
                                               metavar=("LOW", "HIGH"), help="the scores of scored pairs")
    # The vectors' size: the encoder's width, or another through a learned linear projection after the pooling (a
    # distilled student's, into its teacher's space); 0: not known yet (the encoder's width when the model is built).
    embedding_size: int = 0
    embedding_dims: int = 0  # vectors cut to their first this many values (a Matryoshka size) and renormalised; 0: whole
    # The loss: "in_batch_negatives" (pairs, triples, sentences for SimCSE), "cosent" or "cosine" (scored pairs);
    # None: CoSENT for scored pairs, in-batch negatives for the rest.
    embedding_loss: str | None = setting(None, flag="--loss", choices=LOSSES,
                                         help="default: cosent for scored pairs, in_batch_negatives for the rest")
    similarity_scale: float = setting(20.0, flag="--scale", type=float, metavar="SCALE",
                                      help="cosine × SCALE in the in-batch and CoSENT losses, 1 / temperature")
    symmetric: bool = setting(False, flag="--symmetric", help="in-batch negatives both ways")
    matryoshka_dims: tuple[int, ...] = setting((), flag="--matryoshka-dims", type=_sizes, metavar="D,D,...",
                                               help="nested sizes the vectors also train at, e.g. 256,128,64")
    # Cached in-batch negatives (bert_tf.tasks.embedding.cached_step): each batch embedded this many examples at a
    # time, with the loss and gradients of the whole batch; None: the batch at once.
    mini_batch_size: int | None = setting(None, flag="--mini-batch-size", type=int, metavar="N",
                                          help="cached in-batch negatives (GradCache): embed each batch N examples at "
                                               "a time, so that a large --batch-size fits in memory with the same "
                                               "loss and gradients")

    def check(self):
        if self.pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {self.pooling!r}; use one of {list(POOLINGS)}.")
        for name, meaning in (("embedding_size", "the encoder's width"), ("embedding_dims", "the whole vector")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0 (0: {meaning}), got {value!r}.")
        if self.embedding_loss not in (None, *LOSSES):
            raise ValueError(f"Unknown embedding_loss {self.embedding_loss!r}; use one of {list(LOSSES)}.")
        if not math.isfinite(self.similarity_scale) or self.similarity_scale <= 0:
            raise ValueError(f"similarity_scale must be a positive number, got {self.similarity_scale!r}.")
        if self.mini_batch_size is not None and (isinstance(self.mini_batch_size, bool) or not isinstance(
                self.mini_batch_size, int) or self.mini_batch_size < 1):
            raise ValueError(f"mini_batch_size must be a positive integer, got {self.mini_batch_size!r}.")
        if any(isinstance(dim, bool) or not isinstance(dim, int) or dim < 1 for dim in self.matryoshka_dims):
            raise ValueError(f"matryoshka_dims must be positive integers, got {self.matryoshka_dims!r}.")
        if len(self.score_range) != 2 or not all(isinstance(value, (int, float)) and math.isfinite(value)
                                                 for value in self.score_range) \
                or not self.score_range[0] < self.score_range[1]:
            raise ValueError(f"score_range must be two finite numbers, the lower first; got {self.score_range!r}.")
        object.__setattr__(self, "score_range", tuple(float(value) for value in self.score_range))

    def check_fits(self, config):
        size = self.embedding_size or config.hidden_size
        if self.embedding_dims > size:
            raise ValueError(f"embedding_dims {self.embedding_dims} is more than the model's {size} values.")
