"""One-line errors, no tracebacks, from the serving commands: `bert-tf predict --server` against a port
nobody listens on or with a wrong model name, `bert-tf serve` pointed at the wrong folder (with what to
pass instead) or at a bad config file; and the one warning `serve` gives while it waits for a first version."""

import logging
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from bert_tf_cli import main
from serving.client.grpc_client import GrpcClient
from serving.server.model_server import ModelServer

BERT_TF = Path(sys.executable).parent / "bert-tf"


def free_port() -> int:
    with socket.socket() as probe:  # bound, then closed: nobody listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def error_line(capsys, argv) -> str:
    """The one stderr line of a command that fails with exit status 2."""
    assert main(argv) == 2
    [line] = capsys.readouterr().err.splitlines()
    return line


def test_predict_against_a_closed_port_is_one_line():
    port = free_port()
    result = subprocess.run([str(BERT_TF), "predict", "--server", f"127.0.0.1:{port}", "--model", "sst2", "a film"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"bert-tf predict: error: No model server answers at 127.0.0.1:{port}")
    assert "gRPC port" in line


def test_predict_with_a_wrong_model_name_is_one_line(capsys, demo_model_dir):
    with ModelServer("demo", demo_model_dir, poll_wait_s=0) as server:
        line = error_line(capsys, ["predict", "--server", f"127.0.0.1:{server.grpc_port}", "--model", "sst2", "a film"])
    assert line.startswith(f"bert-tf predict: error: Model 'sst2' not found at 127.0.0.1:{server.grpc_port}")
    assert "This server serves model 'demo'" in line and "--model_name" in line


def serve_args(base_path) -> list[str]:
    return ["serve", "--model_base_path", str(base_path), "--port", "0", "--rest_api_port", "0"]


def test_serve_at_a_version_folder_says_pass_its_parent(capsys, demo_model_dir):
    line = error_line(capsys, serve_args(demo_model_dir / "1"))
    assert f"is a version folder (it holds saved_model.pb): pass its parent, {demo_model_dir}" in line


def test_serve_at_a_model_directory_says_export_it_first(capsys, tmp_path):
    model_dir = tmp_path / "sst2_model"
    model_dir.mkdir()
    for name in ("model.keras", "vocab.txt", "bert_tf.json"):
        (model_dir / name).write_text("")
    line = error_line(capsys, serve_args(model_dir) + ["--model_name", "sst2"])
    assert f"export it first with bert-tf export --model {model_dir} --out BASE --name sst2" in line


def test_serve_at_the_folder_of_the_models_names_them(capsys, demo_model_dir):
    line = error_line(capsys, serve_args(demo_model_dir.parent))
    assert f"holds model folders (demo), not versions: pass one of them, e.g. {demo_model_dir}" in line


def test_serve_with_a_bad_config_file_or_none_is_one_line(capsys, tmp_path):
    config_file = tmp_path / "models.config"
    config_file.write_text('model_config_list { config { name: "a" base_path: "models/a" model_platform: "tensorflow" } }')
    assert "to have an absolute path" in error_line(capsys, ["serve", "--model_config_file", str(config_file)])
    assert "argument --model_config_file: no such file" in error_line(
        capsys, ["serve", "--model_config_file", str(tmp_path / "absent.config")])
    assert "--model_base_path" in error_line(capsys, ["serve"])


def test_serve_at_an_empty_folder_waits_and_says_once_for_what(tmp_path, caplog):
    base = tmp_path / "sst2"
    base.mkdir()
    with caplog.at_level(logging.WARNING), ModelServer("sst2", base, poll_wait_s=0.05) as server:
        with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="sst2", retries=0) as client:
            with pytest.raises(grpc.RpcError) as raised:
                client.metadata()
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND and "no version yet" in raised.value.details()
    [warning] = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert warning.startswith(f"No version of model 'sst2' in {base} yet: waiting for {base}/<version>/saved_model.pb")
    assert f"bert-tf export --model DIR --out {tmp_path} --name sst2" in warning


def test_what_serve_logs_while_it_serves_says_it_is_bert_tf_serve(tmp_path):
    """Its warnings come long after it started, among other programs' lines: each names `bert-tf serve`."""
    base = tmp_path / "sst2"
    base.mkdir()
    process = subprocess.Popen([str(BERT_TF), "serve", "--model_name", "sst2", "--model_base_path", str(base),
                                "--port", "0", "--rest_api_port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()  # the one warning: no version yet
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert line.startswith("bert-tf serve: WARNING No version of model 'sst2'"), line
