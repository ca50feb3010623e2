"""`ModelServer` and the `serve` command: a TensorFlow-Serving-compatible server for one model.

Written by hand because the official `tensorflow_model_server` binary cannot be installed
here (STACK.md, gotcha 7). It serves TensorFlow Serving's gRPC API (PredictionService:
Predict, Classify, GetModelMetadata; ModelService: GetModelStatus) and REST API
(`/v1/models/NAME[:predict|:classify|/metadata]`) from `BASE/NAME/<version>/` SavedModels,
with TensorFlow Serving's "latest" version policy and a file-system poller that picks up
new versions without a restart (`serving.model_manager`). It is for development and
tests; production should use the official TensorFlow Serving, which takes the same flags,
directory layout and requests.

The command takes the flags of `tensorflow_model_server` (`--port`, `--rest_api_port`,
`--model_name`, `--model_base_path`, `--file_system_poll_wait_seconds`,
`--grpc_max_threads`) plus `--host` (default 127.0.0.1: only this machine) and
`--max_batch_size`. Unlike the official server, port 0 picks a free port instead of
turning the API off.

Example:
    $ python -m serving.server --model_name demo --model_base_path /tmp/models/demo

    >>> with ModelServer("demo", "/tmp/models/demo") as server:  # doctest: +SKIP
    ...     print(server.grpc_port, server.rest_port)
    43021 43022
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path

logger = logging.getLogger(__name__)


class ModelServer:
    """Serves model `model_name` from `model_base_path` (holding `<version>/saved_model.pb`).

    gRPC and REST listen on `host` at `grpc_port` and `rest_port` (0: a free port; read the
    chosen ones from `.grpc_port` and `.rest_port` after `start()`). `poll_wait_s` is how
    often the base path is scanned for new versions (≤ 0: only at start);
    `max_batch_size` > 0 rejects larger batches with INVALID_ARGUMENT; `grpc_max_threads`
    gRPC requests run at once. Use it as a context manager, or `start()` ... `stop()`.
    """

    def __init__(
        self,
        model_name: str,
        model_base_path: str | Path,
        host: str = "127.0.0.1",
        grpc_port: int = 0,
        rest_port: int = 0,
        poll_wait_s: float = 1.0,
        max_batch_size: int = 0,
        grpc_max_threads: int = 8,
    ):
        if not model_name or "/" in model_name or ":" in model_name:
            raise ValueError(f"Invalid model name {model_name!r}: it must be non-empty, without '/' or ':'.")
        if max_batch_size < 0 or grpc_max_threads < 1:
            raise ValueError("max_batch_size must be ≥ 0 and grpc_max_threads ≥ 1.")
        self.model_name = model_name
        self.model_base_path = Path(model_base_path)
        self.host = host
        self.grpc_port = grpc_port
        self.rest_port = rest_port
        self.poll_wait_s = poll_wait_s
        self.max_batch_size = max_batch_size
        self.grpc_max_threads = grpc_max_threads
        self._model = self._grpc = self._executor = self._rest = self._rest_thread = None
        self._stopped = threading.Event()

    def start(self) -> "ModelServer":
        """Loads the latest version, then listens; returns when both APIs accept requests."""
        # Imported here, not at the top, so that `add_arguments` (the command line) does not
        # pay for importing TensorFlow.
        from serving.grpc_service import build_grpc_server
        from serving.model_manager import VersionedModel
        from serving.rest_service import RestServer

        self._stopped.clear()
        self._model = VersionedModel(self.model_name, self.model_base_path, self.poll_wait_s, self.max_batch_size)
        self._model.start()
        try:
            self._executor = futures.ThreadPoolExecutor(self.grpc_max_threads, thread_name_prefix="grpc-serving")
            self._grpc, self.grpc_port = build_grpc_server(self._model, self.host, self.grpc_port, self._executor)
            self._grpc.start()
            self._rest = RestServer(self._model, self.host, self.rest_port)
            self.rest_port = self._rest.server_address[1]
            self._rest_thread = threading.Thread(target=self._rest.serve_forever, name="rest-serving", daemon=True)
            self._rest_thread.start()
        except BaseException:
            self.stop()
            raise
        logger.info(
            "Serving model %r from %s: gRPC on %s:%d, REST on %s:%d.",
            self.model_name, self._model.base_path, self.host, self.grpc_port, self.host, self.rest_port,
        )
        return self

    def stop(self, grace_s: float = 1.0) -> None:
        """Stops listening (requests in flight get `grace_s` seconds to finish) and stops polling."""
        if self._rest is not None:
            self._rest.shutdown()
            self._rest.server_close()
            self._rest_thread.join()
            self._rest = self._rest_thread = None
        if self._grpc is not None:
            self._grpc.stop(grace_s).wait()
            self._grpc = None
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        if self._model is not None:
            self._model.stop()
            self._model = None
        self._stopped.set()

    def wait(self) -> None:
        """Blocks until `stop()` (from another thread, or a signal handler)."""
        self._stopped.wait()

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `serve`: those of `tensorflow_model_server`, plus `--host` and `--max_batch_size`."""
    parser.add_argument("--port", type=int, default=8500, help="gRPC port (default 8500; 0: a free port)")
    parser.add_argument("--rest_api_port", type=int, default=8501, help="REST port (default 8501; 0: a free port)")
    parser.add_argument("--model_name", default="default", help="the model's name in requests (default: default)")
    parser.add_argument("--model_base_path", required=True, help="directory holding <version>/saved_model.pb")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)")
    parser.add_argument(
        "--file_system_poll_wait_seconds", type=float, default=1.0,
        help="seconds between scans of the base path for new versions (default 1; 0: only at start)",
    )
    parser.add_argument("--max_batch_size", type=int, default=0, help="reject larger batches (default 0: no limit)")
    parser.add_argument("--grpc_max_threads", type=int, default=8, help="gRPC requests served at once (default 8)")


def run(args: argparse.Namespace) -> None:
    """Serves until interrupted (Ctrl-C or SIGTERM). Raises FileNotFoundError/ValueError/OSError on bad flags."""
    server = ModelServer(
        args.model_name,
        args.model_base_path,
        host=args.host,
        grpc_port=args.port,
        rest_port=args.rest_api_port,
        poll_wait_s=args.file_system_poll_wait_seconds,
        max_batch_size=args.max_batch_size,
        grpc_max_threads=args.grpc_max_threads,
    )
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops like Ctrl-C
    server.start()
    print(f"Serving model {args.model_name!r}: gRPC {args.host}:{server.grpc_port}, REST {args.host}:{server.rest_port}. "
          "Ctrl-C stops.", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        logger.info("Stopping.")
    finally:
        server.stop()


def main(argv: list[str] | None = None, prog: str = "bert-tf serve") -> int:
    """`serve` as a program: parses `argv`, logs at INFO, serves; returns the exit status."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        run(args)
    except (FileNotFoundError, ValueError, OSError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(prog="python -m serving.server"))
