"""`bert_tf.training.augmentation`: which words are replaced and by what (the masked-LM's top candidates, as fill-mask ranks
them on the trained checkpoint), the rest of the text kept, sentence pairs field by field."""

import numpy as np
import pytest

import bert_tf
from bert_tf.tokenizer import BertTokenizer
from bert_tf.training.augmentation import augment_texts, word_candidates
from tiny_exports import tiny_encoder
from tiny_finetune_files import VOCAB

WORD_STARTS = {token for token in VOCAB if token.isalpha()}


@pytest.fixture(scope="module")
def tiny_mlm():
    return bert_tf.BertPretrainer(tiny_encoder(vocab_size=len(VOCAB), seed=4)), BertTokenizer(VOCAB, lower_case=True)


def test_only_words_of_one_piece_get_candidates_never_themselves_nor_pieces_or_specials(tiny_mlm):
    pretrainer, tokenizer = tiny_mlm
    text = "The film, hugging Paris ?"
    [found] = word_candidates([text], pretrainer, tokenizer, top_k=4, max_length=32, batch_size=2)
    assert [text[start:end] for start, end, _ in found] == ["The", "film", "Paris"]  # "hug ##ging", "," and "?" stay
    for start, end, candidates in found:
        assert len(candidates) == 4 and set(candidates) <= WORD_STARTS - {text[start:end].lower()}


def test_candidates_are_the_masked_lms_most_probable_words(tiny_mlm):
    pretrainer, tokenizer = tiny_mlm
    [found] = word_candidates(["the film was good"], pretrainer, tokenizer, top_k=3, max_length=32, batch_size=8)
    ids = tokenizer.tokenize(["the film was good"]).to_list()[0]
    word_ids = np.array([[2, *ids[:2], 4, ids[3], 3]], np.int32)  # [CLS] the film [MASK] good [SEP]
    logits = pretrainer({"input_word_ids": word_ids, "input_mask": np.ones_like(word_ids),
                         "input_type_ids": np.zeros_like(word_ids), "masked_lm_positions": np.array([[3]])})
    ranked = [VOCAB[i] for i in np.argsort(-logits["mlm_logits"].numpy()[0, 0], kind="stable")]
    assert found[2][2] == [token for token in ranked if token in WORD_STARTS and token != "was"][:3]


def test_copies_replace_words_in_place_and_keep_the_rest(tiny_mlm):
    pretrainer, tokenizer = tiny_mlm
    texts = ["The  film was good.", "snowboarding\tMary lives in Paris"]
    assert augment_texts(texts, pretrainer, tokenizer, copies=5, probability=0.0) == []  # unchanged copies dropped
    copies = augment_texts(texts, pretrainer, tokenizer, copies=6, probability=1.0, top_k=5, seed=1)
    first = [copy for copy in copies if "\t" not in copy]
    assert first and len(set(first)) == len(first)
    for copy in first:
        words = copy.split(" ")
        assert len(words) == 5 and words[1] == "" and copy.endswith(".")  # the spacing and the full stop kept
        assert words[0] != "The" and words[2] != "film" and words[3] != "was" and words[4] != "good."
    pairs = [copy.split("\t") for copy in copies if "\t" in copy]
    assert pairs and all(first_text == "snowboarding" and len(second.split(" ")) == 4 for first_text, second in pairs)
    again = augment_texts(texts, pretrainer, tokenizer, copies=6, probability=1.0, top_k=5, seed=1)
    assert again == copies


def test_on_the_trained_checkpoint_candidates_follow_fill_mask(shared_data):
    from bert_tf.inspection.fill_mask import fill_mask
    from bert_tf.inspection.loading import load_inspection_model

    path = shared_data / "pretrained" / "bert-mini-uncased-books"
    if not path.is_dir():
        pytest.skip(f"{path} not found")
    model = load_inspection_model(path)
    pretrainer, tokenizer = model.require_pretrainer(), model.tokenizer
    [found] = word_candidates(["She opened the door slowly."], pretrainer, tokenizer, top_k=10, max_length=32,
                              batch_size=8)
    door = next(candidates for start, end, candidates in found if (start, end) == (15, 19))
    ranked = fill_mask(pretrainer, tokenizer, "She opened the [MASK] slowly.", top_k=60).spans[0].candidates
    words = [c.text for c in ranked if any(char.isalpha() for char in c.text) and not c.text.startswith(("##", "["))
             and c.text != "door"]
    assert door == words[:10]
    assert {"window", "box"} & set(door)  # a trained masked-LM guesses things that open
