"""SQuAD exact match and F1, as the official `evaluate-v1.1.py` and `evaluate-v2.0.py` compute them.

Answers are compared after normalization: lower-case, drop punctuation, drop the
articles "a", "an", "the", collapse whitespace. F1 is over the words of the
normalized answers. Each question scores its best over the ground-truth answers;
the totals are percentages over the questions of the ground truths: a question
without a prediction scores 0 (as in v1.1; `evaluate-v2.0.py` needs every prediction),
and predictions for other ids are ignored.

The two versions differ only on empty answers. SQuAD v1.1 (`version_2=False`): F1 is
0 when no word is shared, so an empty prediction scores F1 0 even against an answer
that normalizes to "" (such as "."), though its exact match is 1. SQuAD 2.0
(`version_2=True`): answers that normalize to "" are dropped, an unanswerable question
(no answers left) has the ground truth [""], and an empty prediction scores F1 1
against "" and 0 against anything else.

Example:
    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    >>> exact_match("the Eiffel tower", ["Eiffel Tower", "Paris"])
    1.0
    >>> round(f1_score("the quick brown fox", ["quick fox jumps"]), 4)
    0.6667
    >>> f1_score("", ["."]), f1_score("", [], version_2=True)
    (0.0, 1.0)
    >>> squad_scores({"q1": "Paris", "q2": "in 1889"}, {"q1": ["Paris"], "q2": ["1889", "March 1889"]})
    {'exact_match': 50.0, 'f1': 83.33333333333333}
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Mapping, Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, remove punctuation, remove articles (a, an, the), and fix whitespace — in that order."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _scored_answers(ground_truths: Sequence[str], version_2: bool) -> Sequence[str]:
    if isinstance(ground_truths, str):
        raise ValueError(f"SQuAD ground truths must be a list of answers, got {ground_truths!r}.")
    if version_2:  # evaluate-v2.0.py
        return [truth for truth in ground_truths if normalize_answer(truth)] or [""]
    if not ground_truths:
        raise ValueError("SQuAD v1.1 ground truths must be a non-empty list of answers, got [].")
    return ground_truths


def _exact_match_one(prediction: str, ground_truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def _f1_one(prediction: str, ground_truth: str, version_2: bool) -> float:
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    if version_2 and not (prediction_tokens and ground_truth_tokens):
        return float(prediction_tokens == ground_truth_tokens)
    common = sum((Counter(prediction_tokens) & Counter(ground_truth_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction_tokens), common / len(ground_truth_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, ground_truths: Sequence[str], *, version_2: bool = False) -> float:
    """1.0 if the normalized prediction equals a normalized ground truth, else 0.0."""
    return max(_exact_match_one(prediction, truth) for truth in _scored_answers(ground_truths, version_2))


def f1_score(prediction: str, ground_truths: Sequence[str], *, version_2: bool = False) -> float:
    """The best word-overlap F1 between the prediction and a ground truth, in [0, 1]."""
    return max(_f1_one(prediction, truth, version_2) for truth in _scored_answers(ground_truths, version_2))


def squad_scores(predictions: Mapping[str, str], ground_truths: Mapping[str, Sequence[str]], *,
                 version_2: bool = False) -> dict[str, float]:
    """`exact_match` and `f1`, in percent, over every question id of `ground_truths` (a missing prediction scores 0)."""
    if not ground_truths:
        raise ValueError("squad_scores: no questions in ground_truths.")
    exact = f1 = 0.0
    for question_id, answers in ground_truths.items():
        if question_id in predictions:
            exact += exact_match(predictions[question_id], answers, version_2=version_2)
            f1 += f1_score(predictions[question_id], answers, version_2=version_2)
    return {"exact_match": 100.0 * exact / len(ground_truths), "f1": 100.0 * f1 / len(ground_truths)}
