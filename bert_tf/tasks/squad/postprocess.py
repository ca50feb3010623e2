"""SQuAD answers from start/end logits: the best valid span over a question's windows, as original context text.

The span is chosen by `bert_tf.tasks.squad.ops.best_answers`, the implementation the
SavedModel runs too (its module docstring gives the rules: n-best starts × ends per
window, max-context windows, SQuAD 2.0's null answer and threshold). Its text is the
context from its first token's first character to its last token's last character
(offsets from the tokenizer), so the answer is the original text, case and accents
included.

Example:
    >>> answers = answer_predictions(examples, features, start_logits, end_logits)  # doctest: +SKIP
    >>> answers[0]  # doctest: +SKIP
    AnswerPrediction(text='Saint Bernadette Soubirous', start=515, end=541, score=17.2, probability=0.93)
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from bert_tf.tasks.squad.data import SquadExample
from bert_tf.tasks.squad.features import SquadFeatures
from bert_tf.tasks.squad.ops import best_answers


@dataclasses.dataclass(frozen=True)
class AnswerPrediction:
    text: str  # "" when no answer (SQuAD 2.0, or no valid span)
    start: int  # character offsets in the context (0, 0 for no answer)
    end: int
    score: float  # start logit + end logit (the null score for no answer)
    probability: float  # softmax of the score over the n-best candidates (and the null answer)


def answer_predictions(
    examples: Sequence[SquadExample],
    features: SquadFeatures,
    start_logits: Sequence[np.ndarray],
    end_logits: Sequence[np.ndarray],
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2: bool = False,
    null_score_threshold: float = 0.0,
) -> list[AnswerPrediction]:
    """The predicted answer of every example, from each window's logits ([length] each, in feature order)."""
    answers = best_answers(_padded(start_logits), _padded(end_logits), features.layout,
                           max_answer_length=max_answer_length, n_best_size=n_best_size, version_2=version_2,
                           null_score_threshold=null_score_threshold)
    predictions = []
    for example, tokens, first, last, score, probability in zip(
            examples, features.contexts, answers.first_token.numpy().tolist(), answers.last_token.numpy().tolist(),
            answers.score.numpy().tolist(), answers.probability.numpy().tolist()):
        if first < 0:
            predictions.append(AnswerPrediction("", 0, 0, score, probability))
            continue
        start, end = int(tokens.starts[first]), int(tokens.ends[last])
        predictions.append(AnswerPrediction(example.context[start:end], start, end, score, probability))
    return predictions


def _padded(rows: Sequence[np.ndarray]) -> np.ndarray:
    """float32 [rows, longest row], zeros after each row's end (`best_answers` reads a window's own length)."""
    padded = np.zeros((len(rows), max((len(row) for row in rows), default=1)), np.float32)
    for index, row in enumerate(rows):
        padded[index, :len(row)] = row
    return padded
