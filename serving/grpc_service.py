"""The gRPC front end: TensorFlow Serving's `PredictionService` and `ModelService` over a `VersionedModel`.

Predict, Classify (see `serving.classification`), GetModelMetadata (`signature_def`) and
GetModelStatus are served. Regress, MultiInference and HandleReloadConfigRequest answer
UNIMPLEMENTED (the generated base classes do that). A failed request is answered with
its status (`serving.errors`) and logged; the server keeps serving.

Example:
    >>> server, port = build_grpc_server(model, "127.0.0.1", 0, ThreadPoolExecutor(8))  # doctest: +SKIP
    >>> server.start()                                                         # doctest: +SKIP
"""

from __future__ import annotations

import functools
import logging
import time
from concurrent import futures

import grpc
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from serving.classification import classify, examples_of
from serving.errors import ServingError
from serving.model_manager import VersionedModel
from serving.servable import DEFAULT_SIGNATURE

logger = logging.getLogger(__name__)

# As TensorFlow Serving does: no practical limit on message sizes (gRPC's default is 4 MiB).
MAX_MESSAGE_BYTES = 2**31 - 1
METADATA_FIELD = "signature_def"


def build_grpc_server(
    model: VersionedModel, host: str, port: int, executor: futures.ThreadPoolExecutor
) -> tuple[grpc.Server, int]:
    """A gRPC server (not started yet) for `model` on host:port (0: a free port), and the port it got.

    Requests run on `executor`'s threads; the caller shuts it down after stopping the server.
    """
    server = grpc.server(
        executor,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),  # a port already in use is an error, not a shared port
        ],
    )
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(PredictionService(model), server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelService(model), server)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:  # newer grpcio raises where older ones returned 0
        bound = 0
    if not bound:
        raise OSError(f"Cannot listen for gRPC on {address}: is the port in use?")
    return server, bound


def _answered(method):
    """Runs a servicer method; a failure becomes the gRPC status of the call, logged, never a crash."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        started = time.perf_counter()
        try:
            response = method(self, request)
        except ServingError as error:
            logger.info("%s %r failed: %s: %s", method.__name__, request.model_spec.name, error.code.name, error.message)
            context.abort(error.code, error.message)
        except Exception as error:  # a bug here must cost one request, not the server
            logger.exception("%s %r failed unexpectedly.", method.__name__, request.model_spec.name)
            context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
        logger.debug("%s %r in %.1f ms", method.__name__, request.model_spec.name, 1e3 * (time.perf_counter() - started))
        return response

    return wrapper


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`tensorflow.serving.PredictionService`: Predict, Classify and GetModelMetadata."""

    def __init__(self, model: VersionedModel):
        self.model = model

    @_answered
    def Predict(self, request: predict_pb2.PredictRequest) -> predict_pb2.PredictResponse:
        spec = request.model_spec
        servable = self.model.servable(spec.name, _version(spec))
        inputs = {key: _to_array(key, proto) for key, proto in request.inputs.items()}
        outputs = servable.predict(spec.signature_name, inputs, request.output_filter)
        response = predict_pb2.PredictResponse()
        _fill_spec(response.model_spec, spec.name, servable.version, spec.signature_name or DEFAULT_SIGNATURE)
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value))
        return response

    @_answered
    def Classify(self, request: classification_pb2.ClassificationRequest) -> classification_pb2.ClassificationResponse:
        spec = request.model_spec
        servable = self.model.servable(spec.name, _version(spec))
        results = classify(servable, spec.signature_name, examples_of(request.input))
        response = classification_pb2.ClassificationResponse()
        _fill_spec(response.model_spec, spec.name, servable.version, spec.signature_name or DEFAULT_SIGNATURE)
        for classes in results:
            entry = response.result.classifications.add()
            for label, score in classes:
                entry.classes.add(label=label, score=score)
        return response

    @_answered
    def GetModelMetadata(
        self, request: get_model_metadata_pb2.GetModelMetadataRequest
    ) -> get_model_metadata_pb2.GetModelMetadataResponse:
        if not request.metadata_field:
            raise ServingError.invalid_argument("GetModelMetadataRequest must specify at least one metadata_field.")
        for field in request.metadata_field:
            if field != METADATA_FIELD:
                raise ServingError.invalid_argument(f"Metadata field {field} is not supported (only {METADATA_FIELD}).")
        spec = request.model_spec
        servable = self.model.servable(spec.name, _version(spec))
        response = get_model_metadata_pb2.GetModelMetadataResponse()
        _fill_spec(response.model_spec, spec.name, servable.version)
        response.metadata[METADATA_FIELD].Pack(servable.signature_defs)
        return response


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    """`tensorflow.serving.ModelService`: GetModelStatus."""

    def __init__(self, model: VersionedModel):
        self.model = model

    @_answered
    def GetModelStatus(self, request):
        return self.model.status(request.model_spec.name, _version(request.model_spec))


def _version(model_spec) -> int | None:
    """The version a ModelSpec names (None: the latest)."""
    if model_spec.version_label:
        raise ServingError.invalid_argument(
            f"Unrecognized servable version label: {model_spec.version_label} (this server has no labels)."
        )
    return model_spec.version.value if model_spec.HasField("version") else None


def _to_array(key: str, proto) -> np.ndarray:
    if proto.dtype == types_pb2.DT_INVALID:
        raise ServingError.invalid_argument(f"Input {key}: the TensorProto has no dtype.")
    try:
        return tf.make_ndarray(proto)
    except Exception as error:  # make_ndarray raises TypeError, ValueError, ... for malformed protos
        raise ServingError.invalid_argument(f"Input {key}: malformed TensorProto: {error}") from None


def _fill_spec(spec, name: str, version: int, signature_name: str = "") -> None:
    spec.name = name
    spec.version.value = version
    spec.signature_name = signature_name
