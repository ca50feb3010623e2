"""The search SavedModel (`bert-tf index`): dense, lexical (BM25) and hybrid search in one graph, served as any model
(an input left out takes the index's default, as TF Serving does), asked by `bert-tf search`."""

import json

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.retrieval.bm25 import BM25Index
from bert_tf.retrieval.fusion import RRF_K
from bert_tf_cli import main
from serving.client.grpc_client import GrpcClient
from serving.client.rest_client import RestClient
from serving.export.search_index import SearchSettings, embedded_corpus, export_search_index
from serving.export.signatures import serving_spec
from serving.server.model_server import ModelServer
from tiny_finetune_files import VOCAB, write_vocab

DOCUMENTS = {"d1": "good film", "d2": "the plot was bad", "d3": "paris and london", "d4": "a very nice film",
             "d5": "mary and john"}
QUERIES = ["a good film", "london", "plot of the film"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"_id": key, "title": "", "text": text}) + "\n"
                            for key, text in DOCUMENTS.items()))
    return path


@pytest.fixture(scope="module")
def everything(embedder_dir, corpus, tmp_path_factory):
    """A loaded index that returns every document (top_k 50 > 5): each mode's full ranking."""
    version = export_search_index(embedder_dir, corpus, tmp_path_factory.mktemp("all"), "search",
                                  settings=SearchSettings(top_k=50), progress=False)
    return tf.saved_model.load(str(version))


def ask(loaded, queries, mode="hybrid", fusion="rrf", dense_weight=0.5):
    found = loaded.signatures["serving_default"](text=tf.constant(queries), mode=tf.constant(mode),
                                                  fusion=tf.constant(fusion), dense_weight=tf.constant(dense_weight))
    return {name: value.numpy() for name, value in found.items()}


def expected_dense(embedder_dir):
    """Every query's cosine with every document, from the model's own vectors (NumPy)."""
    model = bert_tf.load_model_directory(embedder_dir).model
    return model.predict(QUERIES, verbose=0) @ model.predict(list(DOCUMENTS.values()), verbose=0).T


def test_dense_mode_answers_the_exact_top_k(embedder_dir, everything):
    scores = expected_dense(embedder_dir)
    order = np.argsort(-scores, axis=1, kind="stable")
    found = ask(everything, QUERIES, mode="dense")
    assert found["indices"].tolist() == order.tolist()
    np.testing.assert_allclose(found["scores"], np.take_along_axis(scores, order, axis=1), atol=1e-5)
    assert [[value.decode() for value in row] for row in found["ids"]] == [[list(DOCUMENTS)[i] for i in row]
                                                                          for row in order]
    assert [value.decode() for value in found["texts"][0]] == [list(DOCUMENTS.values())[i] for i in order[0]]
    alone = everything.signatures["dense"](text=tf.constant(QUERIES))
    np.testing.assert_array_equal(alone["indices"].numpy(), found["indices"])


def test_lexical_mode_is_bm25(everything):
    indices, scores = BM25Index(list(DOCUMENTS.values())).search(QUERIES, top_k=5)
    found = ask(everything, QUERIES, mode="lexical")
    np.testing.assert_array_equal(found["indices"], indices)
    np.testing.assert_allclose(found["scores"], scores, atol=1e-6)
    assert found["scores"][1, 0] > 0 and list(DOCUMENTS)[found["indices"][1, 0]] == "d3"  # "london"


def numpy_fusion(dense_list, lexical_list, fusion, weight):
    """The fused scores of every document, from each retriever's full ranking (indices, scores), float32 as the
    graph computes them."""
    fused = np.zeros([len(dense_list[0]), len(DOCUMENTS)], np.float32)
    for (indices, scores), is_dense in ((dense_list, True), (lexical_list, False)):
        for row, (row_indices, row_scores) in enumerate(zip(indices, scores)):
            candidate = np.ones_like(row_scores, bool) if is_dense else row_scores > 0
            if fusion == "rrf":
                part = np.float32(1) / (np.float32(RRF_K) + np.arange(1, len(row_scores) + 1, dtype=np.float32))
            else:
                low, high = row_scores[candidate].min(), row_scores[candidate].max()
                part = (row_scores - low) / (high - low) if high > low else np.ones_like(row_scores)
                part = np.float32(weight if is_dense else 1 - weight) * part.astype(np.float32)
            fused[row, row_indices[candidate]] += part[candidate]
    return fused


@pytest.mark.parametrize("fusion, weight", [("rrf", 0.5), ("weighted", 0.3)])
def test_hybrid_mode_fuses_the_two_rankings(everything, fusion, weight):
    dense = ask(everything, QUERIES, mode="dense")
    lexical = ask(everything, QUERIES, mode="lexical")
    fused = numpy_fusion((dense["indices"], dense["scores"]), (lexical["indices"], lexical["scores"]), fusion, weight)
    found = ask(everything, QUERIES, mode="hybrid", fusion=fusion, dense_weight=weight)
    np.testing.assert_array_equal(found["indices"], np.argsort(-fused, axis=1, kind="stable"))
    np.testing.assert_allclose(found["scores"], -np.sort(-fused, axis=1), atol=1e-6)


def test_bad_modes_are_refused(everything):
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode must be lexical, dense or hybrid"):
        ask(everything, QUERIES, mode="semantic")
    with pytest.raises(tf.errors.InvalidArgumentError, match="dense_weight must be between 0 and 1"):
        ask(everything, QUERIES, fusion="weighted", dense_weight=1.5)
    with pytest.raises(ValueError, match="mode must be one of lexical, dense, hybrid"):
        SearchSettings(mode="sparse")


def test_bert_tf_serve_serves_it_with_its_defaults_and_bert_tf_search_asks_it(embedder_dir, corpus, tmp_path,
                                                                                capsys):
    assert main(["index", "--model", str(embedder_dir), "--corpus", str(corpus), "--out", str(tmp_path),
                 "--name", "search", "--top-k", "3", "--fusion", "weighted", "--dense-weight", "0.7"]) == 0
    local = tf.saved_model.load(str(tmp_path / "search" / "1"))
    expected = ask(local, QUERIES, mode="hybrid", fusion="weighted", dense_weight=0.7)
    with ModelServer("search", tmp_path / "search", poll_wait_s=0) as server:
        target = f"127.0.0.1:{server.grpc_port}"
        with GrpcClient(target, model_name="search", timeout_s=30) as client:
            answer = client.predict({"text": QUERIES})  # mode, fusion and dense_weight: the index's defaults
            lexical = client.predict({"text": QUERIES, "mode": "lexical"})
        over_rest = RestClient(f"http://127.0.0.1:{server.rest_port}", model_name="search", timeout_s=30).predict(
            {"text": QUERIES})
        with GrpcClient(target, model_name="search", signature_name="model_info", timeout_s=30) as client:
            info = client.predict({"request": [""]})
        capsys.readouterr()
        assert main(["search", "--server", target, "--model", "search", "--json", "--top-k", "2", QUERIES[1]]) == 0
        served_lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    np.testing.assert_allclose(answer["scores"], expected["scores"], atol=1e-5)
    np.testing.assert_array_equal(answer["ids"], expected["ids"])
    np.testing.assert_allclose(over_rest["scores"], expected["scores"], atol=1e-5)
    np.testing.assert_array_equal(lexical["indices"], ask(local, QUERIES, mode="lexical")["indices"])
    assert int(info["documents"][0]) == len(DOCUMENTS) and int(info["top_k"][0]) == 3
    assert info["mode"][0] == b"hybrid" and info["fusion"][0] == b"weighted"
    assert served_lines == [{"query": QUERIES[1], "results": [
        {"rank": rank, "score": pytest.approx(float(score), abs=1e-5), "id": identifier.decode(),
         "text": DOCUMENTS[identifier.decode()]}
        for rank, (score, identifier) in enumerate(zip(expected["scores"][1][:2], expected["ids"][1][:2]), start=1)]}]
    # Local: rank, score, id and the document's text, at the index's top_k or fewer.
    assert main(["search", "--model", str(tmp_path / "search"), "--mode", "lexical", "--top-k", "1", QUERIES[1]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == QUERIES[1] and lines[1].split("\t")[2:] == ["d3", "paris and london"] and len(lines) == 2
    assert main(["search", "--model", str(tmp_path / "search"), "--top-k", "4", QUERIES[1]]) == 2
    assert "--top-k 4 is more than the index's 3" in capsys.readouterr().err


def test_long_documents_are_counted_and_seq_length_is_checked(embedder_dir, caplog):
    texts = ["good film " * 20, "bad plot", "nice " * 30]
    directory = bert_tf.load_model_directory(embedder_dir)
    at_16 = embedded_corpus(serving_spec(directory), texts, progress=False)
    assert "2 of 3 documents are longer than 16 tokens" in caplog.text
    caplog.clear()
    at_32 = embedded_corpus(serving_spec(directory, seq_length=32), texts, progress=False)
    assert "1 of 3 documents are longer than 32 tokens" in caplog.text
    np.testing.assert_allclose(at_16[1], at_32[1], atol=1e-6)  # a short text's vector is the same
    assert np.abs(at_16[0] - at_32[0]).max() > 1e-3  # a long one reads more
    with pytest.raises(ValueError, match="64"):
        serving_spec(directory, seq_length=64)  # the position table holds 32


def test_only_a_sentence_embedding_model_indexes(tmp_path, corpus):
    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=32))
    classifier = bert_tf.save_pretrained(bert_tf.BertClassifier(encoder, num_classes=2), tmp_path / "c",
                                         vocab_file=vocab, seq_length=16)
    with pytest.raises(ValueError, match="is a classify model: a search index needs a sentence-embedding model"):
        export_search_index(classifier, corpus, tmp_path, "search", progress=False)


def test_a_corpus_without_words_is_refused_before_embedding(embedder_dir, tmp_path):
    path = tmp_path / "stop.jsonl"
    path.write_text('{"_id": "a", "text": "the a"}\n{"_id": "b", "text": "x y z"}\n')
    with pytest.raises(ValueError, match="No document has a word BM25 can index"):
        export_search_index(embedder_dir, path, tmp_path, "search", progress=False)


def test_a_lexical_index_needs_no_model(corpus, tmp_path, capsys):
    assert main(["index", "--corpus", str(corpus), "--out", str(tmp_path), "--name", "words"]) == 2
    assert "Give --model (a sentence-embedding model directory) or --lexical-only" in capsys.readouterr().err
    assert main(["index", "--lexical-only", "--corpus", str(corpus), "--out", str(tmp_path), "--name", "words",
                 "--top-k", "3"]) == 0
    loaded = tf.saved_model.load(str(tmp_path / "words" / "1"))
    indices, scores = BM25Index(list(DOCUMENTS.values())).search(QUERIES, top_k=3)
    found = ask(loaded, QUERIES, mode="lexical")
    np.testing.assert_array_equal(found["indices"], indices)
    np.testing.assert_allclose(found["scores"], scores, atol=1e-6)
    np.testing.assert_array_equal(loaded.signatures["lexical"](text=tf.constant(QUERIES))["indices"].numpy(), indices)
    info = loaded.signatures["model_info"](request=tf.constant([""]))
    assert info["mode"].numpy()[0] == b"lexical" and info["task"].numpy()[0] == b"search"
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode must be lexical .the index was written without"):
        ask(loaded, QUERIES, mode="dense")
    with pytest.raises(ValueError, match="An index without a model searches by words only"):
        export_search_index(None, corpus, tmp_path, "words", progress=False)


def test_search_by_words_shows_only_documents_that_share_a_word(corpus, tmp_path, capsys):
    """BM25 scores 0 for a document without a word of the query: `bert-tf search` does not list it as found (it did,
    with score 0.0000: "Beyonce" on SciFact listed three unrelated abstracts)."""
    assert main(["index", "--lexical-only", "--corpus", str(corpus), "--out", str(tmp_path), "--name", "words",
                 "--top-k", "3", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["search", "--model", str(tmp_path / "words"), "--json", "london", "zebra"]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [[result["id"] for result in answer["results"]] for answer in answers] == [["d3"], []]
    assert main(["search", "--model", str(tmp_path / "words"), "zebra"]) == 0
    assert capsys.readouterr().out == "zebra\n  no document shares a word with this query\n"
