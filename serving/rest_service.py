"""The REST front end: TensorFlow Serving's REST API on the standard library's HTTP server.

Routes (NAME: the model; `/versions/N` may be left out, meaning the latest version):
    POST /v1/models/NAME[/versions/N]:predict    row ("instances") or columnar ("inputs") format
    POST /v1/models/NAME[/versions/N]:classify   examples, as in `serving.classification`
    GET  /v1/models/NAME[/versions/N]            the model's status
    GET  /v1/models/NAME[/versions/N]/metadata   its `signature_def` metadata
The JSON formats are in `serving.rest_json`. A failure is answered `{"error": message}`
with TensorFlow Serving's HTTP status for its gRPC code (400, 404, 501 for `:regress`, ...).
Each connection gets a thread (`ThreadingHTTPServer`).

Example:
    >>> server = RestServer(model, "127.0.0.1", 0)                 # doctest: +SKIP
    >>> threading.Thread(target=server.serve_forever).start()      # doctest: +SKIP
    >>> # curl -d '{"instances": ["a fine day"]}' 127.0.0.1:PORT/v1/models/demo:predict
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import tensorflow as tf
from google.protobuf import json_format

from serving import rest_json
from serving.classification import classify
from serving.errors import ServingError, http_status
from serving.model_manager import VersionedModel

logger = logging.getLogger(__name__)

_ROUTE = re.compile(
    r"/v1/models/(?P<name>[^/:]+)"
    r"(?:/versions/(?P<version>[0-9]+)|/labels/(?P<label>[^/:]+))?"
    r"(?::(?P<verb>[a-z]+)|/(?P<metadata>metadata))?"
)


class RestServer(ThreadingHTTPServer):
    """TensorFlow Serving's REST API for `model` on host:port (0: a free port; see `.server_address`)."""

    daemon_threads = True  # stopping the server does not wait for idle keep-alive connections

    def __init__(self, model: VersionedModel, host: str, port: int):
        self.model = model
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bert-tf-serving"
    timeout = 60  # seconds a stalled connection may hold its thread

    def do_GET(self):
        self._answer("GET", body=None)

    def do_POST(self):
        # The body is read before anything else, so that an error cannot leave it unread
        # on a keep-alive connection.
        try:
            body = self.rfile.read(int(self.headers["Content-Length"]))
        except (TypeError, ValueError):
            self.close_connection = True
            self._send(411, {"error": "A POST needs a valid Content-Length header."})
            return
        self._answer("POST", body)

    def _answer(self, method: str, body: bytes | None) -> None:
        started = time.perf_counter()
        try:
            status, answer = 200, self._route(method, body)
        except ServingError as error:
            status, answer = http_status(error.code), {"error": error.message}
            logger.info("REST %s %s failed: %s: %s", method, self.path, error.code.name, error.message)
        except Exception as error:  # a bug here must cost one request, not the server
            logger.exception("REST %s %s failed unexpectedly.", method, self.path)
            status, answer = 500, {"error": f"{type(error).__name__}: {error}"}
        self._send(status, answer)
        logger.debug("REST %s %s -> %d in %.1f ms", method, self.path, status, 1e3 * (time.perf_counter() - started))

    def _route(self, method: str, body: bytes | None) -> dict:
        match = _ROUTE.fullmatch(urllib.parse.urlsplit(self.path).path)
        if match is None or (method == "GET") != (match["verb"] is None):
            raise ServingError.not_found(f"Malformed request: {method} {self.path}")
        if match["label"]:
            raise ServingError.invalid_argument(f"Unrecognized servable version label: {match['label']} (no labels here).")
        model: VersionedModel = self.server.model
        name = urllib.parse.unquote(match["name"])
        version = int(match["version"]) if match["version"] else None
        if method == "GET" and match["metadata"]:
            return self._metadata(model, name, version)
        if method == "GET":
            return json_format.MessageToDict(
                model.status(name, version), preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        with _bad_request():
            request = json.loads(body)
            signature_name = rest_json.signature_name_of(request)
        servable = model.servable(name, version)
        if match["verb"] == "predict":
            signature = servable.signature_def(signature_name)
            dtypes = {key: tf.dtypes.as_dtype(info.dtype) for key, info in signature.inputs.items()}
            with _bad_request():
                inputs, row_format = rest_json.decode_predict_request(request, dtypes)
            outputs = servable.predict(signature_name, inputs)
            with _bad_request():
                return rest_json.encode_predict_response(outputs, row_format)
        if match["verb"] == "classify":
            with _bad_request():
                examples = rest_json.decode_classify_request(request)
            return rest_json.encode_classify_response(classify(servable, signature_name, examples))
        if match["verb"] == "regress":
            raise ServingError(grpc.StatusCode.UNIMPLEMENTED, "Regress is not supported by this server.")
        raise ServingError.not_found(f"Malformed request: {method} {self.path}")

    @staticmethod
    def _metadata(model: VersionedModel, name: str, version: int | None) -> dict:
        servable = model.servable(name, version)
        return {
            "model_spec": {"name": name, "signature_name": "", "version": str(servable.version)},
            "metadata": {
                "signature_def": json_format.MessageToDict(servable.signature_defs, preserving_proto_field_name=True)
            },
        }

    def _send(self, status: int, answer: dict) -> None:
        data = json.dumps(answer).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):  # route http.server's access log to logging
        logger.debug("REST %s " + format, self.address_string(), *args)


@contextlib.contextmanager
def _bad_request():
    """Turns a malformed request body (`ValueError`, incl. JSON syntax errors) into INVALID_ARGUMENT."""
    try:
        yield
    except json.JSONDecodeError as error:
        raise ServingError.invalid_argument(f"JSON Parse error: {error}") from None
    except RecursionError:
        raise ServingError.invalid_argument("JSON Parse error: nested too deeply.") from None
    except ValueError as error:
        raise ServingError.invalid_argument(str(error)) from None
