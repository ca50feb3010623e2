"""CoNLL reading, BIO/IOB1 tags, and word ↔ WordPiece label alignment for NER."""

import numpy as np
import pytest
from tiny_finetune_files import write_conll, write_vocab

import bert_tf
from bert_tf.tasks.ner.conll import read_conll, tag_scheme, to_bio
from bert_tf.tasks.ner.features import ner_features, sentence_predictions, word_pieces
from bert_tf.tasks.ner.metrics import extract_entities

IGNORE = bert_tf.IGNORE_LABEL


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return bert_tf.BertTokenizer(write_vocab(tmp_path_factory.mktemp("vocab")))


def test_reads_sentences_skipping_docstart_and_blank_lines(tmp_path):
    sentences = read_conll(write_conll(tmp_path / "train.txt"))
    assert len(sentences) == 6
    assert sentences[0].words == ["mary", "lives", "in", "paris", "."]
    assert sentences[0].tags == ["B-PER", "O", "O", "B-LOC", "O"]
    assert sentences[0].line == 3 and sentences[1].line == 9  # after "-DOCSTART-", its blank line, 5 words, 1 blank


@pytest.mark.parametrize("text, message", [
    ("EU NNP B-ORG\nrejects\n", r"bad.txt, line 2: expected 'word ... tag'"),
    ("EU NNP B-ORG\nrejects VBZ X-MISC\n", r"bad.txt, line 2: tag 'X-MISC' is not 'O'"),
    ("EU NNP B-\n", r"bad.txt, line 1: tag 'B-'"),
    ("-DOCSTART- -X- -X- O\n\n", r"bad.txt: no sentences"),
    ("", r"bad.txt: no sentences"),
])
def test_malformed_files_are_errors_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_conll(path)


def test_a_file_that_is_not_utf8_is_an_error_naming_line_and_byte(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("EU NNP B-ORG\n\nM\u00fcller NNP B-PER\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"^.*latin1.txt, line 3, byte offset 15: the file is not UTF-8 "
                                         r"\(re-save it as UTF-8\); byte 0xfc starts no UTF-8 character.$"):
        read_conll(path)


def test_words_without_tags_for_prediction(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("mary\nlives\n\njohn\n")
    sentences = read_conll(path, need_tags=False)
    assert [s.words for s in sentences] == [["mary", "lives"], ["john"]] and sentences[0].tags is None


def test_iob1_becomes_bio_with_the_same_entities():
    iob1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-ORG", "O", "I-MISC"]
    bio = to_bio(iob1)
    assert bio == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "B-ORG", "O", "B-MISC"]
    assert extract_entities(bio) == extract_entities(iob1)
    assert to_bio(bio) == bio
    assert tag_scheme([iob1]) == "IOB1" and tag_scheme([bio]) == "BIO"


def test_labels_go_on_the_first_piece_of_multi_piece_words(tokenizer):
    # hugging = hug ##ging, snowboarding = snow ##board ##ing, zzz = [UNK]
    words = ["hugging", "mary", "snowboarding", "zzz", "paris"]
    assert [len(pieces) for pieces in word_pieces([words], tokenizer)[0]] == [2, 1, 3, 1, 1]
    features = ner_features([words], tokenizer, seq_length=16, word_labels=[[0, 1, 0, 2, 3]])
    vocabulary = tokenizer.vocabulary
    assert tokenizer.id_to_token(features.input_word_ids[0]).numpy().tolist() == [
        b"[CLS]", b"hug", b"##ging", b"mary", b"snow", b"##board", b"##ing", b"[UNK]", b"paris", b"[SEP]"]
    assert features.input_word_ids[0][0] == vocabulary.cls_id
    assert features.word_ids[0].tolist() == [-1, 0, 0, 1, 2, 2, 2, 3, 4, -1]
    assert features.labels[0].tolist() == [IGNORE, 0, IGNORE, 1, 0, IGNORE, IGNORE, 2, 3, IGNORE]


def test_long_sentences_are_split_into_chunks_of_whole_words_and_joined_again(tokenizer):
    words = ["snowboarding", "mary", "hugging", "paris", "john"]  # 3 + 1 + 2 + 1 + 1 pieces
    labels = [0, 1, 0, 2, 1]
    features = ner_features([words, ["john"]], tokenizer, seq_length=6, word_labels=[labels, [1]])  # 4 pieces each
    assert [ids.tolist() for ids in features.word_ids] == [[-1, 0, 0, 0, 1, -1], [-1, 2, 2, 3, 4, -1], [-1, 0, -1]]
    assert features.sentence_index.tolist() == [0, 0, 1]
    assert all(len(ids) <= 6 for ids in features.input_word_ids)
    # Logits that put each token's label (from the features' labels) first: predictions give back the labels.
    logits = [np.eye(3)[np.where(label == IGNORE, 0, label)] for label in features.labels]
    assert [p.tolist() for p in sentence_predictions(features, logits, [5, 1])] == [labels, [1]]


def test_a_word_longer_than_the_sequence_keeps_its_first_pieces(tokenizer):
    features = ner_features([["mary", "snowboarding"]], tokenizer, seq_length=4, word_labels=[[1, 2]])
    assert [ids.tolist() for ids in features.word_ids] == [[-1, 0, -1], [-1, 1, 1, -1]]
    assert [labels.tolist() for labels in features.labels] == [[IGNORE, 1, IGNORE], [IGNORE, 2, IGNORE, IGNORE]]


def test_conll2003_in_shared_data_is_bio(shared_data):
    train = read_conll(shared_data / "conll2003" / "train.txt")
    assert len(train) == 14041 and sum(len(s.words) for s in train) == 203621
    assert tag_scheme([s.tags for s in train]) == "BIO"
