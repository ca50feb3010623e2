"""`bert_tf.tasks.ner.ops.word_windows`: the greedy whole-word windows against a plain Python reference, and the
exported SavedModel tagging long texts word for word as `bert-tf predict` does."""

import random

import numpy as np
import pytest
import tensorflow as tf
from tiny_exports import VOCAB, tiny_encoder, write_vocab

import bert_tf
from bert_tf.tasks.ner.features import ner_features
from bert_tf.tasks.ner.ops import word_windows
from serving.export.saved_model import export_saved_model

VOCABULARY = bert_tf.Vocabulary(tuple(VOCAB), lower_case=True)
UNK, CLS, SEP = VOCABULARY.unk_id, VOCABULARY.cls_id, VOCABULARY.sep_id


def reference_windows(sentence: list[list[int]], seq_length: int):
    """(ids, word ids) per window and (window, position) per word: a word joins the window unless it would overflow."""
    budget = seq_length - 2
    windows, used = [[]], 0
    for index, pieces in enumerate(sentence):
        pieces = pieces or [UNK]
        if used and used + len(pieces) > budget:
            windows.append([])
            used = 0
        windows[-1].extend((index, piece) for piece in pieces)
        used += len(pieces)
    ids, word_ids, first_pieces = [], [], {}
    for window_index, tokens in enumerate(windows):
        tokens = tokens[:budget]
        ids.append([CLS] + [piece for _, piece in tokens] + [SEP])
        word_ids.append([-1] + [word for word, _ in tokens] + [-1])
        for position, (word, _) in enumerate(tokens, start=1):
            first_pieces.setdefault(word, (window_index, position))
    return ids, word_ids, [first_pieces[index] for index in range(len(sentence))]


def random_sentences(seed: int, count: int) -> list[list[list[int]]]:
    """Piece ids per word: mostly 1 to 3 pieces, some words without pieces or longer than a window."""
    rng = random.Random(seed)
    lengths = [0, 1, 1, 1, 2, 2, 3, 5, 20]
    return [[[rng.randrange(5, len(VOCAB)) for _ in range(rng.choice(lengths))] for _ in range(rng.randrange(0, 30))]
            for _ in range(count)]


def as_lists(windows):
    per_word = zip(windows.word_window.to_list(), windows.word_position.to_list())
    return list(zip(windows.input_word_ids.to_list(), windows.word_ids.to_list(),
                    [list(zip(window, position)) for window, position in per_word]))


@pytest.mark.parametrize("seq_length", [3, 4, 7, 16])
def test_windows_follow_the_greedy_whole_word_rule(seq_length):
    sentences = random_sentences(seed=seq_length, count=60)
    pieces = tf.ragged.constant(sentences, dtype=tf.int32, ragged_rank=2)
    expected = [reference_windows(sentence, seq_length) for sentence in sentences]
    assert as_lists(word_windows(pieces, seq_length, VOCABULARY)) == expected
    in_graph = tf.function(lambda pieces: word_windows(pieces, seq_length, VOCABULARY))
    assert as_lists(in_graph(pieces)) == expected


def test_a_small_example_word_by_word():
    # Windows of 3 pieces: "a" + "b ##c" fit, "d" starts a window, a word of 4 pieces keeps 3, a word without
    # pieces is [UNK]; a sentence without words is [CLS] [SEP].
    pieces = tf.ragged.constant([[[5], [6, 27], [8], [9, 9, 9, 9], []], []], dtype=tf.int32, ragged_rank=2)
    windows = word_windows(pieces, seq_length=5, vocabulary=VOCABULARY)
    assert windows.input_word_ids.to_list() == [
        [[CLS, 5, 6, 27, SEP], [CLS, 8, SEP], [CLS, 9, 9, 9, SEP], [CLS, UNK, SEP]], [[CLS, SEP]]]
    assert windows.word_ids.to_list() == [[[-1, 0, 1, 1, -1], [-1, 2, -1], [-1, 3, 3, 3, -1], [-1, 4, -1]], [[-1, -1]]]
    assert windows.word_window.to_list() == [[0, 0, 1, 2, 3], []]
    assert windows.word_position.to_list() == [[1, 2, 1, 1, 1], []]


def test_an_empty_batch_has_no_windows():
    pieces = tf.RaggedTensor.from_row_lengths(
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), tf.zeros([0], tf.int64)), tf.zeros([0], tf.int64))
    assert as_lists(word_windows(pieces, 8, VOCABULARY)) == []


NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SEQ_LENGTH = 16
WORDS = ["the", "film", "films", "movies", "greatly", "badly", "paris,", "Berlin!", "lives", "in", "zzz", "héllo",
         "\u200b", "dull", "a", "very", "good", "who?", "filmsssssssssssssssss"]


def long_texts() -> list[str]:
    """Texts of 40 to 60 words, multi-piece words, [UNK]s, words without pieces and words longer than a window."""
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(40, 61))) for _ in range(4)]
    return texts + ["filmsssssssssssssssss  the\tfilm", "\u200b " * 20 + "paris", "who lives in paris ?"]


@pytest.mark.slow
def test_the_saved_model_tags_every_word_as_the_prediction_pipeline(tmp_path):
    from bert_tf.prediction import Predictor

    vocab_file = write_vocab(tmp_path)
    model = bert_tf.BertTokenClassifier(tiny_encoder(seed=3), num_labels=len(NER_LABELS), label_names=NER_LABELS)
    model_dir = bert_tf.save_pretrained(model, tmp_path / "ner", vocab_file=vocab_file, task="ner",
                                        seq_length=SEQ_LENGTH, settings={"label_names": NER_LABELS})
    signatures = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", "ner"))).signatures
    texts = long_texts()
    outputs = signatures["serving_default"](text=tf.constant(texts))
    recognized = Predictor(model_dir).recognize(texts)
    assert sum(len(result["entities"]) for result in recognized) > 10
    for row, result in enumerate(recognized):
        count = len(result["words"])
        assert [word.decode() for word in outputs["words"][row].numpy()[:count]] == result["words"]
        assert [tag.decode() for tag in outputs["word_tags"][row].numpy()[:count]] == result["tags"]
        assert set(outputs["word_tags"][row].numpy()[count:]) <= {b""}
        served = [{"type": kind.decode(), "text": text.decode(), "start": start, "end": end, "score": score}
                  for kind, text, start, end, score in zip(*(outputs[f"entity_{name}"][row].numpy().tolist() for name in (
                      "type", "text", "char_start", "char_end", "score"))) if kind]
        assert [{**entity, "score": pytest.approx(entity["score"], abs=1e-5)} for entity in result["entities"]] == served
        assert all(texts[row][entity["start"]:entity["end"]] == entity["text"] for entity in served)

    # The windows are the pipeline's sequences, and their probabilities the Keras model's on them.
    words = [result["words"] for result in recognized]
    features = ner_features(words, bert_tf.BertTokenizer(vocab_file), SEQ_LENGTH)
    ids = signatures["preprocess"](text=tf.constant(texts))
    present = ids["input_mask"].numpy()[:, :, 0] == 1  # [batch, most windows]: the windows each text has
    assert np.flatnonzero(present.ravel()).size == len(features.input_word_ids)
    assert (np.nonzero(present)[0] == features.sentence_index).all()
    for window, expected in zip(ids["input_word_ids"].numpy()[present], features.input_word_ids):
        assert window[:len(expected)].tolist() == expected.tolist() and not window[len(expected):].any()
    windows = {name: value.numpy()[present] for name, value in ids.items()}
    probabilities = tf.nn.softmax(model(windows, training=False)).numpy()
    np.testing.assert_allclose(outputs["probabilities"].numpy()[present], probabilities, atol=1e-5, rtol=0)
    assert not outputs["probabilities"].numpy()[~present].any()
    assert not outputs["tags"].numpy()[~present].astype(bool).any()
    assert (outputs["tag_ids"].numpy()[present] == probabilities.argmax(-1)).all()
