"""Version management as TensorFlow Serving does it, on the tiny demo SavedModel: failed loads are
retried (a version copied in file by file is served once complete), deleted versions are unloaded,
a model config file serves several models with their version policies and labels and is re-read,
and GetModelStatus tells what happened."""

import json
import logging
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from serving.export.demo_model import save_demo_model
from serving.client.grpc_client import GrpcClient
from serving.server.model_config import VersionPolicy, parse_model_config, read_model_config_file
from serving.server.model_server import ModelServer

NAME = "demo"
RETRY_S = 2.0  # the retry interval of these tests (TensorFlow Serving's default: 60 s)
LOAD_S = 5.0  # at most this long to load a demo version, on a busy machine
TEXTS = ["a fine day", "rain again"]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def saved_versions(tmp_path_factory) -> Path:
    """Versions 1, 2 and 3 of the demo model (different weights), to copy into each test's base paths."""
    folder = tmp_path_factory.mktemp("saved")
    for version in (1, 2, 3):
        save_demo_model(folder, version)
    return folder


def add_version(saved_versions: Path, base: Path, version: int) -> Path:
    """Copies version `version` into `base`, atomically (a temporary folder renamed)."""
    temporary = base / f".tmp-{version}"
    shutil.copytree(saved_versions / str(version), temporary)
    return temporary.rename(base / str(version))


def wait_for(condition, timeout_s: float = 30.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.05)


def http(server, path, body=None):
    """(HTTP status, JSON answer) of a GET, or of a POST of `body` as JSON."""
    data = None if body is None else json.dumps(body).encode()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(f"http://127.0.0.1:{server.rest_port}{path}", data=data), timeout=20) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def served_version(server, name=NAME, version=None, label=None) -> int:
    """The version that answers a Predict for `name` (and `version` or `label`)."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    if version is not None:
        request.model_spec.version.value = version
    if label is not None:
        request.model_spec.version_label = label
    request.inputs["text"].CopyFrom(tf.make_tensor_proto(TEXTS))
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        return stub.Predict(request, timeout=20).model_spec.version.value


def refused(server, **request) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as raised:
        served_version(server, **request)
    return raised.value.code()


def status(server, name=NAME) -> dict[int, str]:
    with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=name) as client:
        return client.status()


def model_base(tmp_path, saved_versions, versions, name=NAME) -> Path:
    base = tmp_path / name
    base.mkdir()
    for version in versions:
        add_version(saved_versions, base, version)
    return base


# ----- retries, unloading --------------------------------------------------------


def test_a_version_copied_in_file_by_file_is_served_within_the_retry_interval(tmp_path, saved_versions, caplog):
    base = model_base(tmp_path, saved_versions, [1])
    with ModelServer(NAME, base, poll_wait_s=0.1, load_retry_interval_s=RETRY_S) as server:
        (base / "2").mkdir()
        shutil.copy(saved_versions / "2" / "saved_model.pb", base / "2")  # variables/ comes later
        wait_for(lambda: "Loading version 2 of model 'demo' failed (retry 1 of 5" in caplog.text, what="a failed load")
        assert status(server) == {2: "LOADING", 1: "AVAILABLE"}
        assert served_version(server) == 1
        for item in (saved_versions / "2").iterdir():
            if item.is_dir():
                shutil.copytree(item, base / "2" / item.name)
            elif item.name != "saved_model.pb":
                shutil.copy(item, base / "2")
        complete = time.monotonic()
        wait_for(lambda: status(server).get(2) == "AVAILABLE", RETRY_S + LOAD_S, "version 2 served")
        assert time.monotonic() - complete < RETRY_S + LOAD_S
        assert status(server) == {2: "AVAILABLE", 1: "END"}
        assert served_version(server) == 2
        with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME) as client:
            expected = tf.saved_model.load(str(base / "2")).signatures["serving_default"](text=tf.constant(TEXTS))
            np.testing.assert_allclose(client.predict({"text": TEXTS})["probabilities"], expected["probabilities"],
                                       atol=1e-5)


def test_a_broken_version_is_retried_then_reported_and_the_previous_one_keeps_serving(tmp_path, saved_versions,
                                                                                      caplog):
    caplog.set_level(logging.INFO, "serving.server.model_manager")
    base = model_base(tmp_path, saved_versions, [1])
    with ModelServer(NAME, base, poll_wait_s=0.1, max_num_load_retries=2, load_retry_interval_s=0.05) as server:
        (base / "2").mkdir()
        (base / "2" / "saved_model.pb").write_bytes(b"not a SavedModel")
        wait_for(lambda: status(server).get(2) == "END", what="version 2 given up")
        assert caplog.text.count("Loading version 2 of model 'demo' failed") == 3  # once, then 2 retries
        _, answer = http(server, f"/v1/models/{NAME}/versions/2")
        [entry] = answer["model_version_status"]
        assert entry["state"] == "END" and "saved_model.pb" in entry["status"]["error_message"]
        assert served_version(server) == 1 and status(server)[1] == "AVAILABLE"

        shutil.rmtree(base / "2")  # gone and back: tried afresh
        wait_for(lambda: "Version 2 of model 'demo' is gone" in caplog.text, what="version 2 seen gone")
        add_version(saved_versions, base, 2)
        wait_for(lambda: status(server) == {2: "AVAILABLE", 1: "END"}, what="the new version 2 served")


def test_deleted_versions_are_unloaded_and_the_status_says_so(tmp_path, saved_versions):
    base = model_base(tmp_path, saved_versions, [1, 2])
    with ModelServer(NAME, base, poll_wait_s=0.1) as server:
        assert status(server) == {2: "AVAILABLE"}  # "latest": version 1 is not loaded
        shutil.rmtree(base / "2")
        wait_for(lambda: status(server) == {2: "END", 1: "AVAILABLE"}, what="version 1 back")
        assert served_version(server) == 1
        assert refused(server, version=2) == grpc.StatusCode.NOT_FOUND
        shutil.rmtree(base / "1")
        wait_for(lambda: status(server) == {2: "END", 1: "END"}, what="every version unloaded")
        assert refused(server) == grpc.StatusCode.NOT_FOUND
        assert http(server, f"/v1/models/{NAME}:predict", {"instances": TEXTS})[0] == 404


# ----- model config files --------------------------------------------------------


def model_config(**models) -> str:
    """A ModelServerConfig's text: each model's base path, policy and labels."""
    blocks = []
    for name, (base, policy, labels) in models.items():
        labels = " ".join(f'version_labels {{ key: "{label}" value: {version} }}' for label, version in labels.items())
        blocks.append(f'  config {{ name: "{name}" base_path: "{base}" model_platform: "tensorflow"\n'
                      f"           model_version_policy {{ {policy} }} {labels} }}")
    return "model_config_list {\n" + "\n".join(blocks) + "\n}\n"


def test_a_config_file_serves_several_models_with_their_policies_and_labels(tmp_path, saved_versions, caplog):
    alpha = model_base(tmp_path, saved_versions, [1, 2, 3], "alpha")
    beta = model_base(tmp_path, saved_versions, [1, 2], "beta")
    config_file = tmp_path / "models.config"
    config_file.write_text(model_config(alpha=(alpha, "latest { num_versions: 2 }", {}),
                                        beta=(beta, "specific { versions: 1 }", {"stable": 1})))
    with ModelServer(model_config_file=config_file, model_config_poll_wait_s=0.1, poll_wait_s=0.1) as server:
        assert server.model_names == ["alpha", "beta"]
        assert status(server, "alpha") == {3: "AVAILABLE", 2: "AVAILABLE"}
        assert status(server, "beta") == {1: "AVAILABLE"}
        assert served_version(server, "alpha") == 3 and served_version(server, "alpha", version=2) == 2
        assert refused(server, name="alpha", version=1) == grpc.StatusCode.NOT_FOUND
        assert served_version(server, "beta") == 1 and served_version(server, "beta", label="stable") == 1
        assert refused(server, name="beta", label="canary") == grpc.StatusCode.INVALID_ARGUMENT
        assert refused(server, name="gamma") == grpc.StatusCode.NOT_FOUND
        assert http(server, "/v1/models/beta/labels/stable")[1]["model_version_status"][0]["version"] == "1"
        assert http(server, "/v1/models/beta/labels/stable/metadata")[1]["model_spec"]["version"] == "1"
        assert http(server, "/v1/models/beta/labels/stable:predict", {"instances": TEXTS})[0] == 200
        assert http(server, "/v1/models/beta/labels/canary:predict", {"instances": TEXTS})[0] == 400
        with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="beta") as client:
            assert client.metadata("stable") == client.metadata(1)

        # Re-read: alpha removed, beta serves all its versions, a new label.
        config_file.write_text(model_config(beta=(beta, "all {}", {"stable": 1, "canary": 2})))
        wait_for(lambda: server.model_names == ["beta"], what="the new config applied")
        assert status(server, "beta") == {2: "AVAILABLE", 1: "AVAILABLE"}
        assert served_version(server, "beta", label="canary") == 2 and served_version(server, "beta") == 2
        assert refused(server, name="alpha") == grpc.StatusCode.NOT_FOUND

        # A label on a version that does not serve: the config is refused, the labels stay.
        config_file.write_text(model_config(beta=(beta, "all {}", {"stable": 1, "canary": 5})))
        wait_for(lambda: "not currently available" in caplog.text, what="the refused config logged")
        assert served_version(server, "beta", label="canary") == 2


def test_an_empty_config_file_is_ignored_and_the_models_keep_serving(tmp_path, saved_versions, caplog):
    """An editor or a `>` redirection leaves the file empty for a moment: TF Serving takes no action on an empty
    config; so does `bert-tf serve` (it unloaded every model and answered 404 until a good file came back)."""
    alpha = model_base(tmp_path, saved_versions, [1], "alpha")
    config_file = tmp_path / "models.config"
    config_file.write_text(model_config(alpha=(alpha, "latest {}", {})))
    with ModelServer(model_config_file=config_file, model_config_poll_wait_s=0.05, poll_wait_s=0.1) as server:
        config_file.write_text("")
        wait_for(lambda: "takes no action on an empty config" in caplog.text, what="the empty config logged")
        time.sleep(0.3)  # several more polls of the empty file
        assert server.model_names == ["alpha"] and served_version(server, "alpha") == 1
        assert caplog.text.count("takes no action on an empty config") == 1  # said once, not at every poll
        config_file.write_text("model_config_list {}")  # a config that lists no model does unload them
        wait_for(lambda: server.model_names == [], what="the config listing no model applied")


def test_a_model_whose_base_path_does_not_exist_yet_is_waited_for(tmp_path, saved_versions, caplog):
    """As in TF Serving: the other models of the file serve, and the missing one serves once it is exported
    (the whole file was refused)."""
    alpha = model_base(tmp_path, saved_versions, [1], "alpha")
    later = tmp_path / "later"
    config_file = tmp_path / "models.config"
    config_file.write_text(model_config(alpha=(alpha, "latest {}", {}), later=(later, "latest {}", {})))
    with ModelServer(model_config_file=config_file, model_config_poll_wait_s=0.05, poll_wait_s=0.1) as server:
        assert server.model_names == ["alpha", "later"] and served_version(server, "alpha") == 1
        assert refused(server, name="later") == grpc.StatusCode.NOT_FOUND
        assert f"Model 'later' of {config_file}: its base path {later} does not exist yet" in caplog.text
        later.mkdir()
        add_version(saved_versions, later, 2)

        def later_serves() -> bool:
            try:
                return served_version(server, "later") == 2
            except grpc.RpcError:  # NOT_FOUND until version 2 is loaded
                return False

        wait_for(later_serves, what="the new base path served")
        assert status(server, "later") == {2: "AVAILABLE"}


def test_a_label_on_a_version_that_does_not_serve_fails_the_start_unless_allowed(tmp_path, saved_versions):
    beta = model_base(tmp_path, saved_versions, [1, 2], "beta")
    config_file = tmp_path / "models.config"
    config_file.write_text(model_config(beta=(beta, "specific { versions: 1 }", {"canary": 2})))
    with pytest.raises(ValueError, match="label 'canary' to version 2 of model beta, which is not currently available"):
        ModelServer(model_config_file=config_file, poll_wait_s=0).start()
    with ModelServer(model_config_file=config_file, poll_wait_s=0, allow_version_labels_for_unavailable_models=True) as server:
        assert refused(server, name="beta", label="canary") == grpc.StatusCode.NOT_FOUND
        assert served_version(server, "beta") == 1


def test_the_shipped_models_config_serves_the_models_exported_beside_it(tmp_path, saved_versions):
    [sst2] = read_model_config_file(REPO / "serving" / "models.config")
    assert (sst2.name, sst2.policy) == ("sst2", VersionPolicy("latest", num_versions=1))
    assert str(sst2.base_path).endswith("models/sst2")
    # The same file beside a models/ folder, as docker-compose.yml mounts it (/models is absent here).
    folder = tmp_path / "serving"
    folder.mkdir()
    shutil.copy(REPO / "serving" / "models.config", folder)
    (folder / "models").mkdir()
    model_base(folder / "models", saved_versions, [1, 2], "sst2")
    with ModelServer(model_config_file=folder / "models.config", poll_wait_s=0) as server:
        assert server.model_names == ["sst2"] and served_version(server, "sst2") == 2


BAD_CONFIGS = {
    "relative base path": ('config { name: "a" base_path: "models/a" model_platform: "tensorflow" }', "absolute"),
    "a name twice": ('config { name: "a" base_path: "/m/a" model_platform: "tensorflow" } '
                     'config { name: "a" base_path: "/m/b" model_platform: "tensorflow" }', "multiple times"),
    "other platform": ('config { name: "a" base_path: "/m/a" model_platform: "pytorch" }', "model_platform"),
    "no platform": ('config { name: "a" base_path: "/m/a" }', "model_platform"),
    "a name with /": ('config { name: "a/b" base_path: "/m/a" model_platform: "tensorflow" }', "Invalid model name"),
    "unknown field": ('config { nme: "a" }', "not a text-format ModelServerConfig"),
}


@pytest.mark.parametrize("case", BAD_CONFIGS, ids=list(BAD_CONFIGS))
def test_bad_config_files_are_refused_as_tensorflow_serving_does(case, tmp_path):
    text, error = BAD_CONFIGS[case]
    path = tmp_path / "models.config"
    path.write_text(f"model_config_list {{ {text} }}")
    with pytest.raises(ValueError, match=error) as raised:
        read_model_config_file(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_version_policies_pick_versions_as_tensorflow_serving_does():
    configs = parse_model_config("""model_config_list {
        config { name: "a" base_path: "/m/a" model_platform: "tensorflow" }
        config { name: "b" base_path: "/m/b" model_type: TENSORFLOW model_version_policy { latest { num_versions: 2 } } }
        config { name: "c" base_path: "/m/c" model_platform: "tensorflow" model_version_policy { specific { versions: 1 versions: 5 } } }
        config { name: "d" base_path: "/m/d" model_platform: "tensorflow" model_version_policy { all {} } version_labels { key: "x" value: 3 } }
    }""")
    on_disk = [1, 2, 3, 4]
    assert [sorted(config.policy.select(on_disk)) for config in configs] == [[4], [3, 4], [1], [1, 2, 3, 4]]
    assert configs[3].labels == (("x", 3),) and configs[0].base_path == Path("/m/a")


def test_serve_flags_have_tensorflow_serving_names_and_defaults():
    import argparse

    from serving.server.model_server import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args([])
    assert (defaults.model_config_file, defaults.model_config_file_poll_wait_seconds, defaults.max_num_load_retries,
            defaults.load_retry_interval_micros, defaults.allow_version_labels_for_unavailable_models) == (
        "", 0, 5, 60_000_000, False)
    args = parser.parse_args(["--model_config_file=/c/models.config", "--max_num_load_retries=0",
                              "--allow_version_labels_for_unavailable_models=true"])
    assert (args.model_config_file, args.max_num_load_retries, args.allow_version_labels_for_unavailable_models) == (
        "/c/models.config", 0, True)
    assert parser.parse_args(["--allow_version_labels_for_unavailable_models"]).allow_version_labels_for_unavailable_models


def test_the_flags_reach_the_models_as_one_options_object(tmp_path):
    """ModelServer relayed 13 settings one by one to ModelManager, which relayed them to each model (issue 35,
    item 4): the flags make one ModelOptions, handed down as it is; flags and defaults mean what they meant."""
    import argparse

    from serving.server.batching import BatchingParameters
    from serving.server.model_options import ModelOptions
    from serving.server.model_server import add_arguments, build_server

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    server = build_server(parser.parse_args([
        "--model_base_path", str(tmp_path), "--file_system_poll_wait_seconds", "0.5",
        "--model_config_file_poll_wait_seconds", "7", "--max_num_load_retries", "2",
        "--load_retry_interval_micros", "250000", "--allow_version_labels_for_unavailable_models",
        "--prefer_tflite_model", "--max_batch_size", "64", "--max_request_text_bytes", "1000", "--enable_batching"]))
    assert server.options == ModelOptions(
        poll_wait_s=0.5, model_config_poll_wait_s=7, max_num_load_retries=2, load_retry_interval_s=0.25,
        allow_version_labels_for_unavailable_models=True, prefer_tflite_model=True, max_batch_size=64,
        max_request_text_bytes=1000, batching=BatchingParameters())
    assert (server.model_base_path, server.rest_max_body_bytes) == (tmp_path, 8 * 2**20)
    defaults = build_server(parser.parse_args(["--model_base_path", str(tmp_path)]))
    assert defaults.options == ModelOptions() == ModelOptions(
        poll_wait_s=1.0, model_config_poll_wait_s=0, max_num_load_retries=5, load_retry_interval_s=60.0,
        allow_version_labels_for_unavailable_models=False, prefer_tflite_model=False, max_batch_size=512,
        max_request_text_bytes=2**20, batching=None)
    with pytest.raises(ValueError, match="max_num_load_retries must be ≥ 0"):
        ModelServer(NAME, tmp_path, max_num_load_retries=-1)


def test_version_folders_that_cannot_be_folders_are_logged_once(tmp_path, saved_versions, caplog):
    """A version named like a number but a symlink loop, a FIFO or a file is skipped, and said (it was silent)."""
    import os

    base = model_base(tmp_path, saved_versions, [1])
    (base / "2").symlink_to(base / "2")
    os.mkfifo(base / "3")
    (base / "4").write_text("not a version")
    with ModelServer(NAME, base, poll_wait_s=0.05) as server:
        time.sleep(0.3)  # several polls
        assert served_version(server) == 1
    for number, what in ((2, "a symlink loop"), (3, "a FIFO"), (4, "a file")):
        message = f"{base / str(number)} is {what}, not a version folder: skipped"
        assert caplog.text.count(message) == 1, (message, caplog.text)
