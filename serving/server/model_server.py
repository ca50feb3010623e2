"""`ModelServer` and the `serve` command: a TensorFlow-Serving-compatible server for one model or several.

Written by hand because the official `tensorflow_model_server` binary cannot be installed
here (neither PyPI nor Debian carry it). It serves TensorFlow Serving's gRPC API (PredictionService:
Predict, Classify, GetModelMetadata; ModelService: GetModelStatus) and REST API
(`/v1/models/NAME[/versions/N|/labels/LABEL][:predict|:classify|/metadata]`) from
`BASE/NAME/<version>/` SavedModels: one model (`--model_name`, `--model_base_path`) or those
of a model config file (`--model_config_file`, `serving.server.model_config`: several models,
version policies, labels). Versions are managed as TensorFlow Serving does
(`serving.server.model_manager`): new ones are picked up without a restart, deleted ones unloaded,
failed loads retried. It is for development and tests; production should use the official
TensorFlow Serving, which takes the same flags, directory layout, config file and requests.

The command takes the flags of `tensorflow_model_server` (`--port`, `--rest_api_port`,
`--model_name`, `--model_base_path`, `--model_config_file`,
`--model_config_file_poll_wait_seconds`, `--file_system_poll_wait_seconds`,
`--max_num_load_retries`, `--load_retry_interval_micros`,
`--allow_version_labels_for_unavailable_models`, `--enable_model_warmup`, `--grpc_max_threads`,
`--grpc_channel_arguments`, `--rest_api_num_threads`, `--rest_api_timeout_in_ms`,
`--enable_batching`, `--batching_parameters_file`: `serving.server.batching`,
`--tensorflow_intra_op_parallelism`, `--tensorflow_inter_op_parallelism`, `--monitoring_config_file`:
`serving.server.monitoring`), with
their defaults (but `--grpc_max_threads` and `--rest_api_num_threads`: 8, or with batching enough requests to fill
the batches, `request_threads`), plus `--host` (default 127.0.0.1: only this machine),
`--max_batch_size` (default 512 rows; the official server sets it in its batching
parameters file), `--max_request_text_bytes` (default 1 MiB) and `--rest_api_max_body_bytes`
(default 8 MiB). Requests are limited: gRPC messages to 64 MiB
(`--grpc_channel_arguments=grpc.max_receive_message_length=N` changes it; the official server
allows 2 GiB), REST bodies to `--rest_api_max_body_bytes` (413), batches to `--max_batch_size`
rows and their text to `--max_request_text_bytes` in all (INVALID_ARGUMENT). Unlike the official server,
port 0 picks a free port instead of turning the API off.

Example:
    $ python -m serving.server --model_name demo --model_base_path /tmp/models/demo
    $ python -m serving.server --model_config_file serving/models.config --model_config_file_poll_wait_seconds 60

    >>> with ModelServer("demo", "/tmp/models/demo") as server:  # doctest: +SKIP
    ...     print(server.grpc_port, server.rest_port)
    43021 43022
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Mapping

from serving.protocol import DEFAULT_MAX_BATCH_SIZE
from serving.server.monitoring import read_monitoring_config
from serving.server.model_options import (DEFAULT_LOAD_RETRY_INTERVAL_MICROS, DEFAULT_MAX_NUM_LOAD_RETRIES,
                                          DEFAULT_MAX_REQUEST_TEXT_BYTES, ModelOptions)

logger = logging.getLogger(__name__)

# JSON parses to up to ~33 times its size: with this, requests cost the REST front end at most 768 MiB in all
# (`serving.server.rest_service`), and the largest request within the other limits (512 rows of 512 token ids) fits.
DEFAULT_REST_MAX_BODY_BYTES = 8 * 2**20
# Requests answered at once, over each protocol, when no number is given: without batching, as before; with it,
# enough to fill a batch while every batch thread runs one, up to a bound (threads start only as requests come).
REQUEST_THREADS_WITHOUT_BATCHING = 8
MAX_AUTOMATIC_REQUEST_THREADS = 1024


class ModelServer:
    """Serves model `model_name` from `model_base_path` (holding `<version>/saved_model.pb`), or the
    models of `model_config_file` (then `model_name` and `model_base_path` are ignored).

    gRPC and REST listen on `host` at `grpc_port` and `rest_port` (0: a free port; read the
    chosen ones from `.grpc_port` and `.rest_port` after `start()`). `grpc_max_threads` gRPC
    requests run at once (0: `request_threads(batching)`); `grpc_channel_arguments` override
    `serving.server.grpc_service.DEFAULT_CHANNEL_ARGUMENTS` (e.g. {"grpc.max_receive_message_length":
    2**30}); `rest_num_threads`, `rest_timeout_s` and `rest_max_body_bytes` are the REST
    front end's (`serving.server.rest_service`). `model_options` are the fields of
    `serving.server.model_options.ModelOptions` (`poll_wait_s`, `max_batch_size`, `batching`, ...), which
    go to every model as `.options`. Use it as a context manager, or `start()` ... `stop()`.
    """

    def __init__(
        self,
        model_name: str = "default",
        model_base_path: str | Path | None = None,
        *,
        model_config_file: str | Path | None = None,
        host: str = "127.0.0.1",
        grpc_port: int = 0,
        rest_port: int = 0,
        grpc_max_threads: int = 0,
        grpc_channel_arguments: Mapping[str, int | str] | None = None,
        rest_num_threads: int = 0,
        rest_timeout_s: float = 30.0,
        rest_max_body_bytes: int = DEFAULT_REST_MAX_BODY_BYTES,
        monitoring_config_file: str | Path | None = None,
        **model_options,
    ):
        if model_config_file is None:
            if model_base_path is None:
                raise ValueError("Give a model base path (--model_base_path) or a model config file (--model_config_file).")
            if not model_name or "/" in model_name or ":" in model_name:
                raise ValueError(f"Invalid model name {model_name!r}: it must be non-empty, without '/' or ':'.")
        if grpc_max_threads < 0 or rest_num_threads < 0:
            raise ValueError("grpc_max_threads and rest_num_threads must be ≥ 0 (0: chosen from the batching).")
        if rest_timeout_s <= 0 or rest_max_body_bytes < 0:
            raise ValueError("rest_timeout_s must be > 0 and rest_max_body_bytes ≥ 0.")
        self.options = ModelOptions(**model_options)
        self.model_name = model_name
        self.model_base_path = Path(model_base_path) if model_base_path is not None else None
        self.model_config_file = Path(model_config_file) if model_config_file is not None else None
        self.host = host
        self.grpc_port = grpc_port
        self.rest_port = rest_port
        automatic = request_threads(self.options.batching)
        self.grpc_max_threads = grpc_max_threads or automatic
        self.grpc_channel_arguments = dict(grpc_channel_arguments or {})
        self.rest_num_threads = rest_num_threads or automatic
        for flag, threads in (("--grpc_max_threads", grpc_max_threads), ("--rest_api_num_threads", rest_num_threads)):
            _warn_if_batches_cannot_fill(flag, threads, self.options.batching, automatic)
        self.rest_timeout_s = rest_timeout_s
        self.rest_max_body_bytes = rest_max_body_bytes
        # The REST path of the Prometheus page, or None (serving.server.monitoring).
        self.prometheus_path = read_monitoring_config(monitoring_config_file) if monitoring_config_file else None
        self._models = self._grpc = self._rest = None
        self._workers: list[futures.ThreadPoolExecutor] = []  # the threads that answer requests, gRPC's and REST's
        self._stopped = threading.Event()

    @property
    def model_names(self) -> list[str]:
        """The names of the models served (after `start()`)."""
        return self._models.names if self._models is not None else []

    def start(self) -> "ModelServer":
        """Loads the models' versions, then listens; returns when both APIs accept requests.

        Raises FileNotFoundError or ValueError (with what to do) for a bad base path, config file or label.
        """
        # Imported here, not at the top, so that `add_arguments` (the command line) does not
        # pay for importing TensorFlow.
        from serving.server.grpc_service import build_grpc_server
        from serving.server.model_config import ModelConfig
        from serving.server.model_manager import ModelManager
        from serving.server.rest_service import RestServer

        self._stopped.clear()
        configs = [] if self.model_config_file else [ModelConfig(self.model_name, self.model_base_path)]
        self._models = ModelManager(configs, config_file=self.model_config_file, options=self.options)
        self._models.start()
        try:
            grpc_workers = futures.ThreadPoolExecutor(self.grpc_max_threads, thread_name_prefix="grpc-serving")
            rest_workers = futures.ThreadPoolExecutor(self.rest_num_threads, thread_name_prefix="rest-serving")
            self._workers = [grpc_workers, rest_workers]
            self._grpc, self.grpc_port = build_grpc_server(
                self._models, self.host, self.grpc_port, grpc_workers, self.grpc_channel_arguments
            )
            self._grpc.start()
            self._rest = RestServer(
                self._models, self.host, self.rest_port, rest_workers, self.rest_timeout_s, self.rest_max_body_bytes,
                prometheus_path=self.prometheus_path,
            )
            self.rest_port = self._rest.port
            self._rest.start()
        except BaseException:
            self.stop()
            raise
        logger.info("Serving %s; gRPC on %s:%d, REST on %s:%d.", self._models.describe(), self.host, self.grpc_port,
                    self.host, self.rest_port)
        return self

    def stop(self, grace_s: float = 1.0) -> bool:
        """Stops listening (requests in flight get `grace_s` seconds to finish) and stops polling; whether every
        request has ended (one in a model call, which cannot be interrupted, may go on past the grace)."""
        if self._rest is not None:
            self._rest.stop(grace_s)
            self._rest = None
        if self._grpc is not None:
            self._grpc.stop(grace_s).wait()
            self._grpc = None
        if self._models is not None:
            self._models.stop()
            self._models = None
        ended = _shut_down(self._workers, grace_s)
        self._workers = []
        self._stopped.set()
        return ended

    def wait(self) -> None:
        """Blocks until `stop()` (from another thread, or a signal handler)."""
        self._stopped.wait()

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def request_threads(batching) -> int:
    """Requests answered at once over each protocol by default: 8 without request batching; with it, enough to fill
    a batch while every batch thread runs one ((num_batch_threads + 1) × the batch size, at most 1,024), because a
    request holds its thread while it waits for its batch: 8 made batches of 8 rows at most.

    >>> from serving.server.batching import BatchingParameters
    >>> request_threads(None), request_threads(BatchingParameters(max_batch_size=32, num_batch_threads=1))
    (8, 64)
    """
    if batching is None:
        return REQUEST_THREADS_WITHOUT_BATCHING
    wanted = (batching.num_batch_threads + 1) * batching.execution_batch_size
    return max(REQUEST_THREADS_WITHOUT_BATCHING, min(wanted, MAX_AUTOMATIC_REQUEST_THREADS))


def _warn_if_batches_cannot_fill(flag: str, threads: int, batching, automatic: int) -> None:
    """One line when a given number of request threads caps the batches below the batch size."""
    if batching is not None and 0 < threads < batching.execution_batch_size:
        logger.warning("%s %d lets %d requests in at once, so batches will hold at most %d rows of the %d allowed: "
                       "leave it out (%d with these batching parameters) or give at least %d.", flag, threads,
                       threads, threads, batching.execution_batch_size, automatic, batching.execution_batch_size)


def _shut_down(workers: list[futures.ThreadPoolExecutor], timeout_s: float) -> bool:
    """Shuts the thread pools down; whether their threads have ended within `timeout_s`."""
    waiting = threading.Thread(target=lambda: [pool.shutdown(wait=True) for pool in workers], daemon=True)
    waiting.start()
    waiting.join(timeout_s)
    return not waiting.is_alive()


def parse_channel_arguments(text: str) -> dict[str, int | str]:
    """`--grpc_channel_arguments` as TensorFlow Serving reads it: "key=value,...", values that are
    32-bit integers as ints; ValueError for an item that is not key=value.

    >>> parse_channel_arguments("grpc.max_receive_message_length=1048576,grpc.primary_user_agent=me")
    {'grpc.max_receive_message_length': 1048576, 'grpc.primary_user_agent': 'me'}
    """
    arguments: dict[str, int | str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ValueError(f"--grpc_channel_arguments: {item!r} is not key=value.")
        try:
            number = int(value)
        except ValueError:
            arguments[key] = value
        else:
            arguments[key] = number if -(2**31) <= number < 2**31 else value
    return arguments


def parse_bool(text: str) -> bool:
    """A boolean flag's value as TensorFlow Serving's flags take it: true/false, 1/0 (any case)."""
    value = {"true": True, "1": True, "false": False, "0": False}.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `serve`: those of `tensorflow_model_server`, plus `--host`, `--max_batch_size`
    and `--rest_api_max_body_bytes`."""
    parser.add_argument("--port", type=int, default=8500, help="gRPC port (default 8500; 0: a free port)")
    parser.add_argument("--rest_api_port", type=int, default=8501, help="REST port (default 8501; 0: a free port)")
    parser.add_argument("--model_name", default="default", help="the model's name in requests (default: default)")
    parser.add_argument("--model_base_path", metavar="DIR", help="directory holding <version>/saved_model.pb or "
                        "<version>/model.tflite (BASE/NAME of bert-tf export --out BASE --name NAME)")
    parser.add_argument(
        "--model_config_file", default="", metavar="FILE",
        help="a text ModelServerConfig listing models, version policies and labels (e.g. serving/models.config); "
        "replaces --model_name and --model_base_path",
    )
    parser.add_argument(
        "--model_config_file_poll_wait_seconds", type=float, default=0, metavar="SECONDS",
        help="seconds between reads of --model_config_file (default 0: read once)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)")
    parser.add_argument(
        "--file_system_poll_wait_seconds", type=float, default=1.0, metavar="SECONDS",
        help="seconds between scans of the base paths for new versions (default 1; 0: only at start)",
    )
    parser.add_argument(
        "--max_num_load_retries", type=int, default=DEFAULT_MAX_NUM_LOAD_RETRIES, metavar="N",
        help=f"retries of a failed load before giving up (default {DEFAULT_MAX_NUM_LOAD_RETRIES})",
    )
    parser.add_argument(
        "--load_retry_interval_micros", type=int, default=DEFAULT_LOAD_RETRY_INTERVAL_MICROS, metavar="MICROS",
        help=f"microseconds between those retries (default {DEFAULT_LOAD_RETRY_INTERVAL_MICROS}: 1 minute)",
    )
    parser.add_argument(
        "--allow_version_labels_for_unavailable_models", type=parse_bool, nargs="?", const=True, default=False,
        metavar="BOOL", help="let a new version label point at a version not loaded yet (default false)",
    )
    parser.add_argument(
        "--prefer_tflite_model", type=parse_bool, nargs="?", const=True, default=False, metavar="BOOL",
        help="serve a version's model.tflite, not its SavedModel, when it has both (default false)",
    )
    parser.add_argument(
        "--enable_model_warmup", type=parse_bool, nargs="?", const=True, default=True, metavar="BOOL",
        help="replay a version's assets.extra/tf_serving_warmup_requests (bert-tf export writes them) before it "
             "serves, so that its first request does not wait for the graph to be built (default true)",
    )
    parser.add_argument(
        "--enable_batching", type=parse_bool, nargs="?", const=True, default=False, metavar="BOOL",
        help="merge concurrent requests into one model call per model version and signature (default false)",
    )
    parser.add_argument(
        "--batching_parameters_file", default="", metavar="FILE",
        help="a text BatchingParameters (max_batch_size, batch_timeout_micros, max_enqueued_batches, "
             "num_batch_threads, allowed_batch_sizes, pad_variable_length_inputs), as TensorFlow Serving's; "
             "needs --enable_batching (default: TF Serving's defaults)",
    )
    parser.add_argument(
        "--max_batch_size", type=int, default=DEFAULT_MAX_BATCH_SIZE,
        help=f"refuse batches of more rows (default {DEFAULT_MAX_BATCH_SIZE}; 0: no limit)",
    )
    parser.add_argument(
        "--max_request_text_bytes", type=int, default=DEFAULT_MAX_REQUEST_TEXT_BYTES,
        help=f"refuse requests holding more bytes of text in all (default {DEFAULT_MAX_REQUEST_TEXT_BYTES}: 1 MiB; "
             "0: no limit)",
    )
    parser.add_argument(
        "--grpc_max_threads", type=int, default=0,
        help="gRPC requests served at once (default 0: 8, or with --enable_batching enough to fill a batch while "
             "every batch thread runs one: (num_batch_threads + 1) × max_batch_size, at most 1024)")
    parser.add_argument(
        "--grpc_channel_arguments", default="",
        help="gRPC server arguments, key=value,...; requests are limited to 64 MiB unless "
        "grpc.max_receive_message_length=BYTES is given",
    )
    parser.add_argument("--rest_api_num_threads", type=int, default=0,
                        help="REST requests served at once (default 0: as --grpc_max_threads)")
    parser.add_argument(
        "--rest_api_timeout_in_ms", type=int, default=30_000,
        help="close a REST connection that sends nothing for this long, mid-request or idle (default 30000)",
    )
    parser.add_argument(
        "--rest_api_max_body_bytes", type=int, default=DEFAULT_REST_MAX_BODY_BYTES,
        help=f"refuse larger REST bodies with 413 (default {DEFAULT_REST_MAX_BODY_BYTES}: 8 MiB)",
    )
    parser.add_argument(
        "--tensorflow_intra_op_parallelism", type=int, default=0,
        help="threads one TensorFlow op of a SavedModel may use (default 0: one per core); with request batching, "
        "1 and num_batch_threads = cores keeps batches from stalling each other",
    )
    parser.add_argument("--tensorflow_inter_op_parallelism", type=int, default=0,
                        help="TensorFlow ops run at once (default 0: TensorFlow's choice)")
    parser.add_argument(
        "--monitoring_config_file", default="", metavar="FILE",
        help='a text MonitoringConfig; with prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" } '
             "the REST port answers TF Serving's metrics (request counts and latencies per model, batch queuing) as "
             "Prometheus text at that path")


def set_tensorflow_threads(intra_op: int, inter_op: int) -> None:
    """TensorFlow Serving's `--tensorflow_intra_op_parallelism` and `--tensorflow_inter_op_parallelism` (0: TensorFlow's
    choice), for this process's SavedModels (TFLite versions use LiteRT's threads); call it before any model loads.

    >>> set_tensorflow_threads(1, 0)  # doctest: +SKIP
    """
    if intra_op < 0 or inter_op < 0:
        raise ValueError("--tensorflow_intra_op_parallelism and --tensorflow_inter_op_parallelism must be ≥ 0.")
    import tensorflow as tf

    if intra_op:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op)
    if inter_op:
        tf.config.threading.set_inter_op_parallelism_threads(inter_op)


def batching_parameters(enable_batching: bool, parameters_file: str):
    """The `BatchingParameters` of the flags, or None without `--enable_batching`; a parameters file without it is
    an error, as in TensorFlow Serving."""
    from serving.server.batching import BatchingParameters, read_batching_parameters

    if not enable_batching:
        if parameters_file:
            raise ValueError("--batching_parameters_file is set without --enable_batching.")
        return None
    return read_batching_parameters(parameters_file) if parameters_file else BatchingParameters()


def build_server(args: argparse.Namespace) -> ModelServer:
    """The server the flags of `add_arguments` describe, not started yet."""
    if args.model_config_file and args.model_base_path:
        logger.warning("--model_config_file given: --model_name and --model_base_path are ignored.")
    return ModelServer(
        args.model_name,
        args.model_base_path,
        model_config_file=args.model_config_file or None,
        host=args.host,
        grpc_port=args.port,
        rest_port=args.rest_api_port,
        grpc_max_threads=args.grpc_max_threads,
        grpc_channel_arguments=parse_channel_arguments(args.grpc_channel_arguments),
        rest_num_threads=args.rest_api_num_threads,
        rest_timeout_s=args.rest_api_timeout_in_ms / 1000,
        rest_max_body_bytes=args.rest_api_max_body_bytes,
        monitoring_config_file=args.monitoring_config_file or None,
        poll_wait_s=args.file_system_poll_wait_seconds,
        model_config_poll_wait_s=args.model_config_file_poll_wait_seconds,
        max_num_load_retries=args.max_num_load_retries,
        load_retry_interval_s=args.load_retry_interval_micros / 1e6,
        allow_version_labels_for_unavailable_models=args.allow_version_labels_for_unavailable_models,
        prefer_tflite_model=args.prefer_tflite_model,
        enable_model_warmup=args.enable_model_warmup,
        max_batch_size=args.max_batch_size,
        max_request_text_bytes=args.max_request_text_bytes,
        batching=batching_parameters(args.enable_batching, args.batching_parameters_file),
    )


def run(args: argparse.Namespace) -> None:
    """Serves until interrupted (Ctrl-C or SIGTERM; a request still running a second after does not keep the
    process). Raises FileNotFoundError/ValueError/OSError on bad flags or folders (with what to do: e.g. a version
    folder given as the base path, a model directory not exported)."""
    server = build_server(args)
    set_tensorflow_threads(args.tensorflow_intra_op_parallelism, args.tensorflow_inter_op_parallelism)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops like Ctrl-C
    server.start()
    # This process is the server's: keep the loaded model's objects out of the garbage collector's
    # full passes, which otherwise stall every request for ~0.2 s now and then under load.
    gc.freeze()
    models = ", ".join(repr(name) for name in server.model_names)
    print(f"Serving {'model' if len(server.model_names) == 1 else 'models'} {models}: gRPC {args.host}:{server.grpc_port}, "
          f"REST {args.host}:{server.rest_port}. Ctrl-C stops.", flush=True)
    batching = server.options.batching
    if batching is not None:
        print(f"Request batching: up to {batching.execution_batch_size} rows per call, "
              f"{batching.batch_timeout_micros} µs timeout, {batching.max_enqueued_batches} batches queued, "
              f"{batching.num_batch_threads} threads per model version.", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        logger.info("Stopping.")
    finally:
        if not server.stop():  # Python would wait at exit for the request still running, however long it takes
            logger.warning("A request is still running after the server stopped: exiting without waiting for it.")
            logging.shutdown()
            sys.stdout.flush()
            os._exit(0)


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

