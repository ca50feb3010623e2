"""`bert_tf.tasks.ner.ops.word_entities`: entities from tagged words, as Hugging Face's `aggregation_strategy="simple"`."""

import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.ner.ops import word_entities

LABELS = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]


def ragged(rows, dtype):
    return tf.ragged.constant(rows, dtype, ragged_rank=1)


def entities_of(rows, scores, label_names=LABELS):
    """`word_entities` of sentences of tag names, word i spanning characters [3i, 3i + 2)."""
    ids = {name: index for index, name in enumerate(label_names)}
    starts = [[3 * index for index in range(len(row))] for row in rows]
    entities = word_entities(ragged([[ids[tag] for tag in row] for row in rows], tf.int32), ragged(scores, tf.float32),
                             ragged(starts, tf.int32), ragged([[start + 2 for start in row] for row in starts], tf.int32),
                             label_names)
    return [[{"type": kind.decode(), "start": start, "end": end, "score": score}
             for kind, start, end, score in zip(*(values[row].numpy().tolist() for values in entities))]
            for row in range(len(rows))]


def test_tags_group_into_entities():
    rows = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-LOC"], [], ["O", "I-ORG", "B-ORG", "I-PER", "O", "O"]]
    scores = [[0.9, 0.7, 0.5, 0.8, 0.6, 0.4], [], [0.5] * 6]
    found = entities_of(rows, scores)
    assert [[(e["type"], e["start"], e["end"]) for e in row] for row in found] == [
        [("PER", 0, 5), ("LOC", 9, 17)], [], [("ORG", 3, 5), ("ORG", 6, 8), ("PER", 9, 11)]]
    assert [e["score"] for e in found[0]] == pytest.approx([0.8, 0.6])


def test_entities_are_hugging_faces_simple_aggregation():
    pipelines = pytest.importorskip("transformers.pipelines.token_classification")

    class Joiner:
        @staticmethod
        def convert_tokens_to_string(tokens):
            return " ".join(tokens)

    reference = object.__new__(pipelines.TokenClassificationPipeline)
    reference.tokenizer = Joiner()
    rng = random.Random(0)
    rows = [[rng.choice(LABELS[:4] + LABELS[4:] * 2 + ["O"] * 4) for _ in range(rng.randrange(0, 12))]
            for _ in range(300)]
    scores = [[rng.random() for _ in row] for row in rows]
    for row, word_scores, found in zip(rows, scores, entities_of(rows, scores)):
        words = [{"entity": tag, "score": np.float32(score), "word": f"w{index}", "start": 3 * index,
                  "end": 3 * index + 2} for index, (tag, score) in enumerate(zip(row, word_scores))]
        expected = [group for group in reference.group_entities(words) if group["entity_group"] != "O"]
        assert [(e["type"], e["start"], e["end"]) for e in found] == [
            (group["entity_group"], group["start"], group["end"]) for group in expected], row
        assert [e["score"] for e in found] == pytest.approx([group["score"] for group in expected], abs=1e-6)
