"""Load test of the development model server (serving/): concurrent gRPC clients, a fixed number
of requests, then p50/p99 latency and throughput, appended to benchmarks/RESULTS.md.

    python -m benchmarks.serving_load                      # builds and serves the tiny demo model
    python -m benchmarks.serving_load --model_base_path /models/bert --model_name bert
    python -m benchmarks.serving_load --target 127.0.0.1:8500 --model_name bert   # a running server

Without `--target` the server runs in a child process (its own interpreter and GIL, as a
real server would) on free 127.0.0.1 ports and is stopped at the end. Inputs are made from
the signature's metadata: strings are short sentences, integers are 0 or 1 (valid word,
mask and segment ids), floats are uniform in [0, 1); the batch dimension is
`--batch_size`, any other unknown dimension `--seq_len`. The run is bounded by
`--requests` and `--max_seconds`; every request has a 30 s deadline.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import multiprocessing
import os
import platform
import queue
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import numpy as np

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _serve(model_name: str, base_path: str, ready, stop) -> None:
    """Child process: serves the model until `stop` is set; reports its gRPC port on `ready`."""
    from serving.server import ModelServer

    with ModelServer(model_name, base_path, poll_wait_s=0) as server:
        ready.put(server.grpc_port)
        stop.wait()


def _wait_for_port(process, ready, timeout_s: float = 180) -> int:
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


def load_test(target: str, args) -> dict:
    """Runs the load; returns the figures."""
    from serving.grpc_client import GrpcClient

    with GrpcClient(target, model_name=args.model_name, signature_name=args.signature_name, timeout_s=30) as client:
        signatures = client.metadata()
        if args.signature_name not in signatures:
            raise SystemExit(f"serving_load: no signature {args.signature_name!r}; the model has {sorted(signatures)}.")
        inputs = synthetic_inputs(signatures[args.signature_name], args.batch_size, args.seq_len)
        for _ in range(args.warmup):
            client.predict(inputs)

    latencies, errors, lock = [], [], threading.Lock()
    deadline = time.monotonic() + args.max_seconds
    per_client = [args.requests // args.clients + (index < args.requests % args.clients) for index in range(args.clients)]

    def one_client(count: int) -> None:
        with GrpcClient(target, model_name=args.model_name, signature_name=args.signature_name, timeout_s=30) as client:
            for _ in range(count):
                if time.monotonic() > deadline:
                    return
                started = time.perf_counter()
                try:
                    client.predict(inputs)
                except grpc.RpcError as error:
                    with lock:
                        errors.append(f"{error.code().name}: {error.details()}")
                    continue
                with lock:
                    latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(one_client, per_client))
    wall = time.perf_counter() - started
    done = np.array(latencies) * 1e3
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "wall_s": wall,
        "p50_ms": float(np.percentile(done, 50)) if done.size else float("nan"),
        "p99_ms": float(np.percentile(done, 99)) if done.size else float("nan"),
        "requests_per_s": len(latencies) / wall,
        "examples_per_s": len(latencies) * args.batch_size / wall,
    }


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    import tensorflow as tf

    return (
        f"{cpu}, {len(os.sched_getaffinity(0))} usable of {os.cpu_count()} logical CPUs, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, TensorFlow {tf.__version__}, grpcio {grpc.__version__}; "
        f"load average {os.getloadavg()[0]:.1f} (the machine is shared)"
    )


def record(command: str, model: str, args, figures: dict) -> None:
    """Appends a section to benchmarks/RESULTS.md."""
    header = "" if RESULTS.exists() else "# Benchmark results\n\nAppended by the scripts in `benchmarks/`, newest last.\n"
    where = "already running" if args.target else "in a child process"
    f = figures
    section = f"""
## Serving load test ({datetime.date.today().isoformat()})

- Command: `{command}`
- Machine: {machine()}
- Model: {model}; signature `{args.signature_name}`, batch {args.batch_size}, sequence length {args.seq_len} where unknown
- Set-up: development server (`serving/server.py`, {where}); {args.clients} concurrent gRPC clients on 127.0.0.1;
  {args.warmup} warm-up requests first

| requests | errors | wall s | p50 ms | p99 ms | requests/s | examples/s |
|---|---|---|---|---|---|---|
| {f['requests']} | {f['errors']} | {f['wall_s']:.1f} | {f['p50_ms']:.1f} | {f['p99_ms']:.1f} \
| {f['requests_per_s']:.1f} | {f['examples_per_s']:.1f} |
"""
    with RESULTS.open("a", encoding="utf-8") as file:
        file.write(header + section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving_load", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model_base_path", help="directory holding <version>/saved_model.pb (default: build the demo model)"
    )
    parser.add_argument("--model_name", default="demo")
    parser.add_argument("--target", help="host:port of a running server (default: start one)")
    parser.add_argument("--signature_name", default="serving_default")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="requests in all (default 400)")
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--max_seconds", type=float, default=300, help="stop sending after this long (default 300)")
    parser.add_argument("--no_record", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    command = " ".join(["python -m benchmarks.serving_load", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])

    with tempfile.TemporaryDirectory() as scratch:
        base_path, model = args.model_base_path, f"{args.model_name} from {args.model_base_path}"
        if args.target:
            target, server, stop = args.target, None, None
            model = f"{args.model_name} at {args.target}"
        else:
            if base_path is None:
                from serving.demo_model import save_demo_model

                base_path = Path(scratch) / args.model_name
                base_path.mkdir()
                save_demo_model(base_path, version=1)
                model = "the tiny demo model (`serving/demo_model.py`)"
            context = multiprocessing.get_context("spawn")
            ready, stop = context.Queue(), context.Event()
            server = context.Process(target=_serve, args=(args.model_name, str(base_path), ready, stop), daemon=True)
            server.start()
            target = f"127.0.0.1:{_wait_for_port(server, ready)}"
        try:
            figures = load_test(target, args)
        finally:
            if server is not None:
                stop.set()
                server.join(timeout=30)
                if server.is_alive():
                    server.terminate()

    f = figures
    print(
        f"{f['requests']} requests ({f['errors']} errors) from {args.clients} clients in {f['wall_s']:.1f} s: "
        f"p50 {f['p50_ms']:.1f} ms, p99 {f['p99_ms']:.1f} ms, {f['requests_per_s']:.1f} requests/s, "
        f"{f['examples_per_s']:.1f} examples/s"
    )
    if figures["errors"]:
        print(f"first error: {figures['first_error']}", file=sys.stderr)
    if not args.no_record:
        record(command, model, args, figures)
        print(f"appended to {RESULTS}")
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
