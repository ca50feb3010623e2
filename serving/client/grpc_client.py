"""`GrpcClient`: TensorFlow Serving's gRPC API from Python, with numpy in and out.

Works with this package's server and with the official TensorFlow Serving. Each call has
a deadline (`timeout_s`); a call answered UNAVAILABLE (server starting, restarting or
overloaded) is retried `retries` times with exponential backoff, any other error is
raised at once as `grpc.RpcError` (`one_line_error` turns one into a message for people).
A predict or classify request larger than `max_batch_size` is sent in chunks and the
answers joined (`serving.client.batching`). `version` is a version number, a version label (a
str: the server's `version_labels`), or None: the highest version the server serves.

Inputs are numpy arrays, sent with their dtype (the server checks it: int64 ids for an
int32 input are INVALID_ARGUMENT), or lists, converted as `tf.constant` does (Python
ints -> int32, floats -> float32, str -> UTF-8 bytes; `serving.client.batching.as_arrays`).

Example:
    >>> client = GrpcClient("127.0.0.1:8500", model_name="demo")  # doctest: +SKIP
    >>> client.predict({"text": ["a fine day", "rain"]})["probabilities"].shape  # doctest: +SKIP
    (2, 3)
    >>> client.classify([{"text": "a fine day"}])  # doctest: +SKIP
    [[('negative', 0.21), ('neutral', 0.3), ('positive', 0.49)]]
    >>> client.status()  # doctest: +SKIP
    {1: 'AVAILABLE'}
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import grpc
import numpy as np
import tensorflow as tf
from google.protobuf import json_format
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from serving.classification import make_example
from serving.client.batching import as_arrays, batch_major_outputs, chunks, predict_in_batches

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 2**31 - 1


class GrpcClient:
    """Client of model `model_name` at `target` ("host:port"); see the module docstring."""

    def __init__(
        self,
        target: str = "127.0.0.1:8500",
        *,
        model_name: str,
        signature_name: str = "serving_default",
        timeout_s: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.1,
        max_batch_size: int | None = None,
    ):
        self.target = target
        self.model_name = model_name
        self.signature_name = signature_name
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_batch_size = max_batch_size
        self._channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        self._predictions = prediction_service_pb2_grpc.PredictionServiceStub(self._channel)
        self._models = model_service_pb2_grpc.ModelServiceStub(self._channel)

    def predict(
        self, inputs: Mapping[str, Any], version: int | str | None = None, output_filter: Iterable[str] = ()
    ) -> dict[str, np.ndarray]:
        """The signature's outputs (or only those in `output_filter`) for `inputs`, as numpy arrays."""
        arrays = as_arrays(inputs)
        output_filter = list(output_filter)

        def predict_once(chunk):
            request = predict_pb2.PredictRequest()
            self._fill_spec(request.model_spec, version, with_signature=True)
            for name, value in chunk.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
            request.output_filter.extend(output_filter)
            response = self._call(self._predictions.Predict, request)
            return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}

        return predict_in_batches(
            predict_once, arrays, self.max_batch_size, lambda: batch_major_outputs(self._signature(version))
        )

    def classify(
        self, examples: Sequence[Mapping[str, Any] | tf.train.Example], version: int | str | None = None
    ) -> list[list[tuple[str, float]]]:
        """For each example ({feature: value(s)} or a `tf.train.Example`), its (label, score) per class."""
        examples = [item if isinstance(item, tf.train.Example) else make_example(item) for item in examples]
        results = []
        for chunk in chunks(examples, self.max_batch_size):  # no examples: one empty request, which the server refuses
            request = classification_pb2.ClassificationRequest()
            self._fill_spec(request.model_spec, version, with_signature=True)
            request.input.example_list.examples.extend(chunk)
            response = self._call(self._predictions.Classify, request)
            results += [[(c.label, c.score) for c in item.classes] for item in response.result.classifications]
        return results

    def metadata(self, version: int | str | None = None) -> dict[str, dict]:
        """{signature name: SignatureDef as JSON}, the same form as the REST API's metadata."""
        request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
        self._fill_spec(request.model_spec, version)
        response = self._call(self._predictions.GetModelMetadata, request)
        signature_defs = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signature_defs)
        return json_format.MessageToDict(signature_defs, preserving_proto_field_name=True)["signature_def"]

    def status(self, version: int | str | None = None) -> dict[int, str]:
        """{version: state}, e.g. {2: "AVAILABLE", 1: "END"}."""
        request = get_model_status_pb2.GetModelStatusRequest()
        self._fill_spec(request.model_spec, version)
        response = self._call(self._models.GetModelStatus, request)
        return {
            entry.version: get_model_status_pb2.ModelVersionStatus.State.Name(entry.state)
            for entry in response.model_version_status
        }

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "GrpcClient":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _signature(self, version: int | str | None) -> dict:
        signatures = self.metadata(version)
        if self.signature_name not in signatures:
            raise ValueError(f"Model {self.model_name!r} has no signature {self.signature_name!r}: {sorted(signatures)}.")
        return signatures[self.signature_name]

    def _fill_spec(self, spec, version: int | str | None, with_signature: bool = False) -> None:
        spec.name = self.model_name
        if isinstance(version, str):
            spec.version_label = version
        elif version is not None:
            spec.version.value = version
        if with_signature:
            spec.signature_name = self.signature_name

    def _call(self, method: Callable, request):
        """`method(request)` with the deadline, retried with backoff while the answer is UNAVAILABLE."""
        attempt = 0
        while True:
            try:
                return method(request, timeout=self.timeout_s)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE or attempt >= self.retries:
                    raise
                delay = self.backoff_s * 2**attempt
                attempt += 1
                logger.info(
                    "%s UNAVAILABLE (%s); retry %d of %d in %.2f s.",
                    self.target, error.details(), attempt, self.retries, delay,
                )
                time.sleep(delay)


def one_line_error(error: grpc.RpcError, target: str, model_name: str) -> Exception:
    """A failed call as one line naming the server, the model and what to check: ConnectionError
    (OSError) when no server answered, ValueError when it refused the request."""
    code, details = error.code(), " ".join((error.details() or "").split())
    if code == grpc.StatusCode.UNAVAILABLE:
        return ConnectionError(
            f"No model server answers at {target} ({details}): check that it is running and that this is its "
            "gRPC port (--port, 8500 by default; --rest_api_port is the REST one)."
        )
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return ConnectionError(
            f"The model server at {target} did not answer in time: check that this is its gRPC port (--port, "
            "8500 by default) and that it is not overloaded."
        )
    if code == grpc.StatusCode.NOT_FOUND:
        return ValueError(
            f"Model {model_name!r} not found at {target} ({details}): check the model name, the server's "
            "--model_name or a name in its --model_config_file."
        )
    return ValueError(f"The model server at {target} refused a request for model {model_name!r}: {code.name}: {details}")
