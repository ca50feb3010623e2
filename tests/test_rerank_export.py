"""The export of a reranker (a pair scorer: `bert_tf.tasks.rerank_serving`) takes a query and its documents as raw
text and answers one score per document: the Keras model's, from the SavedModel served over gRPC (≤ 1e-5) and, with
int8 weights, from its `model.tflite` (the agreement measured)."""

import numpy as np
import pytest
import tensorflow as tf
from tiny_reranker import local_scores, registered_reranker

from serving.client.grpc_client import GrpcClient
from serving.export.saved_model import export_saved_model
from serving.server.model_server import ModelServer
from serving.tflite_runner import TfliteModel

QUERIES = ["who lives in paris", "a good film"]
DOCUMENTS = [["mary lives in paris", "the film was bad", "", "paris " * 40],
             ["a very nice film", "john works at acme", "good good good", "it is sad"]]


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
