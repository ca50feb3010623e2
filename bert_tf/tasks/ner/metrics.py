"""Entity-level precision, recall and F1 for named-entity tags, as conlleval (CoNLL-2000/2003) scores them.

An entity counts as found only if the prediction has the same type and the same first
and last token. Tags are decoded by conlleval's rules (also seqeval's default mode),
which read BIO (IOB2) and IOB1 alike:
- `B-X` always starts an entity;
- `I-X` continues the entity before it if that one is of type X, and starts a new one
  otherwise (after `O`, at the start of a sentence, or after another type);
- an entity ends before `O`, before `B-`, and where the type changes.
So IOB1's `I-X I-X B-X I-X` holds two X entities, and `B-X I-Y` two one-token entities.

Example:
    >>> extract_entities(["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC"])
    [('PER', 0, 1), ('LOC', 3, 4), ('LOC', 5, 5)]
    >>> scores = ner_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> scores["precision"], scores["recall"], scores["f1"], scores["accuracy"]
    (0.5, 0.5, 0.5, 0.75)
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence


def _split_tag(tag: str) -> tuple[str, str]:
    """"B-PER" → ("B", "PER"); "O" → ("O", "")."""
    if tag == "O":
        return "O", ""
    prefix, dash, entity_type = str(tag).partition("-")
    if prefix not in ("B", "I") or not dash or not entity_type:
        raise ValueError(f"Unsupported tag {tag!r}: tags must be 'O', 'B-<type>' or 'I-<type>' (BIO or IOB1).")
    return prefix, entity_type


def extract_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The entities of one sentence as (type, first token, last token), in order."""
    entities = []
    start, previous_prefix, previous_type = 0, "O", ""
    for position, tag in enumerate([*tags, "O"]):  # the final "O" closes an open entity
        prefix, entity_type = _split_tag(tag)
        ends = previous_prefix != "O" and (prefix != "I" or entity_type != previous_type)
        starts = prefix == "B" or (prefix == "I" and (previous_prefix == "O" or entity_type != previous_type))
        if ends:
            entities.append((previous_type, start, position - 1))
        if starts:
            start = position
        previous_prefix, previous_type = prefix, entity_type
    return entities


def _precision_recall_f1(correct: int, predicted: int, true: int) -> dict[str, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def ner_scores(true_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]) -> dict:
    """Scores over sentences of tags (one list of tags per sentence, predictions aligned to them).

    Returns `precision`, `recall`, `f1` over all entities (micro average, conlleval's
    "overall"), `accuracy` over tokens, and `per_type` {type: precision, recall, f1,
    support (true entities)} for every type seen in either. Scores with a zero
    denominator are 0.
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"ner_scores: {len(true_tags)} true sentences but {len(predicted_tags)} predicted.")
    true_entities, predicted_entities = set(), set()
    matching_tokens = total_tokens = 0
    for index, (truth, prediction) in enumerate(zip(true_tags, predicted_tags)):
        if len(truth) != len(prediction):
            raise ValueError(f"ner_scores: sentence {index} has {len(truth)} true tags but {len(prediction)} predicted.")
        true_entities.update((index, *entity) for entity in extract_entities(truth))
        predicted_entities.update((index, *entity) for entity in extract_entities(prediction))
        matching_tokens += sum(t == p for t, p in zip(truth, prediction))
        total_tokens += len(truth)
    correct = true_entities & predicted_entities
    true_by_type, predicted_by_type, correct_by_type = (
        Counter(entity[1] for entity in entities) for entities in (true_entities, predicted_entities, correct)
    )
    per_type = {
        entity_type: {
            **_precision_recall_f1(correct_by_type[entity_type], predicted_by_type[entity_type], true_by_type[entity_type]),
            "support": true_by_type[entity_type],
        }
        for entity_type in sorted(true_by_type.keys() | predicted_by_type.keys())
    }
    return {
        **_precision_recall_f1(len(correct), len(predicted_entities), len(true_entities)),
        "accuracy": matching_tokens / total_tokens if total_tokens else 0.0,
        "per_type": per_type,
    }
