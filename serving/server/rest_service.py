"""The REST front end: TensorFlow Serving's REST API, on an event loop and a pool of workers.

Routes (NAME: the model; `/versions/N` or `/labels/LABEL` may be left out, meaning the highest version served):
    POST /v1/models/NAME[/versions/N|/labels/LABEL]:predict    row ("instances") or columnar ("inputs") format
    POST /v1/models/NAME[/versions/N|/labels/LABEL]:classify   examples, as in `serving.classification`
    GET  /v1/models/NAME[/versions/N|/labels/LABEL]            the model's status
    GET  /v1/models/NAME[/versions/N|/labels/LABEL]/metadata   its `signature_def` metadata
    GET  the Prometheus path of `--monitoring_config_file`       TF Serving's metrics (`serving.server.monitoring`)
The JSON formats are in `serving.rest_json`. A failure is answered `{"error": message}`
with TensorFlow Serving's HTTP status for its gRPC code (400, 404, 501 for `:regress`, ...).

Connections (TensorFlow Serving's flags in brackets):
- One thread accepts connections (listen backlog `BACKLOG`) and reads every request as its
  bytes arrive, without blocking; only a request that has arrived whole (or that can be
  refused from its headers) goes to one of the `workers` threads
  [`--rest_api_num_threads` of them], which answer. So an idle, kept-alive or slow connection (one
  that stops in the middle of a request) holds no worker. At most `MAX_CONNECTIONS` are
  open: a connection past them closes the one that has waited longest for its request (idle,
  or still sending it), so idle connections cannot keep new ones out; only when every one is
  being answered do new ones wait in the backlog. (The standard library's `ThreadingHTTPServer`
  has a backlog of 5, a thread per connection, reading in that thread, and no limit on them.)
- Memory: requests received and not yet answered take at most `MAX_PENDING_BYTES` together (a
  request that would pass it is answered 503 and closed). Parsing a JSON body and decoding it
  into arrays makes up to about 33 bytes per byte of body, so a body first takes
  `JSON_COST_PER_BYTE` per byte from a budget of `decoding_budget(max_body_bytes)` (two of the
  largest bodies), waiting while the budget lacks it. The REST front end thus holds at most
  `MAX_PENDING_BYTES + decoding_budget(max_body_bytes)` for requests: 768 MiB with the defaults
  (answers are as large as the model's outputs, which this does not count).
- A request that has not arrived whole `timeout_s` seconds after its first byte
  [`--rest_api_timeout_in_ms`], or a connection idle that long between requests, is closed.
- Requests are framed by `serving.server.http_framing`, for the reading thread and the workers
  alike: empty lines before a request line are skipped; a head over its `MAX_HEAD_BYTES` is 431; the
  body is checked from its Content-Length before it is read: missing on a POST (or chunked) is
  411, negative or not a number is 400, over `max_body_bytes` is 413 [no TensorFlow Serving flag:
  `--rest_api_max_body_bytes` here]; whitespace before a header's colon is 400. Each refusal
  closes the connection.
- A client that asks `Expect: 100-continue` is told to continue by the reading thread once its
  headers pass those checks, and its body is read there too.

Example:
    >>> server = RestServer(models, "127.0.0.1", 0, ThreadPoolExecutor(8), 30.0, 2**25).start()  # doctest: +SKIP
    >>> # curl -d '{"instances": ["a fine day"]}' 127.0.0.1:PORT/v1/models/demo:predict  (PORT: server.port)
    >>> server.stop()                                            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import queue
import re
import selectors
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler

import tensorflow as tf
from google.protobuf import json_format

from serving import rest_json
from serving.server import monitoring
from serving.server.classify import classify
from serving.server.errors import ServingError, http_status
from serving.server.freed_memory import give_back_freed_memory
from serving.server.http_framing import Framing, Refusal, frame
from serving.server.memory_budget import MemoryBudget
from serving.server.model_manager import ModelManager
from serving.server.servable import Servable

logger = logging.getLogger(__name__)

BACKLOG = 1024  # connections the kernel queues before they are accepted (capped by net.core.somaxconn)
MAX_CONNECTIONS = 512
MAX_PENDING_BYTES = 128 * 2**20  # requests received and not yet answered, all connections together
# Memory that parsing and decoding a JSON body takes per byte of it, at most: measured 32 for instances of `[[]]`,
# 24 of "ab", 12 to 22 of token ids; with the body itself and the allocator's slack, 40.
JSON_COST_PER_BYTE = 40
LARGEST_BODIES_AT_ONCE = 2
# Once the bodies answered since the last time add up to this, the memory their decoding freed goes back to the
# system (`serving.server.freed_memory`), when no other body is being decoded.
GIVE_BACK_AFTER_BODY_BYTES = 2**20
REFUSED_BODY_DRAIN_S = 1.0  # after refusing a body, read and drop what the client still sends, so it sees the answer
MONITORED_APIS = {"predict": "Predict", "classify": "Classify"}  # REST verb -> TF Serving's API label
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4"  # Prometheus's text format
_ROUTE = re.compile(
    r"/v1/models/(?P<name>[^/:]+)"
    r"(?:/versions/(?P<version>[0-9]+)|/labels/(?P<label>[^/:]+))?"
    r"(?::(?P<verb>[a-z]+)|/(?P<metadata>metadata))?"
)


class RestServer:
    """TensorFlow Serving's REST API for `models` on host:port (0: a free port; see `.port`).

    The threads of `workers` answer requests (its owner shuts it down after `stop()`); `timeout_s` bounds a
    stalled or idle connection; bodies over `max_body_bytes` are refused (413). `start()` returns once it listens.
    """

    def __init__(
        self,
        models: ModelManager,
        host: str,
        port: int,
        workers: ThreadPoolExecutor,
        timeout_s: float,
        max_body_bytes: int,
        prometheus_path: str | None = None,
    ):
        self.models = models
        self.prometheus_path = prometheus_path
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=BACKLOG)
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._workers = workers
        self._selector = selectors.DefaultSelector()
        self._wakeup, self._wakeup_signal = socket.socketpair()
        self._wakeup_signal.setblocking(False)
        self._handed_back: queue.SimpleQueue[_Connection] = queue.SimpleQueue()
        self._open: set[_Connection] = set()  # every open connection (the event loop's thread only)
        # connection the event loop reads (idle, or its request arriving) -> when it is closed, oldest first
        self._watched: dict[_Connection, float] = {}
        self._busy: set[_Connection] = set()  # connections a worker is answering, guarded by _busy_changed
        self._busy_changed = threading.Condition()
        self._accepting = False
        self._accept_again_at = 0.0  # after an accept() error (e.g. no file descriptor left)
        self._pending_bytes = 0  # of the requests received and not yet answered (the event loop's thread only)
        self.decoding = MemoryBudget(decoding_budget(max_body_bytes))
        self._answered_bytes = 0  # of the bodies answered since freed memory was last given back
        self._answered_lock = threading.Lock()
        self._stopping = threading.Event()
        self._loop: threading.Thread | None = None

    def start(self) -> "RestServer":
        self._selector.register(self._wakeup, selectors.EVENT_READ)
        self._set_accepting(True)
        self._loop = threading.Thread(target=self._run_loop, name="rest-connections", daemon=True)
        self._loop.start()
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        """Stops accepting, closes idle connections, gives requests in flight `grace_s` seconds, then closes all."""
        self._stopping.set()
        if self._loop is not None:
            with contextlib.suppress(BlockingIOError):  # a full pipe already holds a wake-up
                self._wakeup_signal.send(b"\0")
            self._loop.join()
            self._loop = None
        with self._busy_changed:
            self._busy_changed.wait_for(lambda: not self._busy, timeout=grace_s)
            busy = list(self._busy)
        for connection in busy + list(self._open):
            connection.close()
        self._drain_handed_back()
        self._listener.close()
        self._selector.close()
        self._wakeup.close()
        self._wakeup_signal.close()

    def time_to_give_back(self, answered_body_bytes: int) -> bool:
        """Counts a body answered; True when the bodies answered since freed memory was last given back add up to
        `GIVE_BACK_AFTER_BODY_BYTES` and no body is being decoded (then the count starts again)."""
        with self._answered_lock:
            self._answered_bytes += answered_body_bytes
            if self._answered_bytes < GIVE_BACK_AFTER_BODY_BYTES or self.decoding.used:
                return False
            self._answered_bytes = 0
            return True

    # ----- the event loop's thread -------------------------------------------------

    def _run_loop(self) -> None:
        while not self._stopping.is_set():
            for key, _ in self._selector.select(timeout=1.0):
                if key.fileobj is self._listener:
                    self._accept()
                elif key.fileobj is self._wakeup:
                    self._wakeup.recv(4096)
                    self._take_back()
                else:
                    self._read(key.data)
            self._close_expired()
            room = len(self._open) < MAX_CONNECTIONS or bool(self._watched)  # a watched connection can make room
            self._set_accepting(room and time.monotonic() >= self._accept_again_at)

    def _accept(self) -> None:
        while len(self._open) < MAX_CONNECTIONS or self._watched:
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as error:  # e.g. out of file descriptors: the rest wait in the backlog
                logger.warning("REST: cannot accept a connection (retried in 1 s): %s", error)
                self._accept_again_at = time.monotonic() + 1.0
                return
            try:
                connection = _Connection(sock, address, self)
            except OSError:  # reset before it was set up
                sock.close()
                continue
            self._open.add(connection)
            self._watch(connection)
            if len(self._open) > MAX_CONNECTIONS:  # the connection that has waited longest makes room
                self._forget(next(iter(self._watched)))

    def _watch(self, connection: "_Connection") -> None:
        self._watched[connection] = time.monotonic() + self.timeout_s
        self._selector.register(connection.sock, selectors.EVENT_READ, connection)

    def _read(self, connection: "_Connection") -> None:
        """Reads what `connection` has sent; hands it to a worker once its request can be answered."""
        was_waiting = not connection.pending
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data and was_waiting:  # the client closed between requests
            self._forget(connection)
            return
        if data and self._pending_bytes + len(data) > MAX_PENDING_BYTES:
            logger.warning("REST: %d MiB of requests are arriving at once; refusing one from %s (503).",
                           MAX_PENDING_BYTES >> 20, connection.address)
            connection.refuse_busy()
            self._forget(connection)
            return
        connection.pending += data
        framing = connection.framing()
        self._count(connection)
        if was_waiting and connection.pending:  # a new request: its time starts now
            del self._watched[connection]
            self._watched[connection] = time.monotonic() + self.timeout_s
        if framing.expects_continue and not connection.continued:
            connection.continue_now()
        if framing.complete or not data:  # at the end of input, the worker answers what there is
            self._dispatch(connection)

    def _dispatch(self, connection: "_Connection") -> None:
        self._selector.unregister(connection.sock)
        del self._watched[connection]
        with self._busy_changed:
            self._busy.add(connection)
        self._workers.submit(self._answer_requests, connection)

    def _forget(self, connection: "_Connection") -> None:
        self._selector.unregister(connection.sock)
        del self._watched[connection]
        self._open.discard(connection)
        connection.close()
        self._count(connection)

    def _count(self, connection: "_Connection") -> None:
        """Counts in `_pending_bytes` what `connection` holds now: its bytes not yet answered (none once closed)."""
        held = 0 if connection.closed else len(connection.pending)
        self._pending_bytes += held - connection.counted_bytes
        connection.counted_bytes = held

    def _take_back(self) -> None:
        while True:
            try:
                connection = self._handed_back.get_nowait()
            except queue.Empty:
                return
            self._count(connection)  # what is left: the start of its next request, if any
            if connection.closed:
                self._open.discard(connection)
            else:
                self._watch(connection)

    def _close_expired(self) -> None:
        now = time.monotonic()
        while self._watched:  # in the order they began to wait, so in the order of their deadlines
            connection, deadline = next(iter(self._watched.items()))
            if deadline > now:
                return
            self._forget(connection)

    def _set_accepting(self, accepting: bool) -> None:
        if accepting != self._accepting:
            if accepting:
                self._selector.register(self._listener, selectors.EVENT_READ)
            else:
                self._selector.unregister(self._listener)
            self._accepting = accepting

    def _drain_handed_back(self) -> None:
        while True:
            try:
                self._handed_back.get_nowait().close()
            except queue.Empty:
                return

    # ----- the workers ---------------------------------------------------------------

    def _answer_requests(self, connection: "_Connection") -> None:
        """Answers one request of `connection`, then hands it back to the event loop, or, when its next
        request is here whole already, queues it behind the other connections' (so that a fast client
        cannot keep a worker to itself)."""
        try:
            keep_open = connection.answer_one_request()
        except Exception as error:  # a reset connection, or a bug: it costs this connection only
            logger.debug("REST connection %s closed: %r", connection.address, error)
            connection.close()
            keep_open = False
        if keep_open and connection.has_whole_request() and not self._stopping.is_set():
            with contextlib.suppress(RuntimeError):  # the workers have just shut down: hand it back instead
                self._workers.submit(self._answer_requests, connection)
                return
        if self._stopping.is_set():
            connection.close()
        with self._busy_changed:
            self._busy.discard(connection)
            self._busy_changed.notify_all()
        self._handed_back.put(connection)
        with contextlib.suppress(OSError):  # the event loop has stopped: stop() closes what is left
            self._wakeup_signal.send(b"\0")


def decoding_budget(max_body_bytes: int) -> int:
    """The memory that REST bodies being parsed and decoded may take at once: that of the largest bodies."""
    return LARGEST_BODIES_AT_ONCE * JSON_COST_PER_BYTE * max_body_bytes


class _Connection:
    """One client connection and its request handler (set up once, for all its requests)."""

    def __init__(self, sock: socket.socket, address, server: RestServer):
        self.sock, self.address = sock, address
        self.max_body_bytes = server.max_body_bytes
        self.closed = False
        self.pending = bytearray()  # received and not yet read by the handler
        self.counted_bytes = 0  # of `pending`, as `RestServer._pending_bytes` counts them
        self.continued = False  # "100 Continue" was sent for the request in `pending`
        self.handler = _Handler(sock, address, server, _PendingReader(self))
        sock.setblocking(False)  # the event loop reads; the handler's `setup()` had set a timeout

    def framing(self) -> Framing:
        """How the request at the start of `pending` is framed (the empty lines before it dropped)."""
        return frame(self.pending, self.max_body_bytes)

    def answer_one_request(self) -> bool:
        """Answers the request in `pending`; False (and the connection closed) if it is to be closed."""
        self.handler.close_connection = True  # unless the request keeps it open
        self.handler.refused_body = False
        self.handler.framing = self.framing()
        self.sock.settimeout(self.handler.timeout)  # for writing the answer
        try:
            self.handler.handle_one_request()
        finally:
            self.continued = False
            if not self.closed:
                self.sock.setblocking(False)
        if self.handler.close_connection:
            self.close(drain_s=REFUSED_BODY_DRAIN_S if self.handler.refused_body else 0.0)
        return not self.closed

    def has_whole_request(self) -> bool:
        """Whether the next request has arrived whole (or can be refused from its headers) already."""
        return self.framing().complete

    def continue_now(self) -> None:
        """Tells the client to send its body (`Expect: 100-continue`); the handler then says nothing more."""
        self.continued = True
        with contextlib.suppress(OSError):  # a few bytes into an empty send buffer; a gone client is read as such
            self.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")

    def refuse_busy(self) -> None:
        """503 for a request that does not fit `MAX_PENDING_BYTES`, written without waiting."""
        body = json.dumps({"error": "The server is reading too many requests at once; try again."}).encode()
        with contextlib.suppress(OSError):
            self.sock.send(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                           b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def close(self, drain_s: float = 0.0) -> None:
        """Closes the connection; with `drain_s`, first reads and drops input for up to that long.

        Closing with unread input resets the connection, and a client still sending a refused
        body would lose the answer; draining lets it read the answer first.
        """
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):  # the client may be gone already
            self.sock.shutdown(socket.SHUT_WR if drain_s else socket.SHUT_RDWR)
            deadline = time.monotonic() + drain_s
            while (left := deadline - time.monotonic()) > 0:
                self.sock.settimeout(left)
                if not self.sock.recv(65536):
                    break
        self.sock.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The version of an answer to a request line that cannot be read: Python's HTTP/0.9 default sends no status line.
    default_request_version = "HTTP/1.0"
    server_version = "bert-tf-serving"
    disable_nagle_algorithm = True  # headers and body are two writes: do not hold the second one back
    refused_body = False  # set when the request's body was refused unread (see `_Connection.close`)
    framing: Framing  # the request's, set by `_Connection` before each request

    def __init__(self, sock: socket.socket, address, server: RestServer, rfile: "_PendingReader"):
        # socketserver's handlers answer a whole connection in __init__; this one is set up
        # once and answers one request per `handle_one_request()` (see `_Connection`), reading
        # it from what the event loop has received.
        self.request, self.client_address, self.server = sock, address, server
        self.timeout = server.timeout_s
        self.setup()
        self.rfile.close()  # the socket's own reader: it would keep the socket open after close()
        self.rfile = rfile

    def send_error(self, code, message=None, explain=None):
        """An error found while reading the request line or headers, answered as every other error is: JSON
        {"error": ...} with a status line (Python's own answer is an HTML page)."""
        self.log_error("code %d, message %s", code, message)
        body = json.dumps({"error": message or self.responses.get(code, ("Error",))[0]}).encode()
        self.close_connection = True
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer("GET")

    def do_POST(self):
        self._answer("POST")

    def handle_expect_100(self):
        """Refuses a body before the client sends it (curl asks first for bodies over 1 MB); the event loop
        has said "100 Continue" already to a body it then read."""
        if self.framing.refusal is not None:
            self._refuse(self.framing.refusal)
            return False
        return True

    def _refuse(self, refusal: Refusal) -> None:
        logger.info("REST %s %s refused: %d %s", self.command, self.path, refusal.status, refusal.message)
        self.close_connection = self.refused_body = True  # the body, if any, is not read
        self._send(refusal.status, {"error": refusal.message})

    def _answer(self, method: str) -> None:
        started = time.perf_counter()
        refusal, length = self.framing.refusal, self.framing.body_length
        body = b"" if refusal else self.rfile.read(length)
        if refusal is None and len(body) < length:
            refusal = Refusal(400, f"The body ended after {len(body)} of its {length} bytes (Content-Length).")
        if refusal is not None:
            self._refuse(refusal)
            return
        path = urllib.parse.urlsplit(self.path).path
        if method == "GET" and path == self.server.prometheus_path:
            self._send_text(200, monitoring.REGISTRY.page(), PROMETHEUS_CONTENT_TYPE)
            return
        with self.server.decoding.taken(JSON_COST_PER_BYTE * len(body)):
            code = "OK"
            try:
                status, answer = 200, self._route(method, body)
            except ServingError as error:
                status, answer, code = http_status(error.code), {"error": error.message}, error.code.name
                logger.info("REST %s %s failed: %s: %s", method, self.path, error.code.name, error.message)
            except Exception as error:  # a bug here must cost one request, not the server
                logger.exception("REST %s %s failed unexpectedly.", method, self.path)
                status, answer, code = 500, {"error": f"{type(error).__name__}: {error}"}, "INTERNAL"
        self._send(status, answer)
        answered_bytes = len(body)
        del body, answer  # theirs too
        if self.server.time_to_give_back(answered_bytes):
            give_back_freed_memory()
        route = _ROUTE.fullmatch(path)
        if method == "POST" and route is not None and route["verb"] in MONITORED_APIS:
            monitoring.record_request(urllib.parse.unquote(route["name"]), MONITORED_APIS[route["verb"]], "REST", code,
                                      time.perf_counter() - started)
        logger.debug("REST %s %s -> %d in %.1f ms", method, self.path, status, 1e3 * (time.perf_counter() - started))

    def _route(self, method: str, body: bytes) -> dict:
        match = _ROUTE.fullmatch(urllib.parse.urlsplit(self.path).path)
        if match is None or (method == "GET") != (match["verb"] is None):
            raise ServingError.not_found(f"Malformed request: {method} {self.path}")
        models: ModelManager = self.server.models
        name = urllib.parse.unquote(match["name"])
        version = int(match["version"]) if match["version"] else None
        label = urllib.parse.unquote(match["label"]) if match["label"] else None
        if method == "GET" and match["metadata"]:
            return self._metadata(models.servable(name, version, label), name)
        if method == "GET":
            return json_format.MessageToDict(
                models.status(name, version, label), preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
            )
        with _bad_request():
            request = json.loads(body)
            signature_name = rest_json.signature_name_of(request)
        servable = models.servable(name, version, label)
        if match["verb"] == "predict":
            signature = servable.signature_def(signature_name)
            instances = request.get("instances")
            sent = request.get("inputs", instances[0] if isinstance(instances, list) and instances else None)
            # Inputs with a default (SignatureDef `defaults`) that the request leaves out are filled by `predict`.
            left_out = set(signature.defaults) - (set(sent) if isinstance(sent, dict) else set())
            dtypes = {key: tf.dtypes.as_dtype(info.dtype) for key, info in signature.inputs.items()
                      if key not in left_out}
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
            raise ServingError.unimplemented("Regress")
        raise ServingError.not_found(f"Malformed request: {method} {self.path}")

    @staticmethod
    def _metadata(servable: Servable, name: str) -> dict:
        return {
            "model_spec": {"name": name, "signature_name": "", "version": str(servable.version)},
            "metadata": {
                "signature_def": json_format.MessageToDict(servable.signature_defs, preserving_proto_field_name=True)
            },
        }

    def _send(self, status: int, answer: dict) -> None:
        self._send_text(status, json.dumps(answer), "application/json")

    def _send_text(self, status: int, text: str, content_type: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):  # route http.server's access log to logging
        logger.debug("REST %s " + format, self.address_string(), *args)


class _PendingReader(io.RawIOBase):
    """The handler's `rfile`: the bytes of `connection.pending`, consumed as read; no more at their end."""

    def __init__(self, connection: _Connection):
        self.connection = connection

    def readable(self) -> bool:
        return True

    def readline(self, size: int = -1) -> bytes:
        pending = self.connection.pending
        end = pending.find(b"\n") + 1 or len(pending)
        return self.read(end if size < 0 else min(end, size))

    def read(self, size: int = -1) -> bytes:
        pending = self.connection.pending
        size = len(pending) if size is None or size < 0 else size
        data = bytes(pending[:size])
        del pending[:size]
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


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
