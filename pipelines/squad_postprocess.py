"""SQuAD answers from start/end logits: the best valid span over a question's windows, as original context text.

For each window, the `n_best_size` highest start logits and end logits are paired; a pair
is a candidate if both tokens are context tokens of the window, the end is not before the
start, the span has at most `max_answer_length` tokens, and the window is the start
token's "max context" window (of the windows holding it, the one where it has the most
context on its shorter side, google-research/bert `_check_is_max_context`). A candidate
scores start logit + end logit; its text is the context from its first token's first
character to its last token's last character (offsets from the tokenizer), so the answer
is the original text, case and accents included.

SQuAD 2.0: the null answer scores the lowest start + end logit at `[CLS]` over the
windows; the prediction is "" when the null score exceeds the best span's score by more
than `null_score_threshold`.

Example:
    >>> answers = best_answers(examples, features, start_logits, end_logits)  # doctest: +SKIP
    >>> answers[0]  # doctest: +SKIP
    AnswerPrediction(text='Saint Bernadette Soubirous', start=515, end=541, score=17.2, probability=0.93)
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Sequence

import numpy as np

from pipelines.squad import SquadExample
from pipelines.squad_features import SquadFeatures, Window


@dataclasses.dataclass(frozen=True)
class AnswerPrediction:
    text: str  # "" when no answer (SQuAD 2.0, or no valid span)
    start: int  # character offsets in the context (0, 0 for no answer)
    end: int
    score: float  # start logit + end logit (the null score for no answer)
    probability: float  # softmax of the score over the n-best candidates (and the null answer)


def _max_context_windows(windows: Sequence[Window]) -> dict[int, int]:
    """For each context token, the index (in `windows`) of the window where it has the most context."""
    best: dict[int, tuple[float, int]] = {}
    for window_index, window in enumerate(windows):
        for token in range(window.doc_start, window.doc_start + window.doc_length):
            left, right = token - window.doc_start, window.doc_start + window.doc_length - 1 - token
            score = min(left, right) + 0.01 * window.doc_length
            if token not in best or score > best[token][0]:
                best[token] = (score, window_index)
    return {token: window_index for token, (_, window_index) in best.items()}


def _softmax(scores: np.ndarray) -> np.ndarray:
    exp = np.exp(scores - scores.max())
    return exp / exp.sum()


def best_answers(
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
    windows_of = defaultdict(list)
    for feature_index, window in enumerate(features.windows):
        windows_of[window.example_index].append(feature_index)
    predictions = []
    for example_index, example in enumerate(examples):
        feature_indices = windows_of[example_index]
        tokens = features.contexts[example_index]
        max_context = _max_context_windows([features.windows[i] for i in feature_indices])
        candidates: dict[tuple[int, int], float] = {}  # (first char, end char) → best score
        null_score = np.inf
        for local_index, feature_index in enumerate(feature_indices):
            window = features.windows[feature_index]
            starts, ends = np.asarray(start_logits[feature_index]), np.asarray(end_logits[feature_index])
            null_score = min(null_score, float(starts[0] + ends[0]))
            for start in np.argsort(-starts)[:n_best_size]:
                first = window.context_token(int(start))
                if first is None or max_context.get(first) != local_index:
                    continue
                for end in np.argsort(-ends)[:n_best_size]:
                    last = window.context_token(int(end))
                    if last is None or last < first or last - first + 1 > max_answer_length:
                        continue
                    span = (int(tokens.starts[first]), int(tokens.ends[last]))
                    score = float(starts[start] + ends[end])
                    candidates[span] = max(score, candidates.get(span, -np.inf))
        ranked = sorted(candidates.items(), key=lambda item: -item[1])[:n_best_size]
        scores = np.array([score for _, score in ranked] + ([null_score] if version_2 else []))
        probabilities = _softmax(scores) if len(scores) else np.zeros(0)
        no_answer = AnswerPrediction("", 0, 0, null_score if version_2 else 0.0,
                                     float(probabilities[-1]) if version_2 else 0.0)
        if not ranked or (version_2 and null_score - ranked[0][1] > null_score_threshold):
            predictions.append(no_answer)
            continue
        (first_char, end_char), score = ranked[0]
        predictions.append(AnswerPrediction(example.context[first_char:end_char], first_char, end_char, score,
                                            float(probabilities[0])))
    return predictions
