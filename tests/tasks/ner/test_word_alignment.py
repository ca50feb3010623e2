import numpy as np
import pytest

from bert_tf.tasks.ner.word_alignment import IGNORE_LABEL, align_word_labels, first_piece_positions, word_predictions

# [CLS] new york ##er lives in ber ##lin . [SEP] [PAD]   for the words: New Yorker lives in Berlin .
WORD_IDS = [-1, 0, 1, 1, 2, 3, 4, 4, 5, -1, -1]
WORD_LABELS = [1, 2, 0, 0, 3, 0]  # B-PER I-PER O O B-LOC O


def test_labels_go_on_first_pieces_and_everything_else_is_ignored():
    x = IGNORE_LABEL
    assert align_word_labels(WORD_IDS, WORD_LABELS).tolist() == [x, 1, 2, x, 0, 0, 3, x, 0, x, x]


def test_sentence_pairs_restart_word_ids_after_a_special_token():
    # [CLS] a b [SEP] c ##d [SEP]: the second segment's words are numbered from 0 again.
    word_ids = [-1, 0, 1, -1, 0, 0, -1]
    assert first_piece_positions(word_ids).tolist() == [1, 2, 4]
    assert align_word_labels(word_ids, [5, 6]).tolist() == [-100, 5, 6, -100, 5, -100, -100]


def test_truncated_words_have_no_position():
    # The last two words were cut off.
    assert first_piece_positions([-1, 0, 0, 1, -1]).tolist() == [1, 3]
    assert align_word_labels([-1, 0, 0, 1, -1], [7, 8, 9, 9]).tolist() == [-100, 7, -100, 8, -100]


def test_word_predictions_read_the_first_piece_of_each_word():
    logits = np.full((len(WORD_IDS), 4), -1.0)
    logits[np.arange(len(WORD_IDS)), [0, 1, 2, 3, 0, 0, 3, 1, 0, 0, 0]] = 1.0  # later pieces disagree: ignored
    positions = first_piece_positions(WORD_IDS)
    assert word_predictions(logits, positions).tolist() == WORD_LABELS
    names = ["O", "B-PER", "I-PER", "B-LOC"]
    assert word_predictions(logits, positions, label_names=names) == ["B-PER", "I-PER", "O", "O", "B-LOC", "O"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: align_word_labels([-1, 0, 3], [1, 2]), "refers to word 3, but there are only 2 word_labels"),
        (lambda: align_word_labels([[0, 1]], [1, 2]), "1-D integer array"),
        (lambda: align_word_labels([None, 0], [1]), "1-D integer array"),
        (lambda: align_word_labels([0, 1], [[1, 2]]), "word_labels must be 1-D"),
        (lambda: word_predictions(np.zeros((3, 2)), [1, 3]), r"first_piece_positions must be in \[0, 3\)"),
        (lambda: word_predictions(np.zeros((1, 3, 2)), [1]), r"token_logits must be \[seq, num_labels\]"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_an_example_without_words_has_only_ignored_labels():
    assert align_word_labels([-1, -1, -1], []).tolist() == [IGNORE_LABEL] * 3
    assert first_piece_positions([-1, -1]).tolist() == []
