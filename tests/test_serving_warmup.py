"""Warm-up records, as TensorFlow Serving has them: `bert-tf export` writes `assets.extra/tf_serving_warmup_requests`
(a TFRecord file of PredictionLog protos: per signature a request of typical length and one of the longest), and
`bert-tf serve` replays them before a version is AVAILABLE, so that its first request does not pay for building the
graph (9.3 s on BERT-Mini: a 5 s deadline failed)."""

import logging
import re
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

import bert_tf
from serving.client.grpc_client import GrpcClient
from serving.export.saved_model import export_saved_model
from serving.server.model_server import ModelServer
from tiny_exports import tiny_encoder, write_vocab

NAME = "sst2"
SEQ_LENGTH = 32


@pytest.fixture(scope="module")
def base_path(tmp_path_factory):
    """BASE/sst2 holding version 1: a tiny classifier exported with its text signatures."""
    folder = tmp_path_factory.mktemp("warmup")
    classifier = bert_tf.BertClassifier(tiny_encoder(), num_classes=2, label_names=["negative", "positive"])
    model_dir = bert_tf.save_pretrained(classifier, folder / "model", vocab_file=write_vocab(folder),
                                        seq_length=SEQ_LENGTH, task="classify")
    return export_saved_model(model_dir, folder / "models", NAME).parent


def warmup_requests(version_dir):
    path = version_dir / "assets.extra" / "tf_serving_warmup_requests"
    return [prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
            for record in tf.data.TFRecordDataset(str(path))]


def test_the_export_writes_a_tf_serving_warmup_file_of_typical_and_longest_requests(base_path):
    requests = warmup_requests(base_path / "1")
    by_signature = {}
    for request in requests:
        by_signature.setdefault(request.model_spec.signature_name, []).append(request)
    assert {"serving_default", "serve_ids", "preprocess"} == set(by_signature) and len(requests) == 6
    assert all(request.model_spec.name == NAME for request in requests)
    lengths = [int(tf.make_ndarray(request.inputs["input_mask"]).sum()) for request in by_signature["serve_ids"]]
    assert sorted(lengths) == [16, SEQ_LENGTH]  # a typical request and one as long as the model reads
    texts = [tf.make_ndarray(request.inputs["text"])[0].decode() for request in by_signature["serving_default"]]
    assert [len(text.split()) for text in texts] == [16, SEQ_LENGTH]


def test_a_version_answers_its_first_request_as_fast_as_the_next(base_path, caplog):
    caplog.set_level(logging.INFO, logger="serving.server")
    with ModelServer(NAME, base_path) as server:
        client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME)
        timings = []
        for _ in range(2):
            started = time.perf_counter()
            client.predict({"text": np.array(["the film was great"], dtype=object)})
            timings.append(time.perf_counter() - started)
    first, second = timings
    assert first < 5 * second + 0.25, timings  # without warm-up: about 1 s against 0.01 s here
    assert f"Warmed up version 1 of model '{NAME}' with 6 requests" in caplog.text


def test_warmup_can_be_turned_off_as_in_tensorflow_serving(base_path, caplog):
    import argparse

    from serving.server.model_server import add_arguments, build_server

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args([]).enable_model_warmup is True  # TensorFlow Serving's default
    server = build_server(parser.parse_args(["--model_base_path", str(base_path), "--port", "0", "--rest_api_port", "0",
                                             "--enable_model_warmup=false"]))
    assert server.options.enable_model_warmup is False
    caplog.set_level(logging.INFO, logger="serving.server")
    with server:
        pass
    assert "Warmed up" not in caplog.text


def test_a_damaged_or_folder_warmup_file_is_refused_naming_it(base_path, tmp_path):
    """TF Serving fails the load of a version whose warm-up file it cannot read; the error names the file (TensorFlow's
    DataLossError alone says "corrupted record at 0")."""
    import shutil

    from serving.warmup_records import read_warmup_requests

    damaged = tmp_path / "damaged"
    shutil.copytree(base_path / "1", damaged)
    warmup = damaged / "assets.extra" / "tf_serving_warmup_requests"
    data = bytearray(warmup.read_bytes())
    data[20] ^= 0xFF  # inside the first record's data: its checksum no longer matches
    warmup.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match=rf"^{re.escape(str(warmup))}: corrupted record at \d+"):
        read_warmup_requests(damaged)
    data[20] ^= 0xFF
    warmup.write_bytes(bytes(data[:len(data) // 2]))  # cut short: one line, without TensorFlow's graph decorations
    with pytest.raises(tf.errors.DataLossError) as refused:
        read_warmup_requests(damaged)
    assert re.fullmatch(rf"{re.escape(str(warmup))}: truncated record at \d+.*", refused.value.message), refused.value
    assert not re.search(r"\{\{function_node|\[Op:|name: $|\n", refused.value.message), refused.value.message
    warmup.unlink()
    warmup.mkdir()
    with pytest.raises(ValueError, match=rf"^{re.escape(str(warmup))} is a folder, not a file of warm-up requests"):
        read_warmup_requests(damaged)
