"""The embedding API a sentence-transformers user reaches for: `encode`, `similarity` and `semantic_search`, each
checked against sentence-transformers itself on the same weights or the same vectors; pairs are refused."""

import numpy as np
import pytest

import bert_tf
from bert_tf.tasks.embedding.sentence_transformers_folder import write_sentence_transformers_folder

sentence_transformers = pytest.importorskip("sentence_transformers")
util = pytest.importorskip("sentence_transformers.util")

TEXTS = ["good film", "the plot was bad", "mary and john", "a bad film and a good plot", "film"]


@pytest.fixture(scope="module")
def embedder(embedder_dir):
    return bert_tf.load_embedder(embedder_dir)


def test_encode_gives_sentence_transformers_vectors_of_the_same_weights(embedder, embedder_dir, tmp_path):
    write_sentence_transformers_folder(embedder, tmp_path / "st", vocab_file=embedder_dir / "vocab.txt", seq_length=16)
    theirs = sentence_transformers.SentenceTransformer(str(tmp_path / "st"), device="cpu").encode(TEXTS)
    ours = embedder.encode(TEXTS)
    assert ours.shape == (len(TEXTS), 16) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    np.testing.assert_allclose(embedder.encode(TEXTS, batch_size=2), ours, atol=1e-6)  # batches padded to their longest
    one = embedder.encode("good film")
    assert one.shape == (16,)
    np.testing.assert_allclose(one, ours[0], atol=1e-6)
    assert embedder.encode([]).shape == (0, 16)
    # and read from the sentence-transformers folder itself
    np.testing.assert_allclose(bert_tf.load_embedder(tmp_path / "st").encode(TEXTS), theirs, atol=1e-5)


def test_encode_normalizes_when_asked_as_sentence_transformers_does(embedder_dir):
    loaded = bert_tf.load_model_directory(embedder_dir)
    raw = bert_tf.BertEmbedder(loaded.encoder, normalize=False)
    raw.set_preprocessor(loaded.model.text_preprocessor())
    vectors = raw.encode(TEXTS)
    assert not np.allclose(np.linalg.norm(vectors, axis=-1), 1.0)
    normalized = raw.encode(TEXTS, normalize=True)
    np.testing.assert_allclose(normalized, vectors / np.linalg.norm(vectors, axis=-1, keepdims=True), atol=1e-6)


def test_similarity_and_semantic_search_are_sentence_transformers_own():
    import torch

    rng = np.random.default_rng(0)
    queries, corpus = rng.normal(size=(7, 24)).astype(np.float32), rng.normal(size=(300, 24)).astype(np.float32)
    np.testing.assert_allclose(bert_tf.cos_sim(queries, corpus), util.cos_sim(queries, corpus).numpy(), atol=1e-6)
    theirs = util.semantic_search(torch.from_numpy(queries), torch.from_numpy(corpus), top_k=10)
    ours = bert_tf.semantic_search(queries, corpus, top_k=10)
    assert [[hit["corpus_id"] for hit in hits] for hits in ours] == [[hit["corpus_id"] for hit in hits]
                                                                      for hits in theirs]
    np.testing.assert_allclose([[hit["score"] for hit in hits] for hits in ours],
                               [[hit["score"] for hit in hits] for hits in theirs], atol=1e-6)
    assert [len(hits) for hits in bert_tf.semantic_search(queries[:2], corpus[:3], top_k=10)] == [3, 3]


def test_the_embedder_searches_and_compares_texts(embedder):
    corpus = embedder.encode(TEXTS)
    hits = embedder.semantic_search(["good film", "mary and john"], corpus, top_k=2)
    assert [hits[0][0]["corpus_id"], hits[1][0]["corpus_id"]] == [0, 2]  # each text finds itself first
    assert hits[0][0]["score"] == pytest.approx(1.0, abs=1e-5)
    expected = util.cos_sim(embedder.encode(TEXTS[:2]), corpus).numpy()
    np.testing.assert_allclose(embedder.similarity(TEXTS[:2], TEXTS), expected, atol=1e-6)
    np.testing.assert_allclose(embedder.similarity(corpus[:2], corpus), expected, atol=1e-6)


@pytest.mark.parametrize("call", ["encode", "predict", "call"])
def test_a_pair_of_texts_is_refused_not_joined(embedder, call):
    pair = (["good film", "mary"], ["the plot was bad", "john"])
    with pytest.raises(ValueError) as error:
        {"encode": embedder.encode, "predict": lambda x: embedder.predict(x, verbose=0), "call": embedder}[call](pair)
    assert str(error.value) == bert_tf.BertEmbedder.pairs_refused


def test_the_encoder_of_another_task_is_read_as_an_embedder(embedder_dir, tmp_path):
    """A classifier's encoder, wrapped in a BertEmbedder: mean pooling of its last layer, not normalised (or as asked)."""
    classifier = bert_tf.BertClassifier(bert_tf.load_model_directory(embedder_dir).encoder, num_classes=2)
    bert_tf.save_pretrained(classifier, tmp_path / "classifier", vocab_file=embedder_dir / "vocab.txt", seq_length=16)
    model = bert_tf.load_embedder(tmp_path / "classifier")
    assert (type(model), model.pooling, model.normalize, model.projection) == (bert_tf.BertEmbedder, "mean", False, None)
    by_hand = bert_tf.BertEmbedder(classifier.encoder, normalize=False)
    by_hand.set_preprocessor(model.text_preprocessor())
    np.testing.assert_allclose(model.encode(TEXTS), by_hand.encode(TEXTS), atol=1e-6)
    cls = bert_tf.load_embedder(tmp_path / "classifier", pooling="cls", normalize=True)
    np.testing.assert_allclose(np.linalg.norm(cls.encode(TEXTS), axis=-1), 1.0, atol=1e-6)
