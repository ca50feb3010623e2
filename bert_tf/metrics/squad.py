"""SQuAD v1.1 exact match and F1, as the official `evaluate-v1.1.py` computes them.

Answers are compared after normalization: lower-case, drop punctuation, drop the
articles "a", "an", "the", collapse whitespace. F1 is over the words of the
normalized answers. Each question scores its best over the ground-truth answers;
the totals are percentages over all questions, a question without a prediction
scoring 0. SQuAD 2.0 (`evaluate-v2.0.py`): an unanswerable question has the ground
truth [""], and an empty answer scores F1 1 against "" and 0 against anything else.

Example:
    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    >>> exact_match("the Eiffel tower", ["Eiffel Tower", "Paris"])
    1.0
    >>> round(f1_score("the quick brown fox", ["quick fox jumps"]), 4)
    0.6667
    >>> squad_scores({"q1": "Paris", "q2": "in 1889"}, {"q1": ["Paris"], "q2": ["1889", "March 1889"]})
    {'exact_match': 50.0, 'f1': 83.33333333333333}
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Callable, Mapping, Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, remove punctuation, remove articles (a, an, the), and fix whitespace — in that order."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _exact_match_one(prediction: str, ground_truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def _f1_one(prediction: str, ground_truth: str) -> float:
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    if not prediction_tokens or not ground_truth_tokens:
        # SQuAD 2.0's rule for "no answer" (""): 1 if both are empty, else 0. SQuAD 1.1 answers are
        # never empty, and an empty prediction scores 0 there as in evaluate-v1.1.py.
        return float(prediction_tokens == ground_truth_tokens)
    common = sum((Counter(prediction_tokens) & Counter(ground_truth_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction_tokens), common / len(ground_truth_tokens)
    return 2 * precision * recall / (precision + recall)


def _best(score: Callable[[str, str], float], prediction: str, ground_truths: Sequence[str]) -> float:
    if isinstance(ground_truths, str) or not ground_truths:
        raise ValueError(f"SQuAD ground truths must be a non-empty list of answers, got {ground_truths!r}.")
    return max(score(prediction, truth) for truth in ground_truths)


def exact_match(prediction: str, ground_truths: Sequence[str]) -> float:
    """1.0 if the normalized prediction equals a normalized ground truth, else 0.0."""
    return _best(_exact_match_one, prediction, ground_truths)


def f1_score(prediction: str, ground_truths: Sequence[str]) -> float:
    """The best word-overlap F1 between the prediction and a ground truth, in [0, 1]."""
    return _best(_f1_one, prediction, ground_truths)


def squad_scores(predictions: Mapping[str, str], ground_truths: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """`exact_match` and `f1`, in percent, over every question id of `ground_truths`."""
    if not ground_truths:
        raise ValueError("squad_scores: no questions in ground_truths.")
    unknown = predictions.keys() - ground_truths.keys()
    if unknown:
        raise ValueError(f"squad_scores: predictions for unknown question ids {sorted(unknown)[:5]}.")
    exact = f1 = 0.0
    for question_id, answers in ground_truths.items():
        if question_id in predictions:  # the official script also scores a missing prediction 0
            exact += exact_match(predictions[question_id], answers)
            f1 += f1_score(predictions[question_id], answers)
    return {"exact_match": 100.0 * exact / len(ground_truths), "f1": 100.0 * f1 / len(ground_truths)}
