"""Request batching (`--enable_batching`, serving/server/batching.py): TF Serving's parameters file, requests merged
into model calls with each caller's own rows, large requests split, a full queue refused at once, a bad request
failing alone, deadlines; then a real server under concurrent gRPC and REST clients, and a TFLite version."""

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

import bert_tf
from concurrent_clients import run_clients
from serving.export.saved_model import export_saved_model
from serving.server.batching import Batcher, BatchingParameters, read_batching_parameters
from serving.server.errors import ServingError
from serving.server.model_server import (ModelServer, add_arguments, batching_parameters, main,
                                         set_tensorflow_threads)
from serving.server.servable import load_servable
from tiny_exports import TEXTS, tiny_encoder, write_vocab

CODE = grpc.StatusCode


def signature_defs(inputs=("x",), outputs=("y",), batch_major=True):
    from tensorflow_serving.apis import get_model_metadata_pb2

    defs = get_model_metadata_pb2.SignatureDefMap()
    for kind, names in (("inputs", inputs), ("outputs", outputs)):
        for name in names:
            info = getattr(defs.signature_def["serving_default"], kind)[name]
            info.tensor_shape.dim.add(size=-1 if batch_major else 1)
    return defs


class FakeModel:
    """Doubles `x` (rows of any width); fails on a row holding -1; can hold every call until released."""

    def __init__(self):
        self.calls = []
        self.release = threading.Event()
        self.release.set()

    def __call__(self, signature, inputs, outputs):
        self.release.wait(10)
        x = np.asarray(inputs["x"])
        self.calls.append(x.shape[0])
        if (x == -1).any():
            raise ServingError.invalid_argument("a row holds -1")
        return {"y": x * 2}


def concurrently(batcher, requests, deadline_s=None):
    """Each request (an array of rows) from its own thread: their results (outputs or ServingError), in order."""
    results = [None] * len(requests)

    def call(index):
        try:
            deadline = None if deadline_s is None else time.monotonic() + deadline_s
            results[index] = batcher.run("serving_default", {"x": requests[index]}, deadline)["y"]
        except ServingError as error:
            results[index] = error

    assert run_clients(len(requests), call) == []
    return results


def test_the_parameters_file_is_tensorflow_servings(tmp_path):
    path = tmp_path / "batching.txt"
    path.write_text("max_batch_size { value: 32 }\nbatch_timeout_micros { value: 2000 }\n"
                    "max_enqueued_batches { value: 100 }\nnum_batch_threads { value: 4 }\n"
                    'thread_pool_name { value: "batch" }\nallowed_batch_sizes: 8\nallowed_batch_sizes: 32\n'
                    "pad_variable_length_inputs: true\n")
    assert read_batching_parameters(path) == BatchingParameters(32, 2000, 100, 4, (8, 32), True)
    assert BatchingParameters().max_batch_size == 1000 and BatchingParameters().max_enqueued_batches == 10
    shipped = read_batching_parameters(Path(__file__).resolve().parents[1] / "serving" / "batching_parameters.txt")
    assert (shipped.max_batch_size, shipped.batch_timeout_micros, shipped.num_batch_threads) == (32, 2000, 1)
    path.write_text("max_batch_size: 32\n")
    with pytest.raises(ValueError, match="not a BatchingParameters text proto"):
        read_batching_parameters(path)
    with pytest.raises(ValueError, match=r"allowed_batch_sizes \[8, 16\] must rise, and the last must be"):
        BatchingParameters(max_batch_size=32, allowed_batch_sizes=(8, 16))
    with pytest.raises(ValueError, match="--batching_parameters_file is set without --enable_batching"):
        batching_parameters(False, str(path))
    assert batching_parameters(False, "") is None and batching_parameters(True, "") == BatchingParameters()


OUT_OF_RANGE = {  # issue 37, item 1: the first two hung the server or started ~15,000 threads
    "batch_timeout_micros { value: 9223372036854775807 }":
        "batch_timeout_micros must be from 0 to 10000000 (10 s), got 9223372036854775807.",
    "num_batch_threads { value: 100000 }": "num_batch_threads must be from 1 to 256, got 100000.",
    "max_batch_size { value: 0 }": "max_batch_size must be from 1 to 65536, got 0.",
    "max_batch_size { value: 10000000 }": "max_batch_size must be from 1 to 65536, got 10000000.",
    "max_execution_batch_size { value: -3 }": "max_execution_batch_size must be from 1 to 65536, got -3.",
    "max_enqueued_batches { value: 0 }": "max_enqueued_batches must be from 1 to 1000000, got 0.",
    "batch_timeout_micros { value: -1 }": "batch_timeout_micros must be from 0 to 10000000 (10 s), got -1.",
}


@pytest.mark.parametrize("text", OUT_OF_RANGE, ids=list(OUT_OF_RANGE))
def test_parameters_out_of_range_are_refused_in_one_line(text, tmp_path, capsys):
    path = tmp_path / "batching.txt"
    path.write_text(text + "\n")
    with pytest.raises(ValueError) as refused:
        read_batching_parameters(path)
    assert str(refused.value) == f"{path}: {OUT_OF_RANGE[text]}"
    assert main(["--model_base_path", str(tmp_path), "--enable_batching", "--batching_parameters_file", str(path)]) == 2
    assert capsys.readouterr().err == f"bert-tf serve: error: {path}: {OUT_OF_RANGE[text]}\n"


def test_a_batch_thread_that_fails_fails_the_waiting_requests_and_goes_on():
    """An error outside the model call (batch_timeout_micros 2**63 - 1 made every batch thread's wait raise
    OverflowError) ended the batch threads, and their requests waited for ever."""
    model = FakeModel()
    batcher = Batcher(model, signature_defs(), BatchingParameters(num_batch_threads=1, batch_timeout_micros=1000))
    failures = [OverflowError("timestamp out of range for platform time_t")]
    wait = batcher._changed.wait

    def failing_wait(timeout=None):
        if timeout is not None and failures:
            raise failures.pop()
        return wait(timeout)

    batcher._changed.wait = failing_wait
    started = time.monotonic()
    with pytest.raises(ServingError) as failed:
        batcher.run("serving_default", {"x": np.ones([1, 2])}, deadline=time.monotonic() + 5)
    assert failed.value.code == CODE.INTERNAL and "OverflowError" in failed.value.message
    assert time.monotonic() - started < 2
    np.testing.assert_array_equal(batcher.run("serving_default", {"x": np.ones([2, 2])})["y"], np.full([2, 2], 2))
    batcher.close()


def test_concurrent_requests_share_model_calls_and_get_their_own_rows():
    model = FakeModel()
    model.release.clear()  # the first call waits, so the others queue and merge
    batcher = Batcher(model, signature_defs(), BatchingParameters(max_batch_size=64, num_batch_threads=1))
    requests = [np.full([1 + index % 3, 2], index) for index in range(20)]
    threading.Timer(0.3, model.release.set).start()
    results = concurrently(batcher, requests)
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result, request * 2)
    assert sum(model.calls) == sum(len(request) for request in requests) and len(model.calls) < len(requests)
    batcher.close()


def test_a_large_request_is_split_and_joined_and_sizes_are_padded_to_the_allowed_ones():
    model = FakeModel()
    batcher = Batcher(model, signature_defs(),
                      BatchingParameters(max_batch_size=4, num_batch_threads=1, allowed_batch_sizes=(2, 4)))
    rows = np.arange(10).reshape(10, 1)
    np.testing.assert_array_equal(batcher.run("serving_default", {"x": rows})["y"], rows * 2)
    assert model.calls == [4, 4, 2]
    np.testing.assert_array_equal(batcher.run("serving_default", {"x": rows[:3]})["y"], rows[:3] * 2)
    assert model.calls[-1] == 4  # 3 rows, padded to the allowed size 4 with copies of the first
    batcher.close()


def test_a_bad_request_fails_alone_and_its_neighbours_are_answered():
    model = FakeModel()
    model.release.clear()
    batcher = Batcher(model, signature_defs(), BatchingParameters(num_batch_threads=1))
    requests = [np.full([1, 2], -1 if index == 3 else index) for index in range(8)]
    threading.Timer(0.3, model.release.set).start()
    results = concurrently(batcher, requests)
    assert isinstance(results[3], ServingError) and results[3].code == CODE.INVALID_ARGUMENT
    for index, result in enumerate(results):
        if index != 3:
            np.testing.assert_array_equal(result, requests[index] * 2)
    batcher.close()


def test_a_full_queue_fails_at_once_and_a_late_request_meets_its_deadline():
    model = FakeModel()
    model.release.clear()  # one call runs and holds the only thread
    batcher = Batcher(model, signature_defs(),
                      BatchingParameters(max_batch_size=2, max_enqueued_batches=2, num_batch_threads=1))
    started = time.monotonic()
    results = concurrently(batcher, [np.ones([2, 1])] * 6, deadline_s=0.5)
    codes = sorted(result.code.name for result in results if isinstance(result, ServingError))
    # 1 batch runs, 2 wait (the queue's size: 1 more if the thread has not taken the first yet), the others are
    # refused at once; the rest pass their deadline
    assert 3 <= codes.count("UNAVAILABLE") <= 4 and codes.count("DEADLINE_EXCEEDED") == 6 - codes.count("UNAVAILABLE")
    assert time.monotonic() - started < 5
    model.release.set()
    batcher.close()


def test_inputs_of_other_widths_merge_only_when_padded():
    model = FakeModel()
    model.release.clear()
    defs = signature_defs()
    plain = Batcher(model, defs, BatchingParameters(num_batch_threads=1))
    threading.Timer(0.3, model.release.set).start()
    requests = [np.full([1, 2 + index % 2], index) for index in range(6)]
    for request, result in zip(requests, concurrently(plain, requests)):
        np.testing.assert_array_equal(result, request * 2)  # never padded
    plain.close()
    model = FakeModel()
    model.release.clear()
    padded = Batcher(model, defs, BatchingParameters(num_batch_threads=1, pad_variable_length_inputs=True))
    threading.Timer(0.3, model.release.set).start()
    results = concurrently(padded, requests)
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result[:, :request.shape[1]], request * 2)
        assert result.shape[1] in (2, 3)
    assert len(model.calls) < len(requests)
    padded.close()


def test_signatures_that_are_not_batch_major_run_unbatched():
    batcher = Batcher(FakeModel(), signature_defs(batch_major=False), BatchingParameters())
    assert not batcher.batches("serving_default")
    batcher.close()


# ----- a real server ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def batching_server(demo_model_dir):
    with ModelServer("demo", demo_model_dir, poll_wait_s=0,
                     batching=BatchingParameters(max_batch_size=32, batch_timeout_micros=20_000,
                                                 num_batch_threads=2)) as server:
        yield server


def test_a_batching_server_answers_each_client_as_alone(batching_server, demo_signatures, caplog):
    texts = [f"client {index} says {'hi ' * index}" for index in range(48)] + [b"\xff bad utf-8"]
    expected = demo_signatures["serving_default"](text=tf.constant(texts[:-1]))["probabilities"].numpy()
    channel = grpc.insecure_channel(f"127.0.0.1:{batching_server.grpc_port}")
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

    def client(index):
        text = texts[index]
        if index % 2:  # REST
            body = json.dumps({"instances": [text]}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{batching_server.rest_port}/v1/models/demo:predict",
                                             body, {"Content-Type": "application/json"})
            answer = json.loads(urllib.request.urlopen(request, timeout=20).read())["predictions"][0]["probabilities"]
        else:
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "demo"
            request.inputs["text"].CopyFrom(tf.make_tensor_proto([text]))
            if isinstance(text, bytes):
                with pytest.raises(grpc.RpcError) as error:
                    stub.Predict(request, timeout=20)
                assert error.value.code() == CODE.INVALID_ARGUMENT
                return
            answer = tf.make_ndarray(stub.Predict(request, timeout=20).outputs["probabilities"])[0]
        np.testing.assert_allclose(answer, expected[index], atol=1e-5, rtol=0)

    with caplog.at_level(logging.INFO, logger="serving.server.batching"):
        assert run_clients(len(texts), client) == []
    channel.close()
    rows = [int(record.getMessage().split()[2]) for record in caplog.records if record.getMessage().startswith("Batch")]
    assert sum(rows) >= len(texts) - 1 and max(rows) > 1  # merged, and each request in one batch or alone


def test_a_batching_server_has_the_threads_to_fill_its_batches(demo_model_dir, caplog):
    """A request holds a gRPC thread or a REST worker while it waits for its batch, so 8 of them (the default
    without batching) made batches of 8 rows at most, whatever max_batch_size said: 64 clients of a BERT-base
    embedder got 0.38x the direct batch-32 call's rate. By default a batching server has enough of both to fill
    a batch while another runs; 32 clients at once make one batch of 32 over either protocol."""
    parameters = BatchingParameters(max_batch_size=32, batch_timeout_micros=10_000_000, num_batch_threads=1)
    texts = [f"client {index}" for index in range(32)]
    with ModelServer("demo", demo_model_dir, poll_wait_s=0, batching=parameters) as server:
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        def grpc_client(index):
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "demo"
            request.inputs["text"].CopyFrom(tf.make_tensor_proto([texts[index]]))
            stub.Predict(request, timeout=30)

        def rest_client(index):
            body = json.dumps({"instances": [texts[index]]}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{server.rest_port}/v1/models/demo:predict", body,
                                             {"Content-Type": "application/json"})
            urllib.request.urlopen(request, timeout=30).read()

        for client in (grpc_client, rest_client):
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="serving.server.batching"):
                assert run_clients(len(texts), client) == []
            rows = [int(record.getMessage().split()[2]) for record in caplog.records
                    if record.getMessage().startswith("Batch")]
            assert rows == [32], (client.__name__, rows)
        channel.close()


def test_too_few_request_threads_for_the_batches_are_named_at_start(demo_model_dir, caplog):
    parameters = BatchingParameters(max_batch_size=32, num_batch_threads=1)
    with caplog.at_level(logging.WARNING, logger="serving.server.model_server"):
        with ModelServer("demo", demo_model_dir, poll_wait_s=0, grpc_max_threads=8, batching=parameters):
            pass
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0], warnings
    assert "--grpc_max_threads 8" in warnings[0] and "at most 8 rows" in warnings[0] and "64" in warnings[0]
    with ModelServer("demo", demo_model_dir, poll_wait_s=0) as server:  # no batching: 8 of each, as before
        assert (server.grpc_max_threads, server.rest_num_threads) == (8, 8)


def test_a_tflite_version_batches_too(tmp_path):
    directory = bert_tf.save_pretrained(bert_tf.BertClassifier(tiny_encoder(), num_classes=2), tmp_path / "sst2",
                                        vocab_file=write_vocab(tmp_path), lower_case=True, task="classify",
                                        seq_length=16)
    version = export_saved_model(directory, tmp_path / "models", "sst2", quantize="int8")
    alone = load_servable(version, 1)
    batched = load_servable(version, 1, batching=BatchingParameters(num_batch_threads=1, batch_timeout_micros=50_000))
    expected = [alone.predict("serving_default", {"text": np.array([text.encode()], dtype=object)})["probabilities"]
                for text in TEXTS]
    results = [None] * len(TEXTS)

    def client(index):
        results[index] = batched.predict("serving_default",
                                          {"text": np.array([TEXTS[index].encode()], dtype=object)})["probabilities"]

    assert run_clients(len(TEXTS), client) == []
    for result, want in zip(results, expected):
        np.testing.assert_allclose(result, want, atol=0.02, rtol=0)
        assert result.argmax() == want.argmax()
    batched.close()


def test_tensorflow_thread_flags_set_the_servers_thread_pools():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--tensorflow_intra_op_parallelism", "1", "--tensorflow_inter_op_parallelism", "2"])
    assert (args.tensorflow_intra_op_parallelism, args.tensorflow_inter_op_parallelism) == (1, 2)
    assert parser.parse_args([]).tensorflow_intra_op_parallelism == 0  # TensorFlow's choice, as in TF Serving
    with pytest.raises(ValueError, match="must be ≥ 0"):
        set_tensorflow_threads(-1, 0)
    code = ("from serving.server.model_server import set_tensorflow_threads; set_tensorflow_threads(1, 2); "
            "import tensorflow as tf; t = tf.config.threading; "
            "print(t.get_intra_op_parallelism_threads(), t.get_inter_op_parallelism_threads())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "2"]
