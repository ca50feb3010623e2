"""The TF-Serving-compatible development server (serving/), spoken to with raw gRPC protos and
raw HTTP, on a tiny SavedModel built here: answers equal the in-process model, bad requests
get the right status and the server keeps serving, new versions are picked up, concurrency."""

import base64
import contextlib
import json
import logging
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from concurrent_clients import run_clients
from serving.export.demo_model import LABELS, save_demo_model
from serving.server.model_server import ModelServer, main

NAME = "demo"
MAX_BATCH = 1000
TEXTS = ["a fine day", "", "héllo wörld ✓", "rain again"]
CODE = grpc.StatusCode


@pytest.fixture(scope="module")
def server(demo_model_dir):
    with ModelServer(NAME, demo_model_dir, poll_wait_s=0.2, max_batch_size=MAX_BATCH) as server:
        yield server


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        yield channel


@pytest.fixture(scope="module")
def predictions(channel):
    return prediction_service_pb2_grpc.PredictionServiceStub(channel)


def predict_request(inputs, signature="", name=NAME, version=None, output_filter=()):
    request = predict_pb2.PredictRequest(output_filter=output_filter)
    request.model_spec.name = name
    request.model_spec.signature_name = signature
    if version is not None:
        request.model_spec.version.value = version
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return request


def text_array(texts):
    return np.array([text.encode("utf-8") if isinstance(text, str) else text for text in texts], dtype=object)


def http(server, path, body=None, raw=None):
    """(HTTP status, JSON answer) of a GET, or of a POST of `body` as JSON (or of `raw` bytes)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(f"http://127.0.0.1:{server.rest_port}{path}", data=data)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def assert_serving(predictions, demo_signatures):
    """A good request still gets the in-process answer."""
    response = predictions.Predict(predict_request({"text": text_array(TEXTS)}), timeout=20)
    expected = demo_signatures["serving_default"](text=tf.constant(text_array(TEXTS), tf.string))["probabilities"].numpy()
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["probabilities"]), expected, atol=1e-5)


# ----- answers equal the in-process model -----------------------------------------


def test_grpc_predict_equals_in_process(predictions, demo_signatures):
    response = predictions.Predict(predict_request({"text": text_array(TEXTS)}), timeout=20)
    expected = demo_signatures["serving_default"](text=tf.constant(text_array(TEXTS), tf.string))
    assert set(response.outputs) == {"probabilities", "label_names"}
    np.testing.assert_allclose(
        tf.make_ndarray(response.outputs["probabilities"]), expected["probabilities"].numpy(), atol=1e-5
    )
    assert tf.make_ndarray(response.outputs["label_names"]).tolist() == [[label.encode() for label in LABELS]] * 4
    assert (response.model_spec.name, response.model_spec.version.value) == (NAME, 1)
    assert response.model_spec.signature_name == "serving_default"

    ids = np.array([[1, 2, 3], [4, 5, 0]], np.int32)
    response = predictions.Predict(
        predict_request({"ids": ids}, signature="serve_ids", version=1, output_filter=["scores"]), timeout=20
    )
    expected = demo_signatures["serve_ids"](ids=tf.constant(ids))["scores"].numpy()
    np.testing.assert_allclose(tf.make_ndarray(response.outputs["scores"]), expected, atol=1e-5)


def test_rest_predict_row_and_columnar_equal_in_process(server, demo_signatures):
    expected = demo_signatures["serving_default"](text=tf.constant(text_array(TEXTS), tf.string))
    probabilities, labels = expected["probabilities"].numpy(), [list(LABELS)] * len(TEXTS)

    status, answer = http(server, f"/v1/models/{NAME}:predict", {"instances": TEXTS})
    assert status == 200
    np.testing.assert_allclose([row["probabilities"] for row in answer["predictions"]], probabilities, atol=1e-5)
    assert [row["label_names"] for row in answer["predictions"]] == labels

    b64 = [{"b64": base64.b64encode(text.encode()).decode()} for text in TEXTS]
    status, answer = http(server, f"/v1/models/{NAME}/versions/1:predict", {"instances": [{"text": t} for t in b64]})
    assert status == 200
    np.testing.assert_allclose([row["probabilities"] for row in answer["predictions"]], probabilities, atol=1e-5)

    status, answer = http(server, f"/v1/models/{NAME}:predict", {"signature_name": "serving_default", "inputs": {"text": b64}})
    assert status == 200
    np.testing.assert_allclose(answer["outputs"]["probabilities"], probabilities, atol=1e-5)
    assert answer["outputs"]["label_names"] == labels

    ids = [[1, 2, 3], [4, 5, 0]]
    status, answer = http(server, f"/v1/models/{NAME}:predict", {"signature_name": "serve_ids", "inputs": ids})
    assert status == 200  # one output: "outputs" is the tensor itself, as in TF Serving
    np.testing.assert_allclose(answer["outputs"], demo_signatures["serve_ids"](ids=tf.constant(ids))["scores"], atol=1e-5)


def test_classify_grpc_and_rest(predictions, server, demo_signatures):
    expected = demo_signatures["serving_default"](text=tf.constant(text_array(TEXTS), tf.string))["probabilities"].numpy()
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = NAME
    for text in TEXTS:
        request.input.example_list.examples.add().features.feature["text"].bytes_list.value.append(text.encode())
    response = predictions.Classify(request, timeout=20)
    assert response.model_spec.version.value == 1
    for classes, row in zip(response.result.classifications, expected):
        assert [c.label for c in classes.classes] == list(LABELS)
        np.testing.assert_allclose([c.score for c in classes.classes], row, atol=1e-5)

    status, answer = http(server, f"/v1/models/{NAME}:classify", {"examples": [{"text": t} for t in TEXTS]})
    assert status == 200
    assert [[label for label, _ in classes] for classes in answer["results"]] == [list(LABELS)] * len(TEXTS)
    np.testing.assert_allclose([[score for _, score in classes] for classes in answer["results"]], expected, atol=1e-5)

    # serve_ids has scores and no labels: class i is labelled "i"; ids come from a shared context.
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name, request.model_spec.signature_name = NAME, "serve_ids"
    request.input.example_list_with_context.context.features.feature["ids"].int64_list.value.extend([1, 2])
    request.input.example_list_with_context.examples.add()
    request.input.example_list_with_context.examples.add().features.feature["ids"].int64_list.value.extend([3, 4])
    response = predictions.Classify(request, timeout=20)
    scores = demo_signatures["serve_ids"](ids=tf.constant([[1, 2], [3, 4]]))["scores"].numpy()
    for classes, row in zip(response.result.classifications, scores):
        assert [c.label for c in classes.classes] == ["0", "1", "2"]
        np.testing.assert_allclose([c.score for c in classes.classes], row, atol=1e-5)


def test_metadata_lists_the_signatures(predictions, server):
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = NAME
    response = predictions.GetModelMetadata(request, timeout=20)
    signatures = get_model_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signatures)
    assert {"serving_default", "serve_ids"} <= set(signatures.signature_def)
    assert signatures.signature_def["serving_default"].inputs["text"].dtype == tf.string.as_datatype_enum
    assert signatures.signature_def["serve_ids"].inputs["ids"].dtype == tf.int32.as_datatype_enum
    assert response.model_spec.version.value == 1

    status, answer = http(server, f"/v1/models/{NAME}/metadata")
    assert status == 200 and answer["model_spec"] == {"name": NAME, "signature_name": "", "version": "1"}
    default = answer["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert default["inputs"]["text"]["dtype"] == "DT_STRING"
    assert default["outputs"]["probabilities"]["tensor_shape"]["dim"] == [{"size": "-1"}, {"size": "3"}]


def test_status_says_available(channel, server):
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = NAME
    response = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(request, timeout=20)
    [entry] = response.model_version_status
    assert entry.version == 1 and entry.state == get_model_status_pb2.ModelVersionStatus.AVAILABLE
    assert http(server, f"/v1/models/{NAME}") == (200, {
        "model_version_status": [
            {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
        ]
    })
    assert http(server, f"/v1/models/{NAME}/versions/1")[0] == 200
    assert http(server, f"/v1/models/{NAME}/versions/9")[0] == 404
    assert http(server, "/v1/models/other")[0] == 404


# ----- bad requests: the right status, and the server keeps serving ---------------

BAD_PREDICTS = {
    "wrong dtype": ({"text": np.array([1, 2], np.int32)}, {}, CODE.INVALID_ARGUMENT),
    "wrong rank": ({"text": text_array([["a"]])}, {}, CODE.INVALID_ARGUMENT),
    "missing input": ({}, {}, CODE.INVALID_ARGUMENT),
    "unknown input": ({"text": text_array(["a"]), "extra": np.array([1])}, {}, CODE.INVALID_ARGUMENT),
    "non-UTF-8 bytes": ({"text": text_array([b"ok", b"\xff\xfe"])}, {}, CODE.INVALID_ARGUMENT),
    "id out of range": ({"ids": np.array([[1, 99]], np.int32)}, {"signature": "serve_ids"}, CODE.INVALID_ARGUMENT),
    "10,000-item batch": ({"text": text_array(["word"] * 10_000)}, {}, CODE.INVALID_ARGUMENT),
    "unknown output": ({"text": text_array(["a"])}, {"output_filter": ["nope"]}, CODE.INVALID_ARGUMENT),
    "unknown signature": ({"text": text_array(["a"])}, {"signature": "nope"}, CODE.NOT_FOUND),
    "init-op signature": ({"text": text_array(["a"])}, {"signature": "__saved_model_init_op"}, CODE.NOT_FOUND),
    "unknown model": ({"text": text_array(["a"])}, {"name": "other"}, CODE.NOT_FOUND),
    "unknown version": ({"text": text_array(["a"])}, {"version": 7}, CODE.NOT_FOUND),
}


@pytest.mark.parametrize("case", BAD_PREDICTS, ids=list(BAD_PREDICTS))
def test_bad_predict_gets_its_status_and_server_keeps_serving(case, predictions, demo_signatures):
    inputs, options, code = BAD_PREDICTS[case]
    with pytest.raises(grpc.RpcError) as raised:
        predictions.Predict(predict_request(inputs, **options), timeout=20)
    assert raised.value.code() == code, raised.value.details()
    assert raised.value.details()
    assert_serving(predictions, demo_signatures)


def test_malformed_protos_are_invalid_argument(predictions, demo_signatures):
    request = predict_request({})
    request.inputs["text"].dtype = tf.float32.as_datatype_enum
    request.inputs["text"].tensor_shape.dim.add(size=3)
    request.inputs["text"].tensor_content = b"12345"  # 5 bytes cannot be 3 floats
    no_dtype = predict_request({})
    no_dtype.inputs["text"].tensor_shape.dim.add(size=1)
    for bad in (request, no_dtype):
        with pytest.raises(grpc.RpcError) as raised:
            predictions.Predict(bad, timeout=20)
        assert raised.value.code() == CODE.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as raised:
        predictions.Regress(regression_pb2.RegressionRequest(), timeout=20)
    assert raised.value.code() == CODE.UNIMPLEMENTED
    assert_serving(predictions, demo_signatures)


def test_methods_this_server_lacks_are_unimplemented_without_a_traceback(predictions, channel, caplog):
    """Regress on a classifier answered UNIMPLEMENTED, but the server logged the generated servicer's
    NotImplementedError with its traceback (issue 37, item 6)."""
    regress = regression_pb2.RegressionRequest()
    regress.model_spec.name = NAME
    regress.input.example_list.examples.add().features.feature["text"].bytes_list.value.append(b"a")
    calls = {
        "Regress": (predictions.Regress, regress),
        "MultiInference": (predictions.MultiInference, inference_pb2.MultiInferenceRequest()),
        "HandleReloadConfigRequest": (model_service_pb2_grpc.ModelServiceStub(channel).HandleReloadConfigRequest,
                                      model_management_pb2.ReloadConfigRequest()),
    }
    with caplog.at_level(logging.INFO):
        for name, (call, request) in calls.items():
            with pytest.raises(grpc.RpcError) as raised:
                call(request, timeout=20)
            assert (raised.value.code(), raised.value.details()) == (
                CODE.UNIMPLEMENTED, f"{name} is not supported by this server.")
    assert not [record.getMessage() for record in caplog.records if record.exc_info]


def test_empty_batch_and_empty_string_are_served(predictions):
    response = predictions.Predict(predict_request({"text": np.array([], dtype=object)}), timeout=20)
    assert tf.make_ndarray(response.outputs["probabilities"]).shape == (0, 3)
    response = predictions.Predict(predict_request({"ids": np.zeros([0, 4], np.int32)}, signature="serve_ids"), timeout=20)
    assert tf.make_ndarray(response.outputs["scores"]).shape == (0, 3)
    response = predictions.Predict(predict_request({"text": text_array([""])}), timeout=20)
    assert np.isclose(tf.make_ndarray(response.outputs["probabilities"]).sum(), 1.0)


BAD_REST = {
    "invalid JSON": (f"/v1/models/{NAME}:predict", b"{not json", 400),
    "not an object": (f"/v1/models/{NAME}:predict", b"[1, 2]", 400),
    "no instances or inputs": (f"/v1/models/{NAME}:predict", {"signature_name": "serving_default"}, 400),
    "both instances and inputs": (f"/v1/models/{NAME}:predict", {"instances": ["a"], "inputs": ["a"]}, 400),
    "empty instances": (f"/v1/models/{NAME}:predict", {"instances": []}, 400),
    "empty inputs": (f"/v1/models/{NAME}:predict", {"inputs": []}, 400),
    "wrong type": (f"/v1/models/{NAME}:predict", {"instances": [1, 2]}, 400),
    "bad base64": (f"/v1/models/{NAME}:predict", {"instances": [{"b64": "%%%"}]}, 400),
    "non-UTF-8 bytes": (f"/v1/models/{NAME}:predict", {"instances": [{"b64": "//4="}]}, 400),
    "unknown input": (f"/v1/models/{NAME}:predict", {"inputs": {"text": ["a"], "extra": [1]}}, 400),
    "missing input": (f"/v1/models/{NAME}:predict", {"instances": [{"txt": "a"}]}, 400),
    "float ids": (f"/v1/models/{NAME}:predict", {"signature_name": "serve_ids", "inputs": [[1.5]]}, 400),
    "ragged ids": (f"/v1/models/{NAME}:predict", {"signature_name": "serve_ids", "instances": [[1, 2], [3]]}, 400),
    "10,000 instances": (f"/v1/models/{NAME}:predict", {"instances": ["w"] * 10_000}, 400),
    "no examples": (f"/v1/models/{NAME}:classify", {"examples": []}, 400),
    "unknown signature": (f"/v1/models/{NAME}:predict", {"signature_name": "nope", "instances": ["a"]}, 404),
    "unknown model": ("/v1/models/other:predict", {"instances": ["a"]}, 404),
    "unknown version": (f"/v1/models/{NAME}/versions/7:predict", {"instances": ["a"]}, 404),
    "unknown path": (f"/v2/models/{NAME}:predict", {"instances": ["a"]}, 404),
    "unknown verb": (f"/v1/models/{NAME}:explain", {"instances": ["a"]}, 404),
    "regress": (f"/v1/models/{NAME}:regress", {"examples": [{"text": "a"}]}, 501),
}


@pytest.mark.parametrize("case", BAD_REST, ids=list(BAD_REST))
def test_bad_rest_request_gets_its_status_and_server_keeps_serving(case, server, predictions, demo_signatures):
    path, body, expected = BAD_REST[case]
    status, answer = http(server, path, raw=body) if isinstance(body, bytes) else http(server, path, body)
    assert status == expected, answer
    assert answer["error"]
    assert http(server, f"/v1/models/{NAME}:predict", {"instances": ["still here"]})[0] == 200
    assert_serving(predictions, demo_signatures)


def test_misnamed_inputs_are_named_with_the_ones_expected(server, predictions):
    """The messages said "missing input(s) [], unknown input(s) ['text_b']" (REST) and "1!=1 len({txt}) !=
    len({text})" (gRPC); empty 'instances' and empty 'inputs' were answered differently (400 and 200)."""
    status, answer = http(server, f"/v1/models/{NAME}:predict", {"inputs": {"text": ["a"], "text_b": ["b"]}})
    assert (status, answer["error"]) == (400, "'inputs' object: unknown input 'text_b'; the signature takes 'text'.")
    status, answer = http(server, f"/v1/models/{NAME}:predict", {"instances": [{"txt": "a"}]})
    assert (status, answer["error"]) == (400, "item 0 of 'instances': unknown input 'txt', missing input 'text'; "
                                              "the signature takes 'text'.")
    with pytest.raises(grpc.RpcError) as raised:
        predictions.Predict(predict_request({"txt": text_array(["a"])}), timeout=20)
    assert raised.value.details() == ("Signature serving_default: unknown input 'txt', missing input 'text'; it "
                                      "takes 'text'.")
    answers = [http(server, f"/v1/models/{NAME}:predict", {key: []}) for key in ("instances", "inputs")]
    assert answers[0] == answers[1] == (400, {"error": "No examples: send at least one in 'instances' or 'inputs'."})


@pytest.mark.parametrize("request_line", [b"GARBAGE", b"\x16\x03\x01\x00\xa5\x01", b"GET /v1/models/demo HTTP/9.9"])
def test_a_garbage_request_line_gets_an_http_status_line_and_json(server, request_line):
    """Python's HTTP server answered a request line it could not parse as HTTP/0.9: an HTML page without any status
    line, which clients cannot read."""
    import socket

    with socket.create_connection(("127.0.0.1", server.rest_port), timeout=10) as connection:
        connection.sendall(request_line + b"\r\n\r\n")
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *headers = head.decode("latin-1").split("\r\n")
    assert re.fullmatch(r"HTTP/1\.[01] (400|505) .+", status_line), answer[:200]
    assert "Content-Type: application/json" in headers
    assert json.loads(body)["error"]


def test_busy_port_and_missing_base_path_are_clear_errors(server, demo_model_dir, tmp_path):
    with pytest.raises(OSError, match="in use"):
        ModelServer(NAME, demo_model_dir, grpc_port=server.grpc_port).start()
    assert main(["--model_base_path", str(tmp_path / "absent"), "--port", "0", "--rest_api_port", "0"]) == 2


# ----- new versions, concurrency -------------------------------------------------


def test_new_version_is_picked_up_without_restart(tmp_path):
    base = tmp_path / NAME
    base.mkdir()
    save_demo_model(base, version=1)
    texts = text_array(TEXTS)
    # No load retries: the broken version below is END at once (retries: tests/test_serving_versions.py).
    with ModelServer(NAME, base, poll_wait_s=0.1, max_num_load_retries=0) as server, \
            grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        assert stub.Predict(predict_request({"text": texts}), timeout=20).model_spec.version.value == 1
        save_demo_model(base, version=2)
        deadline = time.monotonic() + 30
        while stub.Predict(predict_request({"text": texts}), timeout=20).model_spec.version.value != 2:
            assert time.monotonic() < deadline, "version 2 was not picked up within 30 s"
            time.sleep(0.1)
        expected = tf.saved_model.load(str(base / "2")).signatures["serving_default"](text=tf.constant(texts))
        response = stub.Predict(predict_request({"text": texts}, version=2), timeout=20)
        np.testing.assert_allclose(
            tf.make_ndarray(response.outputs["probabilities"]), expected["probabilities"].numpy(), atol=1e-5
        )
        with pytest.raises(grpc.RpcError) as raised:  # the "latest" policy: version 1 is unloaded
            stub.Predict(predict_request({"text": texts}, version=1), timeout=20)
        assert raised.value.code() == CODE.NOT_FOUND
        assert [(v["version"], v["state"]) for v in http(server, f"/v1/models/{NAME}")[1]["model_version_status"]] == [
            ("2", "AVAILABLE"), ("1", "END")
        ]

        (base / "3").mkdir()  # a broken version: reported, and version 2 keeps serving
        (base / "3" / "saved_model.pb").write_bytes(b"not a SavedModel")
        while (versions := http(server, f"/v1/models/{NAME}")[1]["model_version_status"])[0]["state"] != "END":
            assert time.monotonic() < deadline, "the broken version 3 was not reported within 30 s"
            time.sleep(0.1)
        assert versions[0]["version"] == "3" and versions[0]["status"]["error_message"]
        assert stub.Predict(predict_request({"text": texts}), timeout=20).model_spec.version.value == 2


def test_concurrent_clients(server, predictions, demo_signatures):
    threads, per_thread = 8, 25
    texts = [f"thread {t} request {r}" for t in range(threads) for r in range(per_thread)]
    expected = demo_signatures["serving_default"](text=tf.constant(text_array(texts)))["probabilities"].numpy()
    def client(index):
        for r in range(per_thread):
            row = index * per_thread + r
            if index % 2:  # half the threads over REST, half over gRPC
                status, answer = http(server, f"/v1/models/{NAME}:predict", {"instances": [texts[row]]})
                assert status == 200, answer
                got = answer["predictions"][0]["probabilities"]
            else:
                response = predictions.Predict(predict_request({"text": text_array([texts[row]])}), timeout=30)
                got = tf.make_ndarray(response.outputs["probabilities"])[0]
            np.testing.assert_allclose(got, expected[row], atol=1e-5)

    errors = run_clients(threads, client)
    assert not errors, errors


# ----- stopping ------------------------------------------------------------------


class Spinner(tf.Module):
    """A model whose call counts to its input: as long a model call as a test wants."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64, name="steps")])
    def spin(self, steps):
        (counted,) = tf.while_loop(lambda i: i < tf.reduce_max(steps), lambda i: i + 1, (tf.constant(0, tf.int64),))
        return {"counted": tf.fill(tf.shape(steps), counted)}


def serve_in_a_process(base_path, *flags):
    """A `python -m serving.server` process serving `base_path` on free ports, and its REST port once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "serving.server", "--model_base_path", str(base_path), "--port", "0",
         "--rest_api_port", "0", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=Path(__file__).resolve().parents[1])
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    output, deadline = [], time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(queue.Empty):
            output.append(lines.get(timeout=1))
            if ready := re.search(r"REST [\d.]+:(\d+)\. Ctrl-C stops", output[-1]):
                return process, int(ready[1])
    process.kill()
    raise AssertionError("the server did not start: " + "".join(output)[-3000:])


def test_sigterm_stops_the_server_while_a_model_call_runs(tmp_path):
    """SIGTERM stopped listening, then Python waited at exit for the request thread, inside a model call that
    cannot be interrupted (issue 37, item 1: with dead batch threads, for ever)."""
    module = Spinner()
    tf.saved_model.save(module, str(tmp_path / "spin" / "1"), signatures={"serving_default": module.spin})
    process, rest_port = serve_in_a_process(tmp_path / "spin")
    try:
        body = json.dumps({"instances": [10**15]}).encode()
        with socket.create_connection(("127.0.0.1", rest_port), timeout=10) as client:
            client.sendall(b"POST /v1/models/default:predict HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                           % (len(body), body))
            time.sleep(1.0)  # the model call is running
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            process.wait(timeout=15)
        assert time.monotonic() - started < 5
    finally:
        process.kill()
        process.wait()


# ----- the REST JSON formats with several inputs and outputs ---------------------


def test_rest_json_formats_with_several_inputs_and_outputs():
    from serving import rest_json

    dtypes = {"ids": tf.int32, "mask": tf.int32}
    row = {"instances": [{"ids": [1, 2], "mask": [1, 1]}, {"ids": [3, 0], "mask": [1, 0]}]}
    columnar = {"inputs": {"ids": [[1, 2], [3, 0]], "mask": [[1, 1], [1, 0]]}}
    for body, row_format in ((row, True), (columnar, False)):
        inputs, got_row_format = rest_json.decode_predict_request(body, dtypes)
        assert got_row_format == row_format
        assert inputs["ids"].tolist() == [[1, 2], [3, 0]] and inputs["mask"].dtype == np.int32
    for bad in ({"instances": [[1, 2]]}, {"inputs": [[1, 2]]}, {"instances": [{"ids": [1]}]}):
        with pytest.raises(ValueError):
            rest_json.decode_predict_request(bad, dtypes)
    with pytest.raises(ValueError, match="out of range"):
        rest_json.decode_predict_request({"inputs": {"ids": [2**40], "mask": [1]}}, dtypes)

    outputs = {"scores": np.array([[0.5], [0.25]], np.float32), "token_bytes": np.array([b"\xff", b"ok"], dtype=object)}
    assert rest_json.encode_predict_response(outputs, row_format=True) == {
        "predictions": [{"scores": [0.5], "token_bytes": {"b64": "/w=="}}, {"scores": [0.25], "token_bytes": {"b64": "b2s="}}]
    }
    assert rest_json.encode_predict_response(outputs, row_format=False)["outputs"]["scores"] == [[0.5], [0.25]]
    with pytest.raises(ValueError, match="batch sizes"):
        rest_json.encode_predict_response({"a": np.zeros([2]), "b": np.zeros([3])}, row_format=True)
    decoded = rest_json.decode_predict_response(
        {"predictions": [{"scores": [0.5], "token_bytes": {"b64": "/w=="}}]}, {"scores": tf.float32, "token_bytes": tf.string}
    )
    assert decoded["scores"].dtype == np.float32 and decoded["token_bytes"].tolist() == [b"\xff"]
