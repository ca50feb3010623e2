"""TF Serving's monitoring (`--monitoring_config_file`, serving/server/monitoring.py): a real server on loopback,
asked over gRPC and REST, then its Prometheus page read back: TF Serving's metric names, labels and counts."""

import json
import re
import urllib.request

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2, predict_pb2, prediction_service_pb2_grpc

from serving.server.batching import BatchingParameters
from serving.server.model_server import ModelServer
from serving.server.monitoring import read_monitoring_config

NAME = "monitored"  # metrics are process-wide: a name no other test serves
SAMPLE = re.compile(r'^(?P<name>[:\w]+)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$')


def metrics_page(port: int, path: str) -> tuple[str, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}{path}", timeout=20) as response:
        return response.headers["Content-Type"], response.read().decode()


def samples(page: str) -> dict[tuple, float]:
    """{(name, frozenset of label pairs): value} of every sample line of a Prometheus text page."""
    found = {}
    for line in page.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match["labels"] or ""))
        found[match["name"], labels] = float(match["value"])
    return found


def predict_request(texts, input_name="text"):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = NAME
    request.inputs[input_name].CopyFrom(tf.make_tensor_proto(np.array([t.encode() for t in texts], dtype=object)))
    return request


@pytest.fixture(scope="module")
def monitored_server(demo_model_dir, tmp_path_factory):
    config = tmp_path_factory.mktemp("monitoring") / "monitoring.config"
    config.write_text('prometheus_config {\n  enable: true,\n  path: "/metrics/here"\n}\n')
    batching = BatchingParameters(max_batch_size=8, batch_timeout_micros=1000)
    with ModelServer(NAME, demo_model_dir, poll_wait_s=0, monitoring_config_file=config, batching=batching) as server:
        yield server


def test_the_page_counts_grpc_and_rest_requests_under_tf_servings_names(monitored_server):
    server = monitored_server
    before = samples(metrics_page(server.rest_port, "/metrics/here")[1])
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        for _ in range(3):
            stub.Predict(predict_request(["a fine day", "rain"]), timeout=20)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Predict(predict_request(["a fine day"], input_name="no_such_input"), timeout=20)
        classify = classification_pb2.ClassificationRequest()
        classify.model_spec.name = NAME
        classify.input.example_list.examples.add().features.feature["text"].bytes_list.value.append(b"sun")
        stub.Classify(classify, timeout=20)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for _ in range(2):
        body = json.dumps({"instances": ["a fine day"]}).encode()
        with opener.open(urllib.request.Request(f"http://127.0.0.1:{server.rest_port}/v1/models/{NAME}:predict",
                                                data=body), timeout=20) as response:
            assert response.status == 200

    content_type, page = metrics_page(server.rest_port, "/metrics/here")
    assert content_type.startswith("text/plain")
    after = samples(page)
    refused_status = refused.value.code().name
    assert refused_status == "INVALID_ARGUMENT"
    count = ":tensorflow:serving:request_count"
    assert after[count, frozenset({("model_name", NAME), ("status", "OK")})] == 6
    assert after[count, frozenset({("model_name", NAME), ("status", refused_status)})] == 1
    latency = ":tensorflow:serving:request_latency"
    for api, entrypoint, calls in (("Predict", "GRPC", 3), ("Classify", "GRPC", 1), ("Predict", "REST", 2)):
        labels = {("model_name", NAME), ("API", api), ("entrypoint", entrypoint)}
        assert after[f"{latency}_count", frozenset(labels)] == calls
        assert after[f"{latency}_sum", frozenset(labels)] > 0  # microseconds
        buckets = sorted(((limit, value) for (name, pairs), value in after.items() if name == f"{latency}_bucket"
                          and labels < pairs for key, limit in pairs if key == "le"),
                         key=lambda item: float(item[0]))
        assert len(buckets) == 34 and buckets[0][0] == "10" and buckets[-1] == ("+Inf", calls)  # TF's 33 + infinity
        assert [value for _, value in buckets] == sorted(value for _, value in buckets)  # cumulative
    assert f"# TYPE {latency} histogram" in page and f"# TYPE {count} counter" in page
    # Batching: every successful Predict and Classify of the demo's batch-major signature waited in a batch queue.
    runs = ":tensorflow:serving:batching_session:wrapped_run_count", frozenset()
    queued = ":tensorflow:serving:batching_session:queuing_latency_count", frozenset({("thread_pool_name",
                                                                                        "batch_threads")})
    assert after[runs] - before.get(runs, 0) >= 1
    assert after[queued] - before.get(queued, 0) == 6


def test_monitoring_config_file_errors_name_the_file_and_line(tmp_path):
    config = tmp_path / "monitoring.config"
    config.write_text("prometheus_config {\n  enabel: true\n}\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(config))}:2:3 : .*no field named \"enabel\""):
        read_monitoring_config(config)
    config.write_text("prometheus_config { enable: false }")
    assert read_monitoring_config(config) is None
    config.write_text("prometheus_config { enable: true }")
    assert read_monitoring_config(config) == "/monitoring/prometheus/metrics"  # TF Serving's default path
