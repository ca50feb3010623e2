"""Fill-mask: encoding of [MASK], probabilities, top-k, whole words of several pieces, Hugging Face parity."""

import logging

import numpy as np
import pytest

from bert_tf import BertModel, BertTokenizer
from bert_tf.inspection import fill_mask, load_inspection_model, mask_probabilities
from bert_tf.inspection.fill_mask import encode_masked_text
from tiny_inspection_models import CONFIG, TOKENS, save_tiny, tiny_pretrainer, write_vocab

SENTENCE = "The woman went to the store and bought a [MASK] of shoes."


@pytest.fixture(scope="module")
def pretrainer():
    return tiny_pretrainer()


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(list(TOKENS), lower_case=True)


def token_id(token):
    return TOKENS.index(token)


def test_masks_are_placed_by_hand_and_adjacent_masks_form_one_word(tokenizer):
    ids, spans = encode_masked_text(tokenizer, "a [MASK] of [MASK][MASK]. [MASK] [MASK]", max_length=24)
    mask, cls, sep = token_id("[MASK]"), token_id("[CLS]"), token_id("[SEP]")
    assert ids == [cls, token_id("a"), mask, token_id("of"), mask, mask, token_id("."), mask, mask, sep]
    assert spans == [[2], [4, 5], [7], [8]]


def test_probabilities_sum_to_one_and_top_k_is_sorted(pretrainer, tokenizer):
    result = fill_mask(pretrainer, tokenizer, SENTENCE.replace("store", "[MASK]"), top_k=4)
    assert len(result.spans) == 2
    ids, spans = encode_masked_text(tokenizer, SENTENCE.replace("store", "[MASK]"), max_length=24)
    probabilities = mask_probabilities(pretrainer, [ids], [[span[0] for span in spans]])[0]
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, atol=1e-5)
    for span, probs in zip(result.spans, probabilities):
        values = [candidate.probability for candidate in span.candidates]
        assert len(values) == 4 and values == sorted(values, reverse=True)
        assert [candidate.text for candidate in span.candidates] == [TOKENS[i] for i in np.argsort(-probs)[:4]]
        np.testing.assert_allclose(values, np.sort(probs)[::-1][:4], rtol=1e-6)
    assert result.filled_text().startswith(f"The woman went to the {result.spans[0].candidates[0].text} and bought")


def test_adjacent_masks_are_filled_left_to_right_as_one_word(pretrainer, tokenizer):
    text = "we sat on the [MASK][MASK] ."
    result = fill_mask(pretrainer, tokenizer, text, top_k=3)
    span, = result.spans
    assert span.positions == (5, 6) and len(span.candidates) == 3
    ids, _ = encode_masked_text(tokenizer, text, max_length=24)
    for candidate in span.candidates:
        first, second = candidate.tokens
        assert not first.startswith("##") and not first.startswith("[") and second.startswith("##")
        assert candidate.text == first + second[2:]
        # Its probability: P(first at 5) · P(second at 6 | first at 5).
        p_first = mask_probabilities(pretrainer, [ids], [[5]])[0, 0, token_id(first)]
        filled = list(ids)
        filled[5] = token_id(first)
        p_second = mask_probabilities(pretrainer, [filled], [[6]])[0, 0, token_id(second)]
        assert candidate.probability == pytest.approx(p_first * p_second, rel=1e-4)
    values = [candidate.probability for candidate in span.candidates]
    assert values == sorted(values, reverse=True)
    assert result.filled_text() == f"we sat on the {span.candidates[0].text} ."


def test_bad_texts_have_clear_errors(pretrainer, tokenizer, caplog):
    with pytest.raises(ValueError, match=r"No \[MASK\] in 'no mask here'"):
        fill_mask(pretrainer, tokenizer, "no mask here")
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        fill_mask(pretrainer, tokenizer, SENTENCE, top_k=0)
    long_text = "the river " * 20
    with pytest.raises(ValueError, match=r"its \[MASK\] at token 41 would be cut off"):
        fill_mask(pretrainer, tokenizer, long_text + "[MASK]")
    with caplog.at_level(logging.WARNING, logger="bert_tf"):
        result = fill_mask(pretrainer, tokenizer, "[MASK] " + long_text)
    assert "cut to 22 to fit max_length 24" in caplog.text and result.spans[0].positions == (1,)


def test_model_without_mlm_head_is_a_clear_error(tmp_path):
    model = load_inspection_model(save_tiny(BertModel(CONFIG), tmp_path / "encoder"))
    assert model.pretrainer is None
    with pytest.raises(ValueError, match=r"has no masked-LM head weights \(cls/predictions/\*\)"):
        model.require_pretrainer()


def test_pretrain_output_folder_is_accepted(tmp_path, pretrainer):
    save_tiny(pretrainer, tmp_path / "run" / "model")
    model = load_inspection_model(tmp_path / "run")
    assert model.require_pretrainer() is not None and model.max_length == CONFIG.max_position_embeddings


def test_hugging_face_directories_match_transformers(tmp_path, caplog):
    """A tiny BertForPreTraining saved by transformers: fill-mask probabilities and embeddings as torch computes them;
    a BertForMaskedLM (no pooler, no next-sentence head) loads for fill-mask too."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from bert_tf import TextEmbedder, load_embedder

    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=len(TOKENS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
        max_position_embeddings=24, hidden_act="gelu")
    text = "i opened a [MASK] account and we sat on the [MASK] ."
    for name, cls in (("pretraining", transformers.BertForPreTraining), ("masked_lm", transformers.BertForMaskedLM)):
        hf_model = cls(hf_config).eval()
        with torch.no_grad():  # the bias is 0 at initialisation: give it values, so that loading it is checked
            hf_model.cls.predictions.bias.normal_()
        hf_model.save_pretrained(tmp_path / name)
        write_vocab(tmp_path / name / "vocab.txt")
        with caplog.at_level(logging.WARNING, logger="bert_tf"):
            model = load_inspection_model(tmp_path / name)
        assert model.has_pooler == (name == "pretraining")
        ids, spans = encode_masked_text(model.tokenizer, text, model.max_length)
        positions = [span[0] for span in spans]
        ours = mask_probabilities(model.require_pretrainer(), [ids], [positions])[0]
        with torch.no_grad():
            logits = hf_model(input_ids=torch.tensor([ids])).logits if name == "masked_lm" else (
                hf_model(input_ids=torch.tensor([ids])).prediction_logits)
        theirs = torch.softmax(logits[0, positions], dim=-1).numpy()
        np.testing.assert_allclose(ours, theirs, atol=1e-4)
        result = fill_mask(model.pretrainer, model.tokenizer, text, top_k=3)
        assert [c.text for c in result.spans[1].candidates] == [TOKENS[i] for i in np.argsort(-theirs[1])[:3]]
    assert "has no pooler weights" in caplog.text

    model = load_inspection_model(tmp_path / "pretraining")
    hf_encoder = transformers.BertModel.from_pretrained(tmp_path / "pretraining").eval()
    texts = ["we sat on the river bank", "i opened"]
    vectors = TextEmbedder(load_embedder(tmp_path / "pretraining", pooling="pooled")).embed(texts)
    for text, vector in zip(texts, vectors):
        ids = [token_id("[CLS]"), *model.tokenizer.tokenize(text).numpy().tolist(), token_id("[SEP]")]
        with torch.no_grad():
            expected = hf_encoder(input_ids=torch.tensor([ids])).pooler_output[0].numpy()
        np.testing.assert_allclose(vector, expected, atol=1e-4)
