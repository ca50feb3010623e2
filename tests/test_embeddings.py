"""Sentence and token vectors of a `BertEmbedder` read as features (`TextEmbedder`): pooling against NumPy, padding
invariance, layers, words, files."""

import json
import logging

import numpy as np
import pytest

from bert_tf import BertEmbedder, BertModel, BertPreprocessor, BertTokenizer, cos_sim
from bert_tf.layers.pooling import TokenPooling
from bert_tf.tasks.embedding.embedding_files import embed_file
from bert_tf.tasks.embedding.text_embedder import TextEmbedder
from tiny_inspection_models import CONFIG, MAX_LENGTH, TOKENS

TEXTS = ["the woman went to the store and bought a pair of shoes", "i opened", "", "we sat on the river bank ."]


@pytest.fixture(scope="module")
def encoder():
    return BertModel(CONFIG)


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(list(TOKENS))


def text_embedder(encoder, tokenizer, max_length=MAX_LENGTH, batch_size=32, **options) -> TextEmbedder:
    """The encoder read with `BertEmbedder`'s `options` (default: mean pooling, not normalised)."""
    model = BertEmbedder(encoder, **{"normalize": False, **options})
    model.set_preprocessor(BertPreprocessor(tokenizer, max_length, padding="longest"))
    return TextEmbedder(model, batch_size)


@pytest.fixture(scope="module")
def embedder(encoder, tokenizer):
    return text_embedder(encoder, tokenizer)


def numpy_pool(hidden, mask, pooling):
    """Reference pooling of one example [seq, dim] with mask [seq]."""
    real = hidden[mask.astype(bool)]
    if pooling == "cls":
        return hidden[0]
    if not len(real):
        return np.zeros(hidden.shape[-1] * (2 if pooling == "mean_max" else 1))
    mean, maximum = real.mean(axis=0), real.max(axis=0)
    return {"mean": mean, "max": maximum, "mean_max": np.concatenate([mean, maximum])}[pooling]


@pytest.mark.parametrize("pooling", ["cls", "mean", "max", "mean_max"])
def test_token_pooling_matches_numpy_with_padding(pooling):
    rng = np.random.default_rng(0)
    # All negative: a max that let padding positions (zeros) in would show.
    hidden = rng.normal(size=(4, 6, 5)).astype(np.float32) - 3.0
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    pooled = TokenPooling(pooling)(hidden, mask).numpy()
    expected = np.stack([numpy_pool(h, m, pooling) for h, m in zip(hidden, mask)])
    np.testing.assert_allclose(pooled, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pooling, layers", [("cls", (-1,)), ("mean", (0,)), ("max", (-1,)), ("mean_max", (-2, -1)),
                                             ("pooled", (-1,)), ("mean", ("embeddings", -1))])
def test_sentence_vectors_match_unpadded_reference(encoder, tokenizer, embedder, pooling, layers):
    """Batched with padding="longest" (padding present) = each text alone, pooled in NumPy."""
    batched = text_embedder(encoder, tokenizer, pooling=pooling, encoder_layers=layers, batch_size=3)
    vectors = batched.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), batched.dim()) and vectors.dtype == np.float32
    for text, vector in zip(TEXTS, vectors):
        ids = [tokenizer.vocabulary.cls_id, *tokenizer.tokenize(text).numpy().tolist(), tokenizer.vocabulary.sep_id]
        outputs = encoder({"input_word_ids": np.array([ids])})
        if pooling == "pooled":
            expected = outputs["pooled_output"][0].numpy()
        else:
            hidden = np.concatenate([(outputs["embedding_output"] if layer == "embeddings" else
                                      outputs["encoder_outputs"][layer])[0].numpy() for layer in layers], axis=-1)
            expected = numpy_pool(hidden, np.ones(len(ids)), pooling)
        np.testing.assert_allclose(vector, expected, atol=2e-5)


@pytest.mark.slow
def test_normalize_and_skip_special_tokens(encoder, tokenizer, embedder):
    texts = TEXTS[:2]
    plain = embedder.embed(texts)
    normalized = text_embedder(encoder, tokenizer, normalize=True)
    unit = normalized.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(unit, plain / np.linalg.norm(plain, axis=1, keepdims=True), atol=1e-6)
    unit_tokens = normalized.embed_tokens(texts)
    np.testing.assert_allclose(np.linalg.norm(unit_tokens[0].vectors, axis=1), 1.0, atol=1e-6)

    skipping = text_embedder(encoder, tokenizer, skip_special_tokens=True).embed(texts)
    for vector, item in zip(skipping, embedder.embed_tokens(texts)):
        np.testing.assert_allclose(vector, item.vectors[1:-1].mean(axis=0), atol=2e-5)  # without [CLS] and [SEP]


def test_token_vectors_name_their_words(encoder, tokenizer):
    item, = text_embedder(encoder, tokenizer, encoder_layers=(-2, -1)).embed_tokens(["We sat, playing  Players"])
    assert item.tokens == ["[CLS]", "we", "sat", ",", "play", "##ing", "play", "##er", "##s", "[SEP]"]
    assert item.words == ["We", "sat", ",", "playing", "Players"]
    assert item.word_ids == [-1, 0, 1, 2, 3, 3, 4, 4, 4, -1]
    assert item.starts[4:9] == [8, 12, 17, 21, 23] and item.ends[4:9] == [12, 15, 21, 23, 24]
    assert item.starts[0] is None and item.ends[-1] is None
    assert item.vectors.shape == (10, 2 * CONFIG.hidden_size)
    np.testing.assert_allclose(item.word_vector("players"), item.vectors[6:9].mean(axis=0))
    with pytest.raises(KeyError, match="occurs 0 time"):
        item.word_vector("bank")
    record = item.to_json()
    assert record["tokens"][5] == {"token": "##ing", "word": "playing", "word_index": 3, "start": 12, "end": 15,
                                   "vector": pytest.approx(item.vectors[5].tolist(), abs=1e-6)}


def test_bank_has_a_contextual_vector_but_one_word_embedding(encoder, tokenizer, embedder):
    """The README example: same word, different sentences → different vectors; the input embedding is the same."""
    money, river = embedder.embed_tokens(["I opened a bank account", "we sat on the river bank"])
    contextual = cos_sim(money.word_vector("bank"), river.word_vector("bank"))[0, 0]
    word_embeddings = encoder.embeddings.word_embeddings.embeddings.numpy()
    static = word_embeddings[tokenizer.token_to_id("bank")]
    assert contextual < 0.999 and cos_sim(static, static)[0, 0] == pytest.approx(1.0)


def test_bad_settings_are_named(encoder, embedder):
    with pytest.raises(ValueError, match=r"layer\(s\) \[2\] do not exist: the model has 2 layers"):
        BertEmbedder(encoder, encoder_layers=2)
    with pytest.raises(ValueError, match=r"layer\(s\) \[-4, -3\] do not exist"):
        embedder.model.with_options(encoder_layers=(-4, -3, -2, -1))
    with pytest.raises(ValueError, match="pooling='pooled'"):
        BertEmbedder(encoder, pooling="pooled", encoder_layers=(0, 1))
    for bad in ("embedding", (1.0,), (), (True,)):
        with pytest.raises(ValueError, match="layers must be block indices \\(ints\\) or 'embeddings'"):
            BertEmbedder(encoder, encoder_layers=bad)
    with pytest.raises(ValueError, match="pooling must be one of"):
        BertEmbedder(encoder, pooling="median")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        TextEmbedder(embedder.model, batch_size=0)


def test_with_options_keeps_the_projection_only_for_the_vectors_it_maps(encoder, tokenizer):
    projected = BertEmbedder(encoder, pooling="cls", embedding_size=48)
    assert projected.with_options() is projected
    normalized = projected.with_options(normalize=False, skip_special_tokens=True)
    assert normalized.embedding_size == 48
    np.testing.assert_array_equal(normalized.projection.get_weights()[0], projected.projection.get_weights()[0])
    other = projected.with_options(pooling="mean")
    assert other.projection is None and other.embedding_size == CONFIG.hidden_size and other.normalize
    assert projected.with_options(encoder_layers=0).projection is None


def test_long_texts_are_truncated_with_one_warning(encoder, tokenizer, caplog):
    long_text = " ".join(["the river"] * 20)
    embedder = text_embedder(encoder, tokenizer, max_length=8, batch_size=2)
    with caplog.at_level(logging.WARNING, logger="bert_tf"):
        vectors = embedder.embed(["i opened", long_text, "we sat", long_text])
    assert vectors.shape == (4, CONFIG.hidden_size)
    assert "2 text(s) longer than 8 tokens were truncated (texts 2, 4" in caplog.text


def test_embed_file_npy_jsonl_and_tokens(tmp_path, encoder, tokenizer, embedder, caplog):
    """Lines stream through tf.data (TextLineDataset, parallel map): the same vectors as a list."""
    source = tmp_path / "in.txt"
    source.write_text("i opened a bank account\n\nwe sat on the river bank\n", encoding="utf-8")
    cls = text_embedder(encoder, tokenizer, pooling="cls", batch_size=2)
    with caplog.at_level(logging.WARNING, logger="bert_tf"):
        assert embed_file(cls, source, tmp_path / "out.npy", progress=False) == 3
    assert "1 blank line(s) (2)" in caplog.text
    texts = ["i opened a bank account", "", "we sat on the river bank"]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), cls.embed(texts), atol=1e-6)

    embed_file(embedder, source, tmp_path / "out.jsonl", progress=False)
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["text"] for r in records] == texts and len(records[0]["vector"]) == CONFIG.hidden_size

    embed_file(embedder, source, tmp_path / "tokens.jsonl", tokens=True, progress=False)
    records = [json.loads(line) for line in (tmp_path / "tokens.jsonl").read_text().splitlines()]
    assert [t["word"] for t in records[2]["tokens"]] == [None, "we", "sat", "on", "the", "river", "bank", None]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.jsonl", "out.npy", "tokens.jsonl"]


def test_embed_file_bad_input_is_clear_and_writes_nothing(tmp_path, embedder):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("\n  \n")
    with pytest.raises(ValueError, match="empty.txt has no text to embed \\(empty file\\)"):
        embed_file(embedder, tmp_path / "empty.txt", tmp_path / "out.npy")
    with pytest.raises(ValueError, match="only blank lines"):
        embed_file(embedder, tmp_path / "blank.txt", tmp_path / "out.npy")
    with pytest.raises(FileNotFoundError, match="Input file not found"):
        embed_file(embedder, tmp_path / "missing.txt", tmp_path / "out.npy")
    with pytest.raises(ValueError, match="must end in .npy or .jsonl"):
        embed_file(embedder, tmp_path / "blank.txt", tmp_path / "out.csv")
    with pytest.raises(ValueError, match="write them to a .jsonl"):
        embed_file(embedder, tmp_path / "blank.txt", tmp_path / "out.npy", tokens=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.txt", "empty.txt"]


PAIRS = [("who sat on the bank ?", "we sat on the river bank ."), ("i opened", "a bank account"), ("", "the store")]


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.slow
def test_text_pairs_are_encoded_together_as_bert_reads_them(encoder, tokenizer, embedder, pooling):
    """[CLS] first [SEP] second [SEP] with segment ids 0 then 1, batched with padding = each pair alone."""
    paired = text_embedder(encoder, tokenizer, pooling=pooling, batch_size=2)
    vectors = paired.embed(PAIRS)
    assert vectors.shape == (len(PAIRS), CONFIG.hidden_size)
    vocabulary = tokenizer.vocabulary
    for (first, second), vector in zip(PAIRS, vectors):
        first_ids, second_ids = (tokenizer.tokenize(text).numpy().tolist() for text in (first, second))
        ids = [vocabulary.cls_id, *first_ids, vocabulary.sep_id, *second_ids, vocabulary.sep_id]
        types = [0] * (len(first_ids) + 2) + [1] * (len(second_ids) + 1)
        hidden = encoder({"input_word_ids": np.array([ids]), "input_type_ids": np.array([types])})["sequence_output"]
        np.testing.assert_allclose(vector, numpy_pool(hidden[0].numpy(), np.ones(len(ids)), pooling), atol=2e-5)
    # A pair is not the same as its texts joined: the segment ids and the [SEP] between them count.
    joined = paired.embed([f"{first} {second}" for first, second in PAIRS])
    assert np.abs(joined - vectors).max() > 1e-3


@pytest.mark.slow
def test_text_pairs_from_a_dataset_and_their_errors(embedder, caplog, encoder, tokenizer):
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(([first for first, _ in PAIRS], [second for _, second in PAIRS]))
    batches = list(text_embedder(encoder, tokenizer, batch_size=2).iter_sentence_vectors(dataset))
    assert [text for texts, _ in batches for text in texts] == [f"{first}\t{second}" for first, second in PAIRS]
    np.testing.assert_allclose(np.concatenate([v for _, v in batches]), embedder.embed(PAIRS), atol=1e-6)

    with pytest.raises(ValueError, match="all strings or all \\(first, second\\) pairs of strings; item 1 is 'a cat'"):
        embedder.embed([("a", "b"), "a cat"])
    with pytest.raises(ValueError, match="item 0 is \\('a', 'b', 'c'\\)"):
        embedder.embed([("a", "b", "c")])
    with pytest.raises(ValueError, match="Token vectors are per text"):
        embedder.embed_tokens(PAIRS)

    short = text_embedder(encoder, tokenizer, max_length=8)
    with caplog.at_level(logging.WARNING, logger="bert_tf"):
        short.embed([("i opened", "a bank account"), ("i opened", "a bank account a")])  # 8 tokens fit; 9 do not
    assert "1 text(s) longer than 8 tokens were truncated (texts 2," in caplog.text


def test_embed_file_pairs(tmp_path, embedder):
    source = tmp_path / "pairs.tsv"
    source.write_text("".join(f"{first}\t{second}\n" for first, second in PAIRS), encoding="utf-8")
    assert embed_file(embedder, source, tmp_path / "pairs.npy", progress=False, pairs=True) == len(PAIRS)
    np.testing.assert_allclose(np.load(tmp_path / "pairs.npy"), embedder.embed(PAIRS), atol=1e-6)

    (tmp_path / "bad.tsv").write_text("a\tb\nno tab here\nc\td\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="2 line\\(s\\) have no tab between the two texts of a pair \\(lines 2, 4\\)"):
        embed_file(embedder, tmp_path / "bad.tsv", tmp_path / "bad.npy", pairs=True)
    with pytest.raises(ValueError, match="embed text pairs as sentence vectors"):
        embed_file(embedder, source, tmp_path / "t.jsonl", tokens=True, pairs=True)
    assert not (tmp_path / "bad.npy").exists()
