"""Load test of the development model server (serving/) against the direct call of the same SavedModel.

    python -m benchmarks.serving_load                      # builds and serves the tiny demo model
    python -m benchmarks.serving_load --model_base_path /models/bert --model_name bert

The server runs in a child process (its own interpreter and GIL, as a real server would)
on free 127.0.0.1 ports and is stopped at the end; the clients are threads of this
process. Each row sends `--requests` requests from 8 or 64 concurrent clients
(`--clients`) over REST or gRPC, with a new connection per request (REST: a TCP connection
sent `Connection: close`; gRPC: a new channel) or with kept-alive connections (one per
client, opened before the timing starts). Every gRPC channel has its own TCP connection
(a local subchannel pool), as separate client processes would. The reference row calls
`tf.saved_model.load(...).signatures[...]` in this process, one call after another, with
the same inputs. Rows run interleaved in `--rounds` rounds, so the machine's drift touches
them alike: compare ratios within one run, not across runs.

Inputs are made from the signature's metadata: strings are short sentences, integers are 0
or 1, floats uniform in [0, 1); the batch dimension is `--batch_size`, any other unknown
dimension `--seq_len`. Every answer is compared with the direct call's outputs (a
different one counts as an error), every request has a 30 s deadline (REST: a socket
timeout), and the timed part stops at `--max_seconds`. CPU time per request is read from
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
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import grpc
import numpy as np

NAME = "serving_load"  # its RESULTS.md section and results/NAME.json
MODES = ("rest-new", "rest-kept", "grpc-new", "grpc-kept")
MODE_NAMES = {"rest": "REST", "grpc": "gRPC", "new": "new per request", "kept": "kept alive"}
REQUEST_TIMEOUT_S = 30.0
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


class WrongAnswer(Exception):
    """The server answered, but not what the direct call gives."""


def _serve(model_name: str, base_path: str, grpc_threads: int, rest_threads: int, ready, stop) -> None:
    """Child process: serves the model until `stop` is set; reports (gRPC port, REST port) on `ready`."""
    from serving.server.model_server import ModelServer

    with ModelServer(
        model_name, base_path, poll_wait_s=0, grpc_max_threads=grpc_threads, rest_num_threads=rest_threads
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


def _same_outputs(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> bool:
    if set(got) != set(expected):
        return False
    for name, value in expected.items():
        if value.dtype == object:
            if not np.array_equal(got[name], value):
                return False
        elif not np.allclose(got[name], value, rtol=1e-5, atol=1e-6):
            return False
    return True


class RestTransport:
    """Predict requests over HTTP/1.1 with a body encoded once; `answer` is the expected JSON answer."""

    def __init__(self, port: int, model_name: str, body: bytes):
        self.port = port
        self.path = f"/v1/models/{model_name}:predict"
        self.body = body
        self.answer = None

    def connect(self) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
        connection.connect()
        return connection

    def call(self, connection: http.client.HTTPConnection, keep_alive: bool) -> dict:
        headers = {"Content-Type": "application/json", **({} if keep_alive else {"Connection": "close"})}
        connection.request("POST", self.path, self.body, headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status != 200:
            raise WrongAnswer(f"HTTP {response.status}: {payload[:200]!r}")
        answer = json.loads(payload)
        if self.answer is not None and answer != self.answer:
            raise WrongAnswer(f"answer differs: {payload[:200]!r}")
        return answer

    @staticmethod
    def close(connection: http.client.HTTPConnection) -> None:
        connection.close()


class GrpcTransport:
    """Predict calls with one request message; `answer` is the expected PredictResponse."""

    def __init__(self, target: str, request):
        from tensorflow_serving.apis import prediction_service_pb2_grpc

        self.target = target
        self.request = request
        self.answer = None
        self._stub = prediction_service_pb2_grpc.PredictionServiceStub

    def connect(self) -> tuple[grpc.Channel, Callable]:
        channel = grpc.insecure_channel(self.target, options=OWN_CONNECTION)
        return channel, self._stub(channel).Predict

    def call(self, connection: tuple[grpc.Channel, Callable], keep_alive: bool):
        response = connection[1](self.request, timeout=REQUEST_TIMEOUT_S)
        if self.answer is not None and response != self.answer:
            raise WrongAnswer(f"answer differs: {str(response)[:200]}")
        return response

    @staticmethod
    def close(connection: tuple[grpc.Channel, Callable]) -> None:
        connection[0].close()


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
    latencies: list[float] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    round_requests: list[int] = dataclasses.field(default_factory=list)
    round_seconds: list[float] = dataclasses.field(default_factory=list)
    client_cpu_s: float = 0.0
    server_cpu_s: float = 0.0

    @property
    def label(self) -> str:
        if self.transport == "direct":
            return "direct call (in process)"
        return f"{MODE_NAMES[self.transport]}, {MODE_NAMES[self.connections]}, {self.clients} clients"

    @property
    def requests(self) -> int:
        """Requests sent, answered or not."""
        return sum(self.round_requests)

    @property
    def requests_per_s(self) -> float:
        """Requests answered per second of the rounds."""
        return len(self.latencies) / sum(self.round_seconds) if self.round_seconds else float("nan")

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
    """Hands out `count` requests to the client threads until `deadline` (time.monotonic)."""

    def __init__(self, count: int, deadline: float):
        self.left = count
        self.deadline = deadline
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.left <= 0 or time.monotonic() > self.deadline:
                return False
            self.left -= 1
            return True


def server_round(row: Row, transport, count: int, deadline: float, server_pid: int) -> None:
    """`count` requests from `row.clients` threads; adds latencies, errors, wall and CPU seconds to `row`."""
    keep_alive = row.connections == "kept"
    tickets, start = Tickets(count, deadline), threading.Barrier(row.clients + 1)
    kept: list = []

    def client() -> None:
        connection = None
        if keep_alive:
            try:
                connection = transport.connect()
                if isinstance(transport, GrpcTransport):
                    grpc.channel_ready_future(connection[0]).result(timeout=REQUEST_TIMEOUT_S)
                kept.append(connection)
            except Exception as error:  # counted; this client sends nothing
                row.errors.append(f"connect: {_describe(error)}")
        start.wait()
        if keep_alive and connection is None:
            return
        while tickets.take():
            began = time.perf_counter()
            try:
                if keep_alive:
                    transport.call(connection, keep_alive=True)
                else:
                    fresh = transport.connect()
                    try:
                        transport.call(fresh, keep_alive=False)
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


def direct_round(row: Row, call: Callable[[], object], count: int, deadline: float) -> None:
    """`count` direct calls, one after another, timed as `server_round` times its requests."""
    client_cpu, began = time.process_time(), time.perf_counter()
    done = 0
    while done < count and time.monotonic() <= deadline:
        started = time.perf_counter()
        call()
        row.latencies.append(time.perf_counter() - started)
        done += 1
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

    target = f"127.0.0.1:{grpc_port}"
    with GrpcClient(target, model_name=args.model_name, signature_name=args.signature_name, timeout_s=30) as client:
        signatures = client.metadata()
    if args.signature_name not in signatures:
        raise SystemExit(f"serving_load: no signature {args.signature_name!r}; the model has {sorted(signatures)}.")
    signature_def = signatures[args.signature_name]
    inputs = synthetic_inputs(signature_def, args.batch_size, args.seq_len)

    version = max((p for p in base_path.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    function = tf.saved_model.load(str(version)).signatures[args.signature_name]
    tensors = {name: tf.constant(value) for name, value in inputs.items()}

    def direct_call() -> dict[str, np.ndarray]:
        return {name: value.numpy() for name, value in function(**tensors).items()}

    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = args.model_name, args.signature_name
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    body = json.dumps(rest_json.encode_predict_request(inputs, args.signature_name, row_format=False)).encode()
    transports = {"rest": RestTransport(rest_port, args.model_name, body), "grpc": GrpcTransport(target, request)}

    expected = direct_call()
    output_dtypes = {
        name: tf.dtypes.as_dtype(types_pb2.DataType.Value(info["dtype"]))
        for name, info in signature_def["outputs"].items()
    }
    decode = {
        "rest": lambda answer: rest_json.decode_predict_response(answer, output_dtypes),
        "grpc": lambda answer: {name: tf.make_ndarray(proto) for name, proto in answer.outputs.items()},
    }
    for name, transport in transports.items():
        connection = transport.connect()
        try:
            for _ in range(max(args.warmup, 1)):
                transport.answer = transport.call(connection, keep_alive=True)
        finally:
            transport.close(connection)
        if not _same_outputs(decode[name](transport.answer), expected):
            raise SystemExit(f"serving_load: the server's {name} answer differs from the direct call's.")
    for _ in range(args.warmup):
        direct_call()

    rows = [Row("direct", "", 1)] + [Row(*mode.split("-"), clients) for mode in args.modes for clients in args.clients]
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


def _number(value: float, digits: int = 1) -> str:
    return "–" if np.isnan(value) else f"{value:,.{digits}f}"


def markdown(command: str, args, model: str, rows: list[Row], info: dict, started: datetime.datetime,
             minutes: float) -> str:
    """The RESULTS.md section: set-up, the table, and the errors if there were any."""
    from benchmarks.machine import machine_line
    from benchmarks.report import markdown_table

    reference = rows[0].requests_per_s
    table = []
    for row in rows:
        rates = [n / s for n, s in zip(row.round_requests, row.round_seconds) if n and s > 0]
        server_ms = "–" if row.transport == "direct" else _number(row.server_cpu_s / max(row.requests, 1) * 1e3, 2)
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
        f"- Model: {model}; signature `{args.signature_name}`, batch {args.batch_size}, the same inputs in every request",
        f"- Set-up: development server (`serving/server/model_server.py`) in a child process on 127.0.0.1 with "
        f"{args.grpc_max_threads} gRPC threads and {args.rest_api_num_threads} REST workers; clients are threads of "
        f"the benchmark process; {args.requests:,} requests per row in {args.rounds} interleaved rounds"
        + (f" (**stopped by --max_seconds {args.max_seconds:g}**)" if stopped else "")
        + "; the direct call is one caller, call after call, with the server idle. Client CPU is this process's "
        "(threads, protocol, checking answers; for the direct call the model itself), server CPU the child's; "
        "cores busy: each over the wall time.",
        "",
        markdown_table(header, table),
        *([""] + errors if errors else []),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving_load", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model_base_path", help="directory holding <version>/saved_model.pb (default: build the demo model)"
    )
    parser.add_argument("--model_name", default="demo")
    parser.add_argument("--signature_name", default="serving_default")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="transport-connections rows")
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 64], help="concurrent clients (default 8 64)")
    parser.add_argument("--requests", type=int, default=20000, help="requests per row (default 20000)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds the requests are split into")
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests per transport and direct calls")
    parser.add_argument("--max_seconds", type=float, default=480, help="stop the timed part after this long")
    parser.add_argument("--grpc_max_threads", type=int, default=8, help="the server's (default 8, as `serve`)")
    parser.add_argument("--rest_api_num_threads", type=int, default=8, help="the server's (default 8, as `serve`)")
    parser.add_argument("--results", type=Path, help="RESULTS.md to write (default benchmarks/RESULTS.md); "
                        "results/serving_load.json beside it")
    parser.add_argument("--no_record", action="store_true", help="print only; write no results")
    args = parser.parse_args(argv)
    if args.requests < args.rounds or args.rounds < 1 or min(args.clients) < 1:
        parser.error("--rounds must be ≥ 1, --requests ≥ --rounds, --clients ≥ 1.")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    command = " ".join(["python -m benchmarks.serving_load", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])
    from benchmarks.machine import machine_info

    info = machine_info()
    started, began = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()

    with tempfile.TemporaryDirectory() as scratch:
        base_path, model = args.model_base_path, f"{args.model_name} from `{args.model_base_path}`"
        if base_path is None:
            from serving.export.demo_model import save_demo_model

            base_path = Path(scratch) / args.model_name
            base_path.mkdir()
            save_demo_model(base_path, version=1)
            model = "the tiny demo model (`serving/export/demo_model.py`: raw text in, 3 class probabilities out)"
        context = multiprocessing.get_context("spawn")
        ready, stop = context.Queue(), context.Event()
        server = context.Process(
            target=_serve,
            args=(args.model_name, str(base_path), args.grpc_max_threads, args.rest_api_num_threads, ready, stop),
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
        write_result(BenchmarkResult(NAME, section, data), results_md, results_md.parent / "results")
        print(f"written to {results_md}")
    return 1 if any(row.errors for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
