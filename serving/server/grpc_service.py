"""The gRPC front end: TensorFlow Serving's `PredictionService` and `ModelService` over a `ModelManager`.

Predict, Classify (see `serving.classification`), GetModelMetadata (`signature_def`) and
GetModelStatus are served; a request's `model_spec` names the model and a version, a
version label, or neither (the highest version served). Regress, MultiInference and HandleReloadConfigRequest answer
UNIMPLEMENTED. A failed request is answered with its status (`serving.server.errors`) and logged in one line; the
server keeps serving.

A Predict request's tensors are checked from their metadata before any array is built
from them: dtype and shape against the signature (`Servable.check_inputs`: no negative
dimension, the batch within `--max_batch_size`), and the number of values sent (or the
bytes of `tensor_content`) must be what the claimed shape holds. TensorFlow Serving fills
a tensor that has fewer values with copies of the last one; this server refuses it
(INVALID_ARGUMENT), so a small message cannot make it allocate a large tensor. A message
larger than `grpc.max_receive_message_length` (`DEFAULT_CHANNEL_ARGUMENTS`: 64 MiB; the
`--grpc_channel_arguments` flag of `serving.server` changes it) is refused by gRPC (RESOURCE_EXHAUSTED).

Example:
    >>> server, port = build_grpc_server(model, "127.0.0.1", 0, ThreadPoolExecutor(8))  # doctest: +SKIP
    >>> server.start()                                                         # doctest: +SKIP
"""

from __future__ import annotations

import functools
import logging
import math
import time
from concurrent import futures
from typing import Mapping

import grpc
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2, types_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from serving.protocol import DEFAULT_SIGNATURE
from serving.server import monitoring
from serving.server.classify import classify, examples_of
from serving.server.errors import ServingError
from serving.server.model_manager import ModelManager

logger = logging.getLogger(__name__)

# Requests up to 64 MiB (TensorFlow Serving allows 2 GiB; gRPC's own default is 4 MiB); answers of any size.
DEFAULT_CHANNEL_ARGUMENTS = {
    "grpc.max_receive_message_length": 64 * 2**20,
    "grpc.max_send_message_length": 2**31 - 1,
    "grpc.so_reuseport": 0,  # a port already in use is an error, not a shared port
}
METADATA_FIELD = "signature_def"
MONITORED_APIS = ("Predict", "Classify")  # counted and timed, under these names, as TF Serving does

# The TensorProto field holding each dtype's values, and how many values make one element.
_VALUE_FIELDS = {
    types_pb2.DT_FLOAT: ("float_val", 1),
    types_pb2.DT_DOUBLE: ("double_val", 1),
    types_pb2.DT_HALF: ("half_val", 1),
    types_pb2.DT_BFLOAT16: ("half_val", 1),
    types_pb2.DT_INT8: ("int_val", 1),
    types_pb2.DT_INT16: ("int_val", 1),
    types_pb2.DT_INT32: ("int_val", 1),
    types_pb2.DT_UINT8: ("int_val", 1),
    types_pb2.DT_UINT16: ("int_val", 1),
    types_pb2.DT_INT64: ("int64_val", 1),
    types_pb2.DT_UINT32: ("uint32_val", 1),
    types_pb2.DT_UINT64: ("uint64_val", 1),
    types_pb2.DT_BOOL: ("bool_val", 1),
    types_pb2.DT_STRING: ("string_val", 1),
    types_pb2.DT_COMPLEX64: ("scomplex_val", 2),
    types_pb2.DT_COMPLEX128: ("dcomplex_val", 2),
}


def build_grpc_server(
    models: ModelManager,
    host: str,
    port: int,
    executor: futures.ThreadPoolExecutor,
    channel_arguments: Mapping[str, int | str] | None = None,
) -> tuple[grpc.Server, int]:
    """A gRPC server (not started yet) for `models` on host:port (0: a free port), and the port it got.

    Requests run on `executor`'s threads; the caller shuts it down after stopping the server.
    `channel_arguments` override `DEFAULT_CHANNEL_ARGUMENTS` (e.g. a larger
    "grpc.max_receive_message_length").
    """
    options = {**DEFAULT_CHANNEL_ARGUMENTS, **(channel_arguments or {})}
    server = grpc.server(executor, options=list(options.items()))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(PredictionService(models), server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelService(models), server)
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
        monitored = method.__name__ in MONITORED_APIS

        def record(status: str) -> None:
            if monitored:
                monitoring.record_request(request.model_spec.name, method.__name__, "GRPC", status,
                                          time.perf_counter() - started)

        try:
            response = method(self, request, context)
        except ServingError as error:
            logger.info("%s %r failed: %s: %s", method.__name__, request.model_spec.name, error.code.name, error.message)
            record(error.code.name)
            context.abort(error.code, error.message)
        except Exception as error:  # a bug here must cost one request, not the server
            logger.exception("%s %r failed unexpectedly.", method.__name__, request.model_spec.name)
            record("INTERNAL")
            context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
        record("OK")
        logger.debug("%s %r in %.1f ms", method.__name__, request.model_spec.name, 1e3 * (time.perf_counter() - started))
        return response

    return wrapper


def _unsupported(method_name: str):
    """A servicer method answering UNIMPLEMENTED, logged in one line (the generated one raises NotImplementedError,
    which gRPC logs with its traceback)."""

    def method(self, request, context):
        error = ServingError.unimplemented(method_name)
        logger.info("%s: %s", method_name, error.message)
        context.abort(error.code, error.message)

    method.__name__ = method_name
    return method


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`tensorflow.serving.PredictionService`: Predict, Classify and GetModelMetadata."""

    Regress = _unsupported("Regress")
    MultiInference = _unsupported("MultiInference")

    def __init__(self, models: ModelManager):
        self.models = models

    @_answered
    def Predict(self, request: predict_pb2.PredictRequest, context) -> predict_pb2.PredictResponse:
        spec = request.model_spec
        servable = self.models.servable(spec.name, *_version_choice(spec))
        # Checked from the protos' metadata before any array is built from them.
        claimed = {key: _claimed_dtype_and_shape(key, proto) for key, proto in request.inputs.items()}
        servable.check_inputs(spec.signature_name, claimed)
        for key, proto in request.inputs.items():
            _check_value_count(key, proto)
        inputs = {key: _to_array(key, proto) for key, proto in request.inputs.items()}
        remaining = context.time_remaining()  # None without a client deadline
        deadline = None if remaining is None else time.monotonic() + remaining
        outputs = servable.predict(spec.signature_name, inputs, request.output_filter, deadline)
        response = predict_pb2.PredictResponse()
        _fill_spec(response.model_spec, spec.name, servable.version, spec.signature_name or DEFAULT_SIGNATURE)
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value))
        return response

    @_answered
    def Classify(self, request: classification_pb2.ClassificationRequest, context
                 ) -> classification_pb2.ClassificationResponse:
        spec = request.model_spec
        servable = self.models.servable(spec.name, *_version_choice(spec))
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
        self, request: get_model_metadata_pb2.GetModelMetadataRequest, context
    ) -> get_model_metadata_pb2.GetModelMetadataResponse:
        if not request.metadata_field:
            raise ServingError.invalid_argument("GetModelMetadataRequest must specify at least one metadata_field.")
        for field in request.metadata_field:
            if field != METADATA_FIELD:
                raise ServingError.invalid_argument(f"Metadata field {field} is not supported (only {METADATA_FIELD}).")
        spec = request.model_spec
        servable = self.models.servable(spec.name, *_version_choice(spec))
        response = get_model_metadata_pb2.GetModelMetadataResponse()
        _fill_spec(response.model_spec, spec.name, servable.version)
        response.metadata[METADATA_FIELD].Pack(servable.signature_defs)
        return response


class ModelService(model_service_pb2_grpc.ModelServiceServicer):
    """`tensorflow.serving.ModelService`: GetModelStatus."""

    HandleReloadConfigRequest = _unsupported("HandleReloadConfigRequest")

    def __init__(self, models: ModelManager):
        self.models = models

    @_answered
    def GetModelStatus(self, request, context):
        return self.models.status(request.model_spec.name, *_version_choice(request.model_spec))


def _version_choice(model_spec) -> tuple[int | None, str | None]:
    """(version, version label) a ModelSpec names; (None, None): the highest version served."""
    choice = model_spec.WhichOneof("version_choice")
    if choice == "version_label":
        return None, model_spec.version_label
    return (model_spec.version.value if choice == "version" else None), None


def _claimed_dtype_and_shape(key: str, proto: tensor_pb2.TensorProto) -> tuple[tf.DType, list[int]]:
    """The dtype and shape a TensorProto claims, read from its metadata without building it."""
    if proto.dtype not in _VALUE_FIELDS:
        name = types_pb2.DataType.Name(proto.dtype) if proto.dtype in types_pb2.DataType.values() else proto.dtype
        raise ServingError.invalid_argument(f"Input {key}: a tensor of dtype {name} cannot be sent.")
    if proto.tensor_shape.unknown_rank:
        raise ServingError.invalid_argument(f"Input {key}: the TensorProto has no shape (unknown rank).")
    return tf.dtypes.as_dtype(proto.dtype), [dim.size for dim in proto.tensor_shape.dim]


def _check_value_count(key: str, proto: tensor_pb2.TensorProto) -> None:
    """INVALID_ARGUMENT unless the TensorProto holds exactly the elements of the shape it claims."""
    shape = [dim.size for dim in proto.tensor_shape.dim]
    elements = math.prod(shape)
    if proto.tensor_content:
        if proto.dtype == types_pb2.DT_STRING:
            raise ServingError.invalid_argument(f"Input {key}: strings go in string_val, not tensor_content.")
        sent, expected, unit = len(proto.tensor_content), elements * tf.dtypes.as_dtype(proto.dtype).size, "bytes"
    else:
        field, values_per_element = _VALUE_FIELDS[proto.dtype]
        sent, expected, unit = len(getattr(proto, field)), elements * values_per_element, "values"
    if sent != expected:
        raise ServingError.invalid_argument(
            f"Input {key} claims shape {shape} ({expected} {unit}) but holds {sent} {unit}; send every value "
            "(this server does not repeat the last value as TensorFlow Serving does)."
        )


def _to_array(key: str, proto) -> np.ndarray:
    try:
        return tf.make_ndarray(proto)
    except Exception as error:  # make_ndarray raises TypeError, ValueError, ... for malformed protos
        raise ServingError.invalid_argument(f"Input {key}: malformed TensorProto: {error}") from None


def _fill_spec(spec, name: str, version: int, signature_name: str = "") -> None:
    spec.name = name
    spec.version.value = version
    spec.signature_name = signature_name
