"""A TensorFlow-Serving-compatible model server for development and tests, and its clients.

Written by hand because the official `tensorflow_model_server` binary cannot be installed
here (neither PyPI nor Debian carry it; see ../shared/STACK.md, gotcha 7). It speaks the
same gRPC API (the protos and stubs of `tensorflow-serving-api`) and the same REST API, so
code written against it works unchanged against the official server, which is what
production should use.

Modules (import them directly; this package file imports nothing, so that the command
line stays fast):
    export             `export_saved_model`: a bert-tf model directory → BASE/NAME/<version>/ (README.md)
    tflite_export      `export_tflite`: the same as a `.tflite` file (ids or raw text in, quantization)
    tflite_runner      `TfliteModel`: runs such a file (tensorflow-text's TFLite kernels registered)
    server             `ModelServer` and the `serve` command (flags of `tensorflow_model_server`)
    model_config       `read_model_config_file`: `--model_config_file` (models, version policies, labels)
    model_manager      `ModelManager`: the versions served, loaded, retried and unloaded as TF Serving does
    grpc_client        `GrpcClient`: Predict, Classify, metadata and status over gRPC
    rest_client        `RestClient`: predict, classify, metadata and status over REST
    server_prediction  `ServerPredictor`: `bert-tf predict --server`'s results from a served export
    demo_model         `save_demo_model`: a tiny text classifier SavedModel to try everything on

Example:
    >>> from serving.demo_model import save_demo_model
    >>> from serving.server import ModelServer
    >>> from serving.grpc_client import GrpcClient
    >>> save_demo_model("/tmp/models/demo", version=1)            # doctest: +SKIP
    >>> with ModelServer("demo", "/tmp/models/demo") as server:  # doctest: +SKIP
    ...     client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="demo")
    ...     client.predict({"text": ["a fine day"]})["probabilities"].shape
    (1, 3)
"""
