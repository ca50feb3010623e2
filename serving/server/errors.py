"""`ServingError`: a request that fails with a gRPC status, and the HTTP status REST gives it.

The server raises it wherever a request is wrong (INVALID_ARGUMENT), names something that
is not there (NOT_FOUND) or asks for something this server does not do (UNIMPLEMENTED).
The gRPC front end answers with `code`; the REST front end with `http_status(code)` and
`{"error": message}`, as TensorFlow Serving does.

Example:
    >>> error = ServingError.not_found("Servable not found for request: Latest(bert)")
    >>> error.code.name, http_status(error.code)
    ('NOT_FOUND', 404)
"""

from __future__ import annotations

import grpc

# TensorFlow Serving's mapping of gRPC codes to HTTP statuses (its REST handler does the same).
_HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}
# TensorFlow's own error codes (`tf.errors.OpError.error_code`) are the gRPC code numbers.
_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}
_NO_STACK_TRACES = "<stack traces unavailable>"


class ServingError(Exception):
    """A failed request: a gRPC status `code` and a message for the client."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def invalid_argument(cls, message: str) -> "ServingError":
        return cls(grpc.StatusCode.INVALID_ARGUMENT, message)

    @classmethod
    def not_found(cls, message: str) -> "ServingError":
        return cls(grpc.StatusCode.NOT_FOUND, message)

    @classmethod
    def unimplemented(cls, method: str) -> "ServingError":
        """A method of TensorFlow Serving's APIs that this server does not serve (Regress, ...)."""
        return cls(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not supported by this server.")

    @classmethod
    def from_tf_error(cls, error) -> "ServingError":
        """The status of a `tf.errors.OpError` raised while running the model (same code, its message)."""
        # Eager calls wrap the op's message in "Graph execution error: Detected at node ...
        # <stack traces unavailable>"; the client needs only the op's own message.
        message = error.message.split(_NO_STACK_TRACES, 1)[-1].strip()
        return cls(_BY_NUMBER.get(error.error_code, grpc.StatusCode.UNKNOWN), message)


def http_status(code: grpc.StatusCode) -> int:
    """The HTTP status TensorFlow Serving's REST API gives a gRPC status code."""
    return _HTTP_STATUS[code]
