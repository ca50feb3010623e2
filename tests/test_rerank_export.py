"""The export of a reranker (a pair scorer: `bert_tf.tasks.rerank_serving`) takes a query and its documents as raw
text and answers one score per document: the Keras model's, from the SavedModel served over gRPC (≤ 1e-5) and, with
int8 weights, from its `model.tflite` (the agreement measured). A served `rerank` model is asked one (query, document)
pair per example as its model directory is (`ServerPredictor.predict`, `bert-tf predict --server`, `bert-tf evaluate`
of its export): the same scores (≤ 1e-5), printed the same way."""

import json
import re

import numpy as np
import pytest
import tensorflow as tf
from tiny_reranker import local_scores, registered_reranker, tiny_rerank_model

from bert_tf.prediction import Predictor
from bert_tf_cli import main
from serving.client.grpc_client import GrpcClient
from serving.client.server_prediction import ServerPredictor
from serving.export.saved_model import export_saved_model
from serving.server.model_server import ModelServer
from serving.tflite_runner import TfliteModel

QUERIES = ["who lives in paris", "a good film"]
DOCUMENTS = [["mary lives in paris", "the film was bad", "", "paris " * 40],
             ["a very nice film", "john works at acme", "good good good", "it is sad"]]
# (query, document) pairs, one per example: the last document longer than the model's 24 tokens (cut as training cuts).
PAIRS = [("who lives in paris", "mary lives in paris"), ("who lives in paris", "the film was bad"),
         ("a good film", "a very nice film"), ("a good film", "paris " * 40)]
GROUPS = [("who lives in paris ?", "mary lives in paris .", "john lives in berlin .", "the film was good"),
          ("where is acme ?", "acme is in london .", "john works at acme .", "a very nice film"),
          ("who works at acme ?", "john works at acme .", "mary lives in paris .", "acme is in london .")]


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    with registered_reranker(tmp_path_factory.mktemp("reranker")) as model_dir:
        yield model_dir


@pytest.mark.slow
def test_the_served_scores_are_the_keras_model_scores(reranker_dir, tmp_path):
    expected = np.stack([local_scores(reranker_dir, query, documents) for query, documents in zip(QUERIES, DOCUMENTS)])
    version = export_saved_model(reranker_dir, tmp_path, "reranker")
    signature = tf.saved_model.load(str(version)).signatures["serving_default"]
    assert {spec.name: spec.shape.as_list() for spec in signature.structured_input_signature[1].values()} == {
        "query": [None], "document": [None, None]}
    with ModelServer("reranker", tmp_path / "reranker", poll_wait_s=0) as server:
        with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="reranker", timeout_s=30) as client:
            answer = client.predict({"query": QUERIES, "document": DOCUMENTS})
            one = client.predict({"query": QUERIES[:1], "document": [DOCUMENTS[0][:1]]})
    assert answer["score"].shape == (2, 4)
    np.testing.assert_allclose(answer["score"], expected, atol=1e-5)
    np.testing.assert_allclose(one["score"], expected[:1, :1], atol=1e-5)


@pytest.mark.slow
def test_the_int8_model_scores_agree_with_the_keras_model(tmp_path):
    with registered_reranker(tmp_path, hidden_size=64) as model_dir:
        expected = np.stack([local_scores(model_dir, query, documents)
                             for query, documents in zip(QUERIES, DOCUMENTS)])
        version = export_saved_model(model_dir, tmp_path / "models", "reranker", quantize="int8")
    scores = TfliteModel(version / "model.tflite").run({"query": QUERIES, "document": DOCUMENTS})["score"]
    difference = np.abs(scores - expected).max() / (expected.max() - expected.min())
    correlation = np.corrcoef(scores.ravel(), expected.ravel())[0, 1]
    print(f"int8 reranker: largest score difference {difference:.1%} of the scores' spread, correlation "
          f"{correlation:.4f}")
    assert 0 < difference < 0.1 and correlation > 0.99  # quantized (not equal), and close


@pytest.fixture(scope="module")
def rerank_model(tmp_path_factory):
    return tiny_rerank_model(tmp_path_factory.mktemp("rerank"))


@pytest.fixture(scope="module")
def rerank_export(rerank_model, tmp_path_factory):
    """The export's model folder (`bert-tf export`'s): `NAME/1/`."""
    out = tmp_path_factory.mktemp("models")
    export_saved_model(rerank_model, out, "reranker")
    return out / "reranker"


@pytest.fixture(scope="module")
def rerank_server(rerank_export):
    with ModelServer("reranker", rerank_export, poll_wait_s=0) as server:
        yield f"127.0.0.1:{server.grpc_port}"


def test_a_served_reranker_scores_each_pair_as_its_model_directory(rerank_model, rerank_server):
    inputs = [{"query": query, "document": document} for query, document in PAIRS]
    predictor = ServerPredictor(rerank_server, "reranker")
    try:
        served = predictor.predict(inputs)
    finally:
        predictor.close()
    local = [result["score"] for result in Predictor(rerank_model).predict(inputs)]
    assert np.ptp(local) > 1e-3  # scores that tell the pairs apart
    assert all(list(result) == ["score"] and isinstance(result["score"], float) for result in served)
    np.testing.assert_allclose([result["score"] for result in served], local, atol=1e-5)


def test_predict_prints_a_served_reranker_as_its_model_directory(rerank_model, rerank_server, capsys):
    flags = [flag for query, document in PAIRS for flag in ("--query", query, "--document", document)]
    capsys.readouterr()
    printed = {}
    for where, model in (("local", ["--model", str(rerank_model)]),
                         ("server", ["--server", rerank_server, "--model", "reranker"])):
        assert main(["predict", *model, *flags]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert main(["predict", *model, *flags, "--json"]) == 0
        printed[where] = lines, json.loads(capsys.readouterr().out)
    local_lines, local = printed.pop("local")
    for served_lines, served in printed.values():
        assert [{"query": result["query"], "document": result["document"]} for result in served] == [
            {"query": query, "document": document} for query, document in PAIRS]
        assert [list(result) for result in served] == [list(result) for result in local]  # query, document, score
        np.testing.assert_allclose([result["score"] for result in served], [result["score"] for result in local],
                                   atol=1e-5)
        assert len(served_lines) == len(local_lines) == len(PAIRS)
        for served_line, local_line, result in zip(served_lines, local_lines, served):
            score, *texts = served_line.split("\t")
            assert re.fullmatch(r"-?\d+\.\d{4}", score) and float(score) == pytest.approx(result["score"], abs=5.1e-5)
            assert texts == local_line.split("\t")[1:] == [result["query"], result["document"]]
            assert float(score) == pytest.approx(float(local_line.split("\t")[0]), abs=1.1e-4)  # 4 decimals


def test_evaluate_scores_a_reranker_export_as_its_model_directory(rerank_model, rerank_export, tmp_path, capsys):
    data = tmp_path / "groups.jsonl"
    data.write_text("".join(json.dumps({"query": query, "positive": positive, "negative_1": first,
                                        "negative_2": second}) + "\n" for query, positive, first, second in GROUPS))
    capsys.readouterr()
    scores = {}
    for where, model in (("local", rerank_model), ("served", rerank_export)):  # the export served on 127.0.0.1
        assert main(["evaluate", "--model", str(model), "--data", str(data), "--json", "--batch-size", "2"]) == 0
        scores[where] = json.loads(capsys.readouterr().out)
    assert scores["served"]["queries"] == len(GROUPS)
    assert scores["served"] == pytest.approx(scores["local"], abs=1e-6)
