"""The search SavedModel (`bert-tf index`): exact top-k over the stored vectors, served as any model, asked by
`bert-tf search`; its corpus files' errors in one line."""

import json

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf_cli import main
from serving.client.grpc_client import GrpcClient
from serving.export.search_index import export_search_index, read_corpus
from serving.server.model_server import ModelServer
from tiny_finetune_files import VOCAB, write_vocab

DOCUMENTS = {"d1": "good film", "d2": "the plot was bad", "d3": "paris and london", "d4": "a very nice film",
             "d5": "mary and john"}
QUERIES = ["a good film", "london"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"_id": key, "title": "", "text": text}) + "\n"
                            for key, text in DOCUMENTS.items()))
    return path


def expected_top(embedder_dir, k):
    """The top-k document ids and cosines of each query, from the model's own vectors (NumPy)."""
    model = bert_tf.load_model_directory(embedder_dir).model
    documents, queries = model.predict(list(DOCUMENTS.values()), verbose=0), model.predict(QUERIES, verbose=0)
    scores = queries @ documents.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return [[list(DOCUMENTS)[index] for index in row] for row in order], np.take_along_axis(scores, order, axis=1)


def test_the_index_answers_the_exact_top_k(embedder_dir, corpus, tmp_path):
    version = export_search_index(embedder_dir, corpus, tmp_path, "search", top_k=3, progress=False)
    found = tf.saved_model.load(str(version)).signatures["serving_default"](text=tf.constant(QUERIES))
    ids, scores = expected_top(embedder_dir, 3)
    assert [[value.decode() for value in row] for row in found["ids"].numpy()] == ids
    np.testing.assert_allclose(found["scores"].numpy(), scores, atol=1e-5)
    assert found["indices"].numpy().tolist() == [[list(DOCUMENTS).index(key) for key in row] for row in ids]
    # More documents asked for than the corpus has: all of them.
    everything = export_search_index(embedder_dir, corpus, tmp_path, "search", top_k=50, progress=False)
    answer = tf.saved_model.load(str(everything)).signatures["serving_default"](text=tf.constant(QUERIES))
    assert answer["ids"].shape == (2, len(DOCUMENTS))


def test_bert_tf_serve_serves_it_and_bert_tf_search_asks_it(embedder_dir, corpus, tmp_path, capsys):
    assert main(["index", "--model", str(embedder_dir), "--corpus", str(corpus), "--out", str(tmp_path),
                 "--name", "search", "--top-k", "2"]) == 0
    ids, scores = expected_top(embedder_dir, 2)
    with ModelServer("search", tmp_path / "search", poll_wait_s=0) as server:
        with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="search", timeout_s=30) as client:
            answer = client.predict({"text": QUERIES})
            info = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="search", signature_name="model_info",
                              timeout_s=30).predict({"request": [""]})
    assert [[value.decode() for value in row] for row in answer["ids"]] == ids
    np.testing.assert_allclose(answer["scores"], scores, atol=1e-5)
    assert int(info["documents"][0]) == len(DOCUMENTS) and int(info["top_k"][0]) == 2
    capsys.readouterr()
    assert main(["search", "--model", str(tmp_path / "search"), QUERIES[0]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == QUERIES[0] and [line.split("\t")[2] for line in lines[1:]] == ids[0]


def test_only_a_sentence_embedding_model_indexes(tmp_path, corpus):
    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=32))
    classifier = bert_tf.save_pretrained(bert_tf.BertClassifier(encoder, num_classes=2), tmp_path / "c",
                                         vocab_file=vocab, seq_length=16)
    with pytest.raises(ValueError, match="is a classify model: a search index needs a sentence-embedding model"):
        export_search_index(classifier, corpus, tmp_path, "search", progress=False)


@pytest.mark.parametrize("name, text, message", [
    ("empty.jsonl", "\n", "the corpus has no documents"),
    ("bad.jsonl", "{nope\n", r"line 1: not a JSON object"),
    ("keys.jsonl", '{"_id": "a"}\n', r'line 1: a document needs an "_id" \(or "id"\) and a "text"'),
    ("twice.jsonl", '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "the document id 'a' is there twice"),
])
def test_bad_corpora_are_refused_in_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_corpus(path)


def test_a_text_file_is_a_document_per_line(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("first document\n\nsecond one\n")
    assert read_corpus(path) == (["1", "3"], ["first document", "second one"])
