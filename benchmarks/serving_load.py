"""Load test of the development model server (serving/) against the direct call of the same SavedModel.

    python -m benchmarks.serving_load                      # builds and serves the tiny demo model
    python -m benchmarks.serving_load --model_base_path /models/bert --model_name bert
    python -m benchmarks.serving_load --model_base_path models/sst2 --model_name sst2 \
        --sentences ../shared/data/sst2/dev.tsv --clients 1 8 64 --modes grpc-kept rest-kept --enable_batching
    python -m benchmarks.serving_load --preset base --quantize int8 --sentences ../shared/data/sst2/dev.tsv \
        --clients 1 8 64 --modes grpc-kept rest-kept --enable_batching \
        --batching_parameters_file serving/batching_parameters.txt

The server runs in a child process (its own interpreter and GIL, as a real server would)
on free 127.0.0.1 ports and is stopped at the end; the clients are threads of this
process. Each row sends `--requests` requests from 8 or 64 concurrent clients
(`--clients`) over REST or gRPC, with a new connection per request (REST: a TCP connection
sent `Connection: close`; gRPC: a new channel) or with kept-alive connections (one per
client, opened before the timing starts). Every gRPC channel has its own TCP connection
(a local subchannel pool), as separate client processes would. The `inprocess-kept` rows call the
server's servable (and batcher) from the client threads of this process, without a network: what
serving costs besides the front ends. The reference row calls
`tf.saved_model.load(...).signatures[...]` in this process, one call after another, with
the same inputs. Rows run interleaved in `--rounds` rounds, so the machine's drift touches
them alike: compare ratios within one run, not across runs.

Inputs are made from the signature's metadata: strings are short sentences, integers are 0
or 1, floats uniform in [0, 1); the batch dimension is `--batch_size`, any other unknown
dimension `--seq_len`. With `--sentences FILE` (e.g. SST-2's dev.tsv: its first column), each
request is one real sentence of the file instead (a raw-text signature, input `text`), request i
the i-th sentence (cycling), its answer compared with that sentence sent alone (≤ 1e-5, or the
same label with `--same_label`, for int8); the reference row is then the in-process call on
batches of `--reference_batch` (32) sentences, rates in sentences/s. `--enable_batching` and
`--batching_parameters_file` are the server's request batching (`serving/server/batching.py`);
`--model_base_path` may hold a TFLite version (`model.tflite`), which the reference then runs.
`--preset P --quantize Q` serves instead `cpu_serving`'s seeded random classifier of preset P
exported with `quantize=Q` (bf16 and int8 answers checked by label: their sums depend on the
batch's shape), its section named by preset, quantization, batching and
`--tensorflow_intra_op_parallelism`, so that the runs of one model stand side by side; with
batching and sentences, the section checks the target of 64 clients (≥ 0.8× the direct call's
sentences/s, p99 ≤ batch_timeout + 2 direct calls, no errors). Every answer is compared with the
direct call's outputs (a different one counts as an error), every request has a deadline (`--timeout_s`, 30 s;
REST: a socket timeout), and the timed part stops at `--max_seconds`. CPU time per request is read from
/proc (Linux). The section `serving_load` of benchmarks/RESULTS.md (and
results/serving_load.json) is replaced on each run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import http.client
import json
import multiprocessing
import os
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import grpc
import numpy as np

NAME = "serving_load"  # its RESULTS.md section and results/NAME.json
MODES = ("rest-new", "rest-kept", "grpc-new", "grpc-kept", "inprocess-kept")
MODE_NAMES = {"rest": "REST", "grpc": "gRPC", "new": "new per request", "kept": "kept alive",
              "inprocess": "in process (the server's servable and batcher, no network)"}
REQUEST_TIMEOUT_S = 30.0
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


class WrongAnswer(Exception):
    """The server answered, but not what the direct call gives."""


def _serve(model_name: str, base_path: str, grpc_threads: int, rest_threads: int, batching: tuple, intra_op: int,
           ready, stop) -> None:
    """Child process: serves the model until `stop` is set; reports (gRPC port, REST port) on `ready`.
    `batching`: (`--enable_batching`, `--batching_parameters_file`); `intra_op`: the server's
    `--tensorflow_intra_op_parallelism`."""
    from serving.server.model_server import ModelServer, batching_parameters, set_tensorflow_threads

    set_tensorflow_threads(intra_op, 0)
    with ModelServer(
        model_name, base_path, poll_wait_s=0, grpc_max_threads=grpc_threads, rest_num_threads=rest_threads,
        batching=batching_parameters(*batching),
    ) as server:
        ready.put((server.grpc_port, server.rest_port))
        stop.wait()


def _wait_for_ports(process, ready, timeout_s: float = 180) -> tuple[int, int]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return ready.get(timeout=1)
        except queue.Empty:
            if not process.is_alive():
                raise SystemExit(f"serving_load: the server process exited (code {process.exitcode}).") from None
            if time.monotonic() > deadline:
                raise SystemExit(f"serving_load: the server did not start within {timeout_s:.0f} s.") from None


def synthetic_inputs(signature_def: dict, batch_size: int, seq_len: int) -> dict[str, np.ndarray]:
    """Inputs that fit a SignatureDef (as JSON): see the module docstring."""
    rng = np.random.default_rng(0)
    words = ["the", "model", "serves", "a", "fine", "day", "of", "requests"]
    inputs = {}
    for name, info in signature_def["inputs"].items():
        dims = [int(dim.get("size", -1)) for dim in info.get("tensor_shape", {}).get("dim", [])]
        shape = [size if size != -1 else (batch_size if index == 0 else seq_len) for index, size in enumerate(dims)]
        dtype = info["dtype"]
        if dtype == "DT_STRING":
            sentences = [" ".join(rng.choice(words, 6)).encode() for _ in range(int(np.prod(shape)))]
            inputs[name] = np.array(sentences, dtype=object).reshape(shape)
        elif dtype.startswith("DT_INT"):
            inputs[name] = rng.integers(0, 2, shape).astype(np.int64 if dtype == "DT_INT64" else np.int32)
        elif dtype in ("DT_FLOAT", "DT_DOUBLE"):
            inputs[name] = rng.random(shape).astype(np.float32 if dtype == "DT_FLOAT" else np.float64)
        else:
            raise SystemExit(f"serving_load: cannot make inputs of dtype {dtype} (input {name}).")
    return inputs


def _same_outputs(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], same_label: bool = False) -> bool:
    """Equal strings, floats within 1e-5; with `same_label`, only the same argmax of each float output."""
    if set(got) != set(expected):
        return False
    for name, value in expected.items():
        if value.dtype == object:
            if not np.array_equal(got[name], value):
                return False
        elif same_label and np.issubdtype(value.dtype, np.floating):
            if not np.array_equal(np.argmax(got[name], axis=-1), np.argmax(value, axis=-1)):
                return False
        elif not np.allclose(got[name], value, rtol=0, atol=1e-5):
            return False
    return True


def read_sentences(path: Path, limit: int) -> list[str]:
    """The first column of a TSV file with a header (SST-2's dev.tsv), or the lines of a text file."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix == ".tsv":
        lines = [line.split("\t")[0] for line in lines[1:]]
    return lines[:limit]


class RestTransport:
    """Predict requests over HTTP/1.1, request i with `bodies[i % len(bodies)]` (encoded once); `check(i, answer)`
    raises WrongAnswer for a wrong one; each request is given `timeout_s` seconds."""

    def __init__(self, port: int, model_name: str, bodies: list[bytes], check: Callable[[int, dict], None],
                 timeout_s: float = REQUEST_TIMEOUT_S):
        self.port = port
        self.path = f"/v1/models/{model_name}:predict"
        self.bodies, self.check, self.timeout_s = bodies, check, timeout_s

    def connect(self) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout_s)
        connection.connect()
        return connection

    def call(self, connection: http.client.HTTPConnection, keep_alive: bool, index: int = 0) -> dict:
        headers = {"Content-Type": "application/json", **({} if keep_alive else {"Connection": "close"})}
        connection.request("POST", self.path, self.bodies[index % len(self.bodies)], headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status != 200:
            raise WrongAnswer(f"HTTP {response.status}: {payload[:200]!r}")
        answer = json.loads(payload)
        self.check(index, answer)
        return answer

    @staticmethod
    def close(connection: http.client.HTTPConnection) -> None:
        connection.close()


class GrpcTransport:
    """Predict calls, request i the message `requests[i % len(requests)]`; `check(i, response)` as RestTransport's."""

    def __init__(self, target: str, requests: list, check: Callable[[int, object], None],
                 timeout_s: float = REQUEST_TIMEOUT_S):
        from tensorflow_serving.apis import prediction_service_pb2_grpc

        self.target = target
        self.requests, self.check, self.timeout_s = requests, check, timeout_s
        self._stub = prediction_service_pb2_grpc.PredictionServiceStub

    def connect(self) -> tuple[grpc.Channel, Callable]:
        channel = grpc.insecure_channel(self.target, options=OWN_CONNECTION)
        return channel, self._stub(channel).Predict

    def call(self, connection: tuple[grpc.Channel, Callable], keep_alive: bool, index: int = 0):
        response = connection[1](self.requests[index % len(self.requests)], timeout=self.timeout_s)
        self.check(index, response)
        return response

    @staticmethod
    def close(connection: tuple[grpc.Channel, Callable]) -> None:
        connection[0].close()


class InProcessTransport:
    """The server's servable (and batcher, with --enable_batching) in this process, called by the client threads
    directly: what the server costs besides its network front ends. `check(i, outputs)` as RestTransport's."""

    def __init__(self, servable, signature_name: str, inputs: list[dict], check: Callable[[int, dict], None]):
        self.servable, self.signature_name = servable, signature_name
        self.inputs, self.check = inputs, check

    def connect(self):
        return self.servable  # every client calls the one servable

    def call(self, connection, keep_alive: bool, index: int = 0) -> dict:
        answer = connection.predict(self.signature_name, self.inputs[index % len(self.inputs)])
        self.check(index, answer)
        return answer

    @staticmethod
    def close(connection) -> None:
        pass


def _describe(error: Exception) -> str:
    if isinstance(error, grpc.RpcError):
        return f"{error.code().name}: {error.details()}"
    return f"{type(error).__name__}: {error}"


def _process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Row:
    """One line of the table: how requests are sent, and what the rounds measured."""

    transport: str  # "direct", "rest" or "grpc"
    connections: str  # "new" or "kept" ("" for the direct call)
    clients: int
    per_call: int = 1  # requests (sentences) one call answers: the direct call on batches
    latencies: list[float] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    round_requests: list[int] = dataclasses.field(default_factory=list)
    round_seconds: list[float] = dataclasses.field(default_factory=list)
    client_cpu_s: float = 0.0
    server_cpu_s: float = 0.0

    @property
    def label(self) -> str:
        if self.transport == "direct":
            return "direct call (in process)" + (f", batches of {self.per_call}" if self.per_call > 1 else "")
        if self.transport == "inprocess":
            return f"{MODE_NAMES[self.transport]}, {self.clients} clients"
        return f"{MODE_NAMES[self.transport]}, {MODE_NAMES[self.connections]}, {self.clients} clients"

    @property
    def requests(self) -> int:
        """Requests sent, answered or not."""
        return sum(self.round_requests)

    @property
    def requests_per_s(self) -> float:
        """Requests answered per second of the rounds."""
        answered = len(self.latencies) * self.per_call
        return answered / sum(self.round_seconds) if self.round_seconds else float("nan")

    def percentile_ms(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) * 1e3 if self.latencies else float("nan")

    @property
    def mean_ms(self) -> float:
        return float(np.mean(self.latencies)) * 1e3 if self.latencies else float("nan")

    def summary(self) -> dict:
        return {
            "label": self.label, "transport": self.transport, "connections": self.connections, "clients": self.clients,
            "requests": self.requests, "errors": len(self.errors), "first_errors": self.errors[:5],
            "requests_per_s": self.requests_per_s, "p50_ms": self.percentile_ms(50), "p99_ms": self.percentile_ms(99),
            "mean_ms": self.mean_ms,
            "round_requests": self.round_requests, "round_seconds": self.round_seconds,
            "client_cpu_s": self.client_cpu_s, "server_cpu_s": self.server_cpu_s,
        }


class Tickets:
    """Hands out `count` requests to the client threads until `deadline` (time.monotonic): each a request index,
    counting on from `first`."""

    def __init__(self, count: int, deadline: float, first: int = 0):
        self.left = count
        self.deadline = deadline
        self.next = first
        self._lock = threading.Lock()

    def take(self) -> int | None:
        with self._lock:
            if self.left <= 0 or time.monotonic() > self.deadline:
                return None
            self.left -= 1
            self.next += 1
            return self.next - 1


def server_round(row: Row, transport, count: int, deadline: float, server_pid: int) -> None:
    """`count` requests from `row.clients` threads; adds latencies, errors, wall and CPU seconds to `row`."""
    keep_alive = row.connections == "kept"
    tickets, start = Tickets(count, deadline, row.requests), threading.Barrier(row.clients + 1)
    kept: list = []

    def client() -> None:
        connection = None
        if keep_alive:
            try:
                connection = transport.connect()
                if isinstance(transport, GrpcTransport):
                    grpc.channel_ready_future(connection[0]).result(timeout=transport.timeout_s)
                kept.append(connection)
            except Exception as error:  # counted; this client sends nothing
                row.errors.append(f"connect: {_describe(error)}")
        start.wait()
        if keep_alive and connection is None:
            return
        while (index := tickets.take()) is not None:
            began = time.perf_counter()
            try:
                if keep_alive:
                    transport.call(connection, keep_alive=True, index=index)
                else:
                    fresh = transport.connect()
                    try:
                        transport.call(fresh, keep_alive=False, index=index)
                    finally:
                        transport.close(fresh)
            except Exception as error:  # any failure of the request is an error of the row
                row.errors.append(_describe(error))
                continue
            row.latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(row.clients)]
    for thread in threads:
        thread.start()
    start.wait()
    client_cpu, server_cpu, began = time.process_time(), _process_cpu_seconds(server_pid), time.perf_counter()
    for thread in threads:
        thread.join()
    row.round_seconds.append(time.perf_counter() - began)
    row.client_cpu_s += time.process_time() - client_cpu
    row.server_cpu_s += _process_cpu_seconds(server_pid) - server_cpu
    row.round_requests.append(count - tickets.left)
    for connection in kept:
        transport.close(connection)


def direct_round(row: Row, call: Callable[[int], object], count: int, deadline: float) -> None:
    """Direct calls for `count` requests (`row.per_call` each), one after another, timed as `server_round` times
    its requests; `call(i)` makes the i-th call."""
    client_cpu, began = time.process_time(), time.perf_counter()
    done = 0
    while done < count and time.monotonic() <= deadline:
        started = time.perf_counter()
        call(len(row.latencies))
        row.latencies.append(time.perf_counter() - started)
        done += row.per_call
    row.round_seconds.append(time.perf_counter() - began)
    row.client_cpu_s += time.process_time() - client_cpu
    row.round_requests.append(done)


def load_test(args, base_path: Path, grpc_port: int, rest_port: int, server_pid: int) -> list[Row]:
    """Warms up, checks that both transports answer as the direct call does, then runs the interleaved rounds."""
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2
    from tensorflow_serving.apis import predict_pb2

    from serving import rest_json
    from serving.client.grpc_client import GrpcClient
    from serving.server.model_server import batching_parameters
    from serving.server.servable import load_servable

    target = f"127.0.0.1:{grpc_port}"
    with GrpcClient(target, model_name=args.model_name, signature_name=args.signature_name, timeout_s=30) as client:
        signatures = client.metadata()
    if args.signature_name not in signatures:
        raise SystemExit(f"serving_load: no signature {args.signature_name!r}; the model has {sorted(signatures)}.")
    signature_def = signatures[args.signature_name]
    version = max((p for p in base_path.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    local = load_servable(version, int(version.name))  # what the server runs, in this process

    def direct(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return local.predict(args.signature_name, inputs)

    if args.sentences:
        if sorted(signature_def["inputs"]) != ["text"]:
            raise SystemExit(f"serving_load: --sentences needs a raw-text signature (input `text`); "
                             f"{args.signature_name!r} takes {sorted(signature_def['inputs'])}.")
        sentences = [text.encode() for text in read_sentences(Path(args.sentences), args.sentence_count)]
        request_inputs = [{"text": np.array([text], dtype=object)} for text in sentences]
        size = args.reference_batch
        batches = [{"text": np.array(sentences[start:start + size], dtype=object)}
                   for start in range(0, len(sentences), size)]
        direct_row = Row("direct", "", 1, per_call=size)

        def direct_call(index: int):
            return direct(batches[index % len(batches)])
    else:
        request_inputs = [synthetic_inputs(signature_def, args.batch_size, args.seq_len)]
        direct_row = Row("direct", "", 1)

        def direct_call(index: int):
            return direct(request_inputs[0])
    expected = [direct(inputs) for inputs in request_inputs]  # each request alone

    output_dtypes = {
        name: tf.dtypes.as_dtype(types_pb2.DataType.Value(info["dtype"]))
        for name, info in signature_def["outputs"].items()
    }

    def checker(decode):
        def check(index: int, answer) -> None:
            if not _same_outputs(decode(answer), expected[index % len(expected)], args.same_label):
                raise WrongAnswer(f"the answer to request {index} differs from the direct call's")
        return check

    requests = []
    for inputs in request_inputs:
        request = predict_pb2.PredictRequest()
        request.model_spec.name, request.model_spec.signature_name = args.model_name, args.signature_name
        for name, value in inputs.items():
            request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
        requests.append(request)
    bodies = [json.dumps(rest_json.encode_predict_request(inputs, args.signature_name, row_format=False)).encode()
              for inputs in request_inputs]
    transports = {
        "rest": RestTransport(rest_port, args.model_name, bodies,
                              checker(lambda answer: rest_json.decode_predict_response(answer, output_dtypes)),
                              args.timeout_s),
        "grpc": GrpcTransport(target, requests, checker(
            lambda answer: {name: tf.make_ndarray(proto) for name, proto in answer.outputs.items()}), args.timeout_s),
    }
    if any(mode.startswith("inprocess") for mode in args.modes):
        served = load_servable(version, int(version.name),
                               batching=batching_parameters(args.enable_batching, args.batching_parameters_file))
        transports["inprocess"] = InProcessTransport(served, args.signature_name, request_inputs,
                                                     checker(lambda answer: answer))
    for transport in transports.values():  # warm-up; a wrong answer stops the benchmark
        connection = transport.connect()
        try:
            for index in range(max(args.warmup, 1)):
                transport.call(connection, keep_alive=True, index=index)
        finally:
            transport.close(connection)
    for index in range(args.warmup):
        direct_call(index)

    rows = [direct_row] + [Row(*mode.split("-"), clients) for mode in args.modes for clients in args.clients]
    per_round = [args.requests // args.rounds + (index < args.requests % args.rounds) for index in range(args.rounds)]
    deadline = time.monotonic() + args.max_seconds
    for round_index, count in enumerate(per_round):
        if time.monotonic() > deadline:
            break
        shift = round_index % len(rows)
        for row in rows[shift:] + rows[:shift]:
            if row.transport == "direct":
                direct_round(row, direct_call, count, deadline)
            else:
                server_round(row, transports[row.transport], count, deadline, server_pid)
        rates = [f"{row.label} {row.round_requests[-1] / row.round_seconds[-1]:.0f}/s" for row in rows]
        print(f"round {round_index + 1}/{args.rounds}: " + "; ".join(rates), flush=True)
    return rows


def section_name(args) -> str:
    """`serving_load`, or with `--preset` one section per preset, quantization, batching and intra-op threads."""
    if not args.preset:
        return NAME
    intra_op = f"_intra{args.tensorflow_intra_op_parallelism}" if args.tensorflow_intra_op_parallelism else ""
    return f"{NAME}_{args.preset}_{args.quantize}_{'batching' if args.enable_batching else 'unbatched'}{intra_op}"


def preset_base_path(preset: str, quantize: str, scratch: Path) -> tuple[Path, str]:
    """`cpu_serving`'s seeded random classifier of `preset`, exported as version 1 with `quantize`: (base path,
    its description)."""
    from benchmarks.cpu_serving import saved_classifier
    from benchmarks.settings import Settings
    from serving.export.saved_model import export_saved_model

    settings = Settings()
    _, model_dir = saved_classifier(settings.config(preset), settings.vocab_file, scratch / "model_dir")
    export_saved_model(model_dir, scratch, "served", version=1, quantize=quantize)
    return scratch / "served", (f"BERT-{preset} classifier (2 classes, seeded random weights, as in cpu_serving), "
                                f"exported with quantize={quantize!r}")


def batching_verdict(args, rows: list[Row]) -> list[str]:
    """The target of 64 single-sentence clients with batching, one line per such row."""
    from serving.server.model_server import batching_parameters

    timeout_ms = batching_parameters(True, args.batching_parameters_file).batch_timeout_micros / 1e3
    direct = rows[0]
    bound_ms = timeout_ms + 2 * direct.mean_ms
    lines = []
    for row in rows[1:]:
        if row.clients != 64:
            continue
        ratio, p99 = row.requests_per_s / direct.requests_per_s, row.percentile_ms(99)
        met = ratio >= 0.8 and p99 <= bound_ms and not row.errors
        little = row.clients / row.requests_per_s * 1e3 if row.requests_per_s else float("nan")  # Little's law
        lines.append(f"- Target, {row.label}: {ratio:.2f}× the direct call (≥ 0.8), p99 {p99:,.1f} ms (≤ "
                     f"{timeout_ms:g} + 2 × {direct.mean_ms:,.1f} = {bound_ms:,.1f}), {len(row.errors)} errors: "
                     f"**{'met' if met else 'not met'}**; at this rate {row.clients} clients that each wait for "
                     f"their answer have a mean latency of {little:,.1f} ms (Little's law: clients ÷ rate)")
    return lines


def _number(value: float, digits: int = 1) -> str:
    return "–" if np.isnan(value) else f"{value:,.{digits}f}"


def markdown(command: str, args, model: str, rows: list[Row], info: dict, started: datetime.datetime,
             minutes: float) -> str:
    """The RESULTS.md section: set-up, the table, and the errors if there were any."""
    from benchmarks.machine import machine_line
    from benchmarks.report import markdown_table, portable_command
    from serving.server.model_server import batching_parameters, request_threads

    automatic = request_threads(batching_parameters(args.enable_batching, args.batching_parameters_file))
    grpc_threads, rest_threads = args.grpc_max_threads or automatic, args.rest_api_num_threads or automatic
    reference = rows[0].requests_per_s
    table = []
    for row in rows:
        rates = [n / s for n, s in zip(row.round_requests, row.round_seconds) if n and s > 0]
        in_this_process = row.transport in ("direct", "inprocess")  # the child server did not answer it
        server_ms = "–" if in_this_process else _number(row.server_cpu_s / max(row.requests, 1) * 1e3, 2)
        wall = sum(row.round_seconds) or float("nan")
        busy = f"{_number(row.client_cpu_s / wall, 2)} + {_number(row.server_cpu_s / wall, 2)}"
        table.append([
            row.label, f"{row.requests:,}", len(row.errors), _number(row.requests_per_s),
            f"**{row.requests_per_s / reference:.3f}**", _number(row.percentile_ms(50), 2),
            _number(row.percentile_ms(99), 2), _number(row.mean_ms, 2),
            f"{_number(min(rates), 0)}–{_number(max(rates), 0)}" if rates else "–",
            _number(row.client_cpu_s / max(row.requests, 1) * 1e3, 2), server_ms, busy,
        ])
    header = ["row", "requests", "errors", "requests/s", "ratio to direct", "p50 ms", "p99 ms", "mean ms",
              "requests/s per round (min–max)", "client CPU ms/request", "server CPU ms/request",
              "cores busy: client + server"]
    stopped = any(row.requests < args.requests for row in rows)
    errors = [f"- {row.label}: {len(row.errors)} errors, first: `{row.errors[0]}`" for row in rows if row.errors]
    return "\n".join([
        f"## Serving load: development server vs. the direct SavedModel call ({started:%Y-%m-%d %H:%M} UTC)",
        "",
        f"- Command: `{command}` ({minutes:.1f} min)",
        f"- Machine: {machine_line(info)}, grpcio {grpc.__version__}; that load average is from before the run, "
        f"at its end it was {os.getloadavg()[0]:.1f} (1 min, the run's own threads included)",
        f"- Model: {model}; signature `{args.signature_name}`, "
        + (f"one sentence of `{portable_command([str(args.sentences)])}` per request (its first {args.sentence_count}, in turn), each answer "
           f"checked against the sentence alone ({'same label' if args.same_label else '≤ 1e-5'}); the direct row: "
           f"batches of {args.reference_batch}, rates in sentences/s" if args.sentences else
           f"batch {args.batch_size}, the same inputs in every request")
        + (f"; server batching on ({args.batching_parameters_file or 'TF Serving defaults'})"
           if args.enable_batching else "; server batching off"),
        f"- Set-up: development server (`serving/server/model_server.py`) in a child process on 127.0.0.1 with "
        f"{grpc_threads} gRPC threads and {rest_threads} REST workers"
        + (f", TensorFlow intra-op threads {args.tensorflow_intra_op_parallelism}"
           if args.tensorflow_intra_op_parallelism else "")
        + "; clients are threads of "
        f"the benchmark process; {args.requests:,} requests per row in {args.rounds} interleaved rounds, each request "
        f"given {args.timeout_s:g} s"
        + (f" (**stopped by --max_seconds {args.max_seconds:g}**)" if stopped else "")
        + "; the direct call is one caller, call after call, with the server idle. Client CPU is this process's "
        "(threads, protocol, checking answers; for the direct call the model itself), server CPU the child's; "
        "cores busy: each over the wall time.",
        "",
        markdown_table(header, table),
        *([""] + errors if errors else []),
        *([""] + batching_verdict(args, rows) if args.enable_batching and args.sentences else []),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving_load", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model_base_path", help="directory holding <version>/saved_model.pb (default: build the demo model)"
    )
    parser.add_argument("--model_name", default="demo")
    parser.add_argument("--preset", help="serve cpu_serving's seeded random classifier of this preset (e.g. base)")
    parser.add_argument("--quantize", choices=("none", "bf16", "int8"), default="none",
                        help="with --preset: the export's quantization")
    parser.add_argument("--signature_name", default="serving_default")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="transport-connections rows")
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 64], help="concurrent clients (default 8 64)")
    parser.add_argument("--requests", type=int, default=20000, help="requests per row (default 20000)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds the requests are split into")
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests per transport and direct calls")
    parser.add_argument("--max_seconds", type=float, default=480, help="stop the timed part after this long")
    parser.add_argument("--timeout_s", type=float, default=REQUEST_TIMEOUT_S,
                        help=f"each request's deadline in seconds (default {REQUEST_TIMEOUT_S:g})")
    parser.add_argument("--sentences", type=Path,
                        help="one real sentence per request from this file (a TSV's first column, e.g. SST-2 dev.tsv)")
    parser.add_argument("--sentence_count", type=int, default=300, help="sentences of --sentences used (default 300)")
    parser.add_argument("--reference_batch", type=int, default=32,
                        help="with --sentences: sentences per direct call of the reference row (default 32)")
    parser.add_argument("--same_label", action="store_true",
                        help="check only that served answers give the same label as alone (int8)")
    parser.add_argument("--enable_batching", action="store_true", help="the server's request batching")
    parser.add_argument("--batching_parameters_file", default="", help="the server's batching parameters")
    parser.add_argument("--grpc_max_threads", type=int, default=0,
                        help="the server's (default 0: chosen from the batching, as `serve`)")
    parser.add_argument("--rest_api_num_threads", type=int, default=0,
                        help="the server's (default 0: chosen from the batching, as `serve`)")
    parser.add_argument("--tensorflow_intra_op_parallelism", type=int, default=0,
                        help="the server's (default 0: one thread per core, as `serve`)")
    parser.add_argument("--results", type=Path, help="RESULTS.md to write (default benchmarks/RESULTS.md); "
                        "results/serving_load.json beside it")
    parser.add_argument("--no_record", action="store_true", help="print only; write no results")
    args = parser.parse_args(argv)
    if args.requests < args.rounds or args.rounds < 1 or min(args.clients) < 1:
        parser.error("--rounds must be ≥ 1, --requests ≥ --rounds, --clients ≥ 1.")
    if args.preset and args.model_base_path:
        parser.error("--preset builds the model it serves: give it or --model_base_path, not both.")
    args.same_label = args.same_label or (bool(args.preset) and args.quantize != "none")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from benchmarks.machine import machine_info
    from benchmarks.report import portable_command

    command = portable_command(["python", "-m", "benchmarks.serving_load", *(sys.argv[1:] if argv is None else argv)])

    info = machine_info()
    started, began = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()

    with tempfile.TemporaryDirectory() as scratch:
        base_path, model = args.model_base_path, f"{args.model_name} from `{portable_command([str(args.model_base_path)])}`"
        if args.preset:
            base_path, model = preset_base_path(args.preset, args.quantize, Path(scratch))
        elif base_path is None:
            from serving.export.demo_model import save_demo_model

            base_path = Path(scratch) / args.model_name
            base_path.mkdir()
            save_demo_model(base_path, version=1)
            model = "the tiny demo model (`serving/export/demo_model.py`: raw text in, 3 class probabilities out)"
        context = multiprocessing.get_context("spawn")
        ready, stop = context.Queue(), context.Event()
        server = context.Process(
            target=_serve,
            args=(args.model_name, str(base_path), args.grpc_max_threads, args.rest_api_num_threads,
                  (args.enable_batching, args.batching_parameters_file), args.tensorflow_intra_op_parallelism,
                  ready, stop),
            daemon=True,
        )
        server.start()
        try:
            grpc_port, rest_port = _wait_for_ports(server, ready)
            rows = load_test(args, Path(base_path), grpc_port, rest_port, server.pid)
        finally:
            stop.set()
            server.join(timeout=30)
            if server.is_alive():
                server.terminate()

    section = markdown(command, args, model, rows, info, started, (time.perf_counter() - began) / 60)
    print(section)
    if not args.no_record:
        from benchmarks.report import RESULTS_MD, BenchmarkResult, write_result

        results_md = args.results or RESULTS_MD
        data = {"command": command, "started": started.isoformat(), "machine": info, "arguments": vars(args),
                "load_average_at_end": os.getloadavg(), "rows": [row.summary() for row in rows]}
        write_result(BenchmarkResult(section_name(args), section, data), results_md, results_md.parent / "results")
        print(f"written to {results_md}")
    return 1 if any(row.errors for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
