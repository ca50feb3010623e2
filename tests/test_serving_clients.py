"""The serving clients (GrpcClient, RestClient) against the development server and the tiny
demo SavedModel: answers equal the in-process model, large batches are split, UNAVAILABLE is
retried (and nothing else), deadlines hold, errors are clear."""

import socket
import time

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2

from serving.client.batching import batch_major_outputs, predict_in_batches
from serving.export.demo_model import LABELS
from serving.client.grpc_client import GrpcClient
from serving.client.rest_client import RestClient, RestError
from serving.server.model_server import ModelServer

NAME = "demo"
SERVER_MAX_BATCH = 100
TEXTS = ["a fine day", "", "héllo wörld ✓", "rain again"]


@pytest.fixture(scope="module")
def server(demo_model_dir):
    with ModelServer(NAME, demo_model_dir, poll_wait_s=0, max_batch_size=SERVER_MAX_BATCH) as server:
        yield server


@pytest.fixture(scope="module")
def grpc_client(server):
    with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME, timeout_s=20) as client:
        yield client


@pytest.fixture(scope="module")
def rest_client(server):
    return RestClient(f"http://127.0.0.1:{server.rest_port}", model_name=NAME, timeout_s=20)


def expected_probabilities(demo_signatures, texts):
    return demo_signatures["serving_default"](text=tf.constant(texts, tf.string))["probabilities"].numpy()


class FakeRpcError(grpc.RpcError):
    def __init__(self, code):
        self._code = code

    def code(self):
        return self._code

    def details(self):
        return f"fake {self._code.name}"


# ----- GrpcClient ----------------------------------------------------------------


def test_grpc_predict_equals_in_process(grpc_client, demo_signatures):
    outputs = grpc_client.predict({"text": TEXTS})
    np.testing.assert_allclose(outputs["probabilities"], expected_probabilities(demo_signatures, TEXTS), atol=1e-5)
    assert outputs["probabilities"].dtype == np.float32
    assert outputs["label_names"].tolist() == [[label.encode() for label in LABELS]] * len(TEXTS)

    ids = np.array([[1, 2, 3], [4, 5, 0]], np.int32)
    ids_client = GrpcClient(grpc_client.target, model_name=NAME, signature_name="serve_ids")
    scores = ids_client.predict({"ids": ids}, version=1, output_filter=["scores"])
    np.testing.assert_allclose(scores["scores"], demo_signatures["serve_ids"](ids=tf.constant(ids))["scores"], atol=1e-5)
    with pytest.raises(grpc.RpcError) as raised:  # numpy int64 is sent as int64: the server checks dtypes
        ids_client.predict({"ids": ids.astype(np.int64)})
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    ids_client.close()


def test_grpc_large_batch_is_split(grpc_client, demo_signatures):
    texts = [f"sentence number {index}" for index in range(5 * SERVER_MAX_BATCH + 7)]
    with pytest.raises(grpc.RpcError) as raised:
        grpc_client.predict({"text": texts})
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "max_batch_size" in raised.value.details()
    chunked = GrpcClient(grpc_client.target, model_name=NAME, max_batch_size=SERVER_MAX_BATCH)
    outputs = chunked.predict({"text": texts})
    np.testing.assert_allclose(outputs["probabilities"], expected_probabilities(demo_signatures, texts), atol=1e-5)
    assert outputs["label_names"].shape == (len(texts), 3)
    results = chunked.classify([{"text": text} for text in texts[: SERVER_MAX_BATCH + 1]])
    assert len(results) == SERVER_MAX_BATCH + 1
    chunked.close()


def test_grpc_classify_metadata_status(grpc_client, demo_signatures):
    results = grpc_client.classify([{"text": text} for text in TEXTS])
    assert [[label for label, _ in classes] for classes in results] == [list(LABELS)] * len(TEXTS)
    np.testing.assert_allclose(
        [[score for _, score in classes] for classes in results], expected_probabilities(demo_signatures, TEXTS), atol=1e-5
    )
    signatures = grpc_client.metadata()
    assert {"serving_default", "serve_ids"} <= set(signatures)
    assert batch_major_outputs(signatures["serving_default"]) == {"probabilities", "label_names"}
    assert grpc_client.status() == {1: "AVAILABLE"}


def test_grpc_retries_unavailable_only(grpc_client):
    client = GrpcClient(grpc_client.target, model_name=NAME, retries=3, backoff_s=0.01)
    calls = []

    def flaky(request, timeout):
        calls.append(timeout)
        if len(calls) < 3:
            raise FakeRpcError(grpc.StatusCode.UNAVAILABLE)
        response = predict_pb2.PredictResponse()
        response.outputs["y"].CopyFrom(tf.make_tensor_proto(np.ones(2, np.float32)))
        return response

    client._predictions.Predict = flaky
    assert client.predict({"x": [1.0, 2.0]})["y"].tolist() == [1.0, 1.0]
    assert calls == [client.timeout_s] * 3

    calls.clear()

    def refusing(request, timeout):
        calls.append(timeout)
        raise FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT)

    client._predictions.Predict = refusing
    with pytest.raises(grpc.RpcError):
        client.predict({"x": [1.0]})
    assert len(calls) == 1
    client.close()


def test_grpc_unreachable_server_is_retried_then_unavailable():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with GrpcClient(f"127.0.0.1:{port}", model_name=NAME, retries=2, backoff_s=0.05, timeout_s=5) as client:
        with pytest.raises(grpc.RpcError) as raised:
            client.status()
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    assert 0.15 <= time.monotonic() - started < 30  # waited 0.05 + 0.1 s between the three tries


def test_grpc_deadline_holds_against_a_silent_server():
    with socket.socket() as silent:  # accepts TCP connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        with GrpcClient(f"127.0.0.1:{silent.getsockname()[1]}", model_name=NAME, timeout_s=0.3) as client:
            with pytest.raises(grpc.RpcError) as raised:
                client.predict({"text": ["word"]})
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 10  # not retried: only UNAVAILABLE is


# ----- RestClient ----------------------------------------------------------------


@pytest.mark.parametrize("row_format", [False, True], ids=["columnar", "row"])
def test_rest_predict_equals_in_process(rest_client, demo_signatures, row_format):
    texts = TEXTS + [b"\x00binary but valid UTF-8"]
    outputs = rest_client.predict({"text": texts}, row_format=row_format)
    np.testing.assert_allclose(outputs["probabilities"], expected_probabilities(demo_signatures, texts), atol=1e-5)
    assert outputs["probabilities"].dtype == np.float32
    assert outputs["label_names"].tolist() == [[label.encode() for label in LABELS]] * len(texts)

    ids = np.array([[1, 2, 3], [4, 5, 0]], np.int64)  # REST converts JSON numbers to the signature's int32
    ids_client = RestClient(rest_client.base_url, model_name=NAME, signature_name="serve_ids")
    scores = ids_client.predict({"ids": ids}, version=1, row_format=row_format)["scores"]
    np.testing.assert_allclose(scores, demo_signatures["serve_ids"](ids=tf.constant(ids, tf.int32))["scores"], atol=1e-5)


def test_rest_large_batch_classify_metadata_status(rest_client, demo_signatures):
    texts = [f"sentence number {index}" for index in range(2 * SERVER_MAX_BATCH + 3)]
    with pytest.raises(RestError) as raised:
        rest_client.predict({"text": texts})
    assert raised.value.status == 400 and "max_batch_size" in raised.value.message
    chunked = RestClient(rest_client.base_url, model_name=NAME, max_batch_size=SERVER_MAX_BATCH)
    np.testing.assert_allclose(
        chunked.predict({"text": texts})["probabilities"], expected_probabilities(demo_signatures, texts), atol=1e-5
    )
    results = rest_client.classify([{"text": text} for text in TEXTS])
    assert [[label for label, _ in classes] for classes in results] == [list(LABELS)] * len(TEXTS)
    assert set(rest_client.metadata()) >= {"serving_default", "serve_ids"}
    assert rest_client.status() == {1: "AVAILABLE"}


def test_rest_errors_are_clear(rest_client):
    with pytest.raises(RestError) as raised:
        RestClient(rest_client.base_url, model_name="other").status()
    assert raised.value.status == 404 and "other" in raised.value.message
    with pytest.raises(RestError) as raised:
        rest_client.predict({"text": [b"\xff"]})
    assert raised.value.status == 400 and "Invalid formatting" in raised.value.message
    with pytest.raises(ValueError, match="no signature"):
        RestClient(rest_client.base_url, model_name=NAME, signature_name="nope").predict({"text": ["a"]})


# ----- batching ------------------------------------------------------------------


def test_predict_in_batches_keeps_non_batch_outputs():
    def model(inputs):
        return {"y": inputs["x"] * 2, "labels": np.array([b"a", b"b"], dtype=object)}

    outputs = predict_in_batches(model, {"x": np.arange(7)}, 3, batch_major=lambda: {"y"})
    assert outputs["y"].tolist() == [0, 2, 4, 6, 8, 10, 12]
    assert outputs["labels"].tolist() == [b"a", b"b"]
    with pytest.raises(ValueError, match="same batch size"):
        predict_in_batches(model, {"x": np.arange(7), "z": np.arange(6)}, 3, batch_major=set)
