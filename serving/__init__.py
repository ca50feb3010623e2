"""Serving bert-tf models: exports for TensorFlow Serving and TFLite, a compatible server, and its clients.

The server (for development and tests) is written by hand because the official
`tensorflow_model_server` binary cannot be installed here: neither PyPI nor Debian carry it
(`tensorflow-serving-api` gives only the protos and gRPC stubs). It speaks the same gRPC API (the protos and stubs of
`tensorflow-serving-api`) and the same REST API, so code written against it works unchanged
against the official server, which is what production should use.

Three subpackages, one per audience (import their modules directly; no package file here imports
anything but the standard library, so that the command line stays fast):
    export/   for people who write exports (`bert-tf export`)
        saved_model   `export_saved_model`: a bert-tf model directory → BASE/NAME/<version>/ (README.md)
        tflite        `export_tflite`: the same as a `.tflite` file (ids or raw text in, quantization)
        signatures    what both compute per task from token ids (`ServingSpec`, `serve_ids`, `model_info`)
        demo_model    `save_demo_model`: a tiny text classifier SavedModel to try everything on
    server/   for people who run the server (`bert-tf serve`, `python -m serving.server`)
        model_server  `ModelServer` and the `serve` command (flags of `tensorflow_model_server`)
        model_config  `read_model_config_file`: `--model_config_file` (models, version policies, labels)
        model_manager `ModelManager`: the versions served, loaded, retried and unloaded as TF Serving does
        servable, grpc_service, rest_service, classify, errors: one version run; the gRPC and REST front ends
    client/   for people who call a server (this one or the official one)
        grpc_client   `GrpcClient`: Predict, Classify, metadata and status over gRPC
        rest_client   `RestClient`: predict, classify, metadata and status over REST
        batching      a large request sent in chunks of `max_batch_size`
        server_prediction  `ServerPredictor`: `bert-tf predict --server`'s results from a served export
What the three subpackages share is in `serving/`'s own modules, which import none of the three
(tests/test_dependencies.py checks it, and that clients import nothing of the server or the export, the
server nothing of the export, the export nothing of the server):
    protocol      names: the default signature, the version files, the server's default batch limit
    rest_json     TensorFlow Serving's REST JSON, both ways
    classification  the Classify convention and `make_example` (its Examples)
    tflite_runner `TfliteModel`: runs a `.tflite` file (the export checks it, the server serves it)
    native_stderr native libraries' stderr lines, filtered (`bert_tf.native_stderr`, loaded on its own:
                  importing the package quiets TensorFlow's start-up lines, as `import bert_tf` does)

Example:
    >>> from serving.export.demo_model import save_demo_model
    >>> from serving.server.model_server import ModelServer
    >>> from serving.client.grpc_client import GrpcClient
    >>> save_demo_model("/tmp/models/demo", version=1)            # doctest: +SKIP
    >>> with ModelServer("demo", "/tmp/models/demo") as server:  # doctest: +SKIP
    ...     client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="demo")
    ...     client.predict({"text": ["a fine day"]})["probabilities"].shape
    (1, 3)
"""

import importlib.util
import sys
from pathlib import Path


def _load_native_stderr():
    """bert_tf/native_stderr.py (standard library only), loaded on its own: `import bert_tf.native_stderr` would
    first run bert_tf/__init__, which imports TensorFlow, the very import whose start-up lines it drops."""
    path = Path(importlib.util.find_spec("bert_tf").origin).parent / "native_stderr.py"
    spec = importlib.util.spec_from_file_location("serving.native_stderr", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # `from serving.native_stderr import ...` finds it
    spec.loader.exec_module(module)
    return module


native_stderr = _load_native_stderr()
native_stderr.quiet_tensorflow_start_up()
