"""TensorFlow Serving's monitoring: `--monitoring_config_file` and its metrics, as Prometheus text on the REST port.

With a monitoring config file that enables Prometheus (TF Serving's text `MonitoringConfig`,
tensorflow_serving/config/monitoring_config.proto):

    prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" }

`GET path` on the REST port answers the metrics below under TensorFlow Serving's own names, labels
and buckets, so that dashboards and alerts made for TF Serving work against this server:
- `:tensorflow:serving:request_count{model_name, status}`: Predict and Classify requests over gRPC and REST, by
  their status code name ("OK", "INVALID_ARGUMENT", ...) (tensorflow_serving/servables/tensorflow/util.cc,
  RecordModelRequestCount);
- `:tensorflow:serving:request_latency{model_name, API, entrypoint}`: the wall time of each successful request in
  microseconds, API "Predict" or "Classify", entrypoint "GRPC" or "REST" (util.cc, RecordRequestLatency; the calls
  in tensorflow_serving/model_servers/prediction_service_impl.cc);
- with `--enable_batching`, `:tensorflow:serving:batching_session:queuing_latency{thread_pool_name}` (microseconds
  a request waited for its batch, thread pool "batch_threads", TF's shared batch scheduler's default name) and
  `:tensorflow:serving:batching_session:wrapped_run_count` (model calls that ran a batch)
  (tensorflow_serving/batching/batching_session.cc).
TF Serving labels requests by model and API, not by signature; so does this. The page is written as TF Serving's
exporter writes it (tensorflow_serving/util/prometheus_exporter.cc: "/" in names becomes ":", a `# TYPE` line per
metric, histogram buckets cumulative with TF's bucket limits, the last "+Inf", numbers as C++ prints them). It is
written here rather than with prometheus_client, which names, orders and formats buckets its own way (le="10.0",
`_created` samples), and for four metrics the text format is a few lines.

Metrics are process-wide, as in TF Serving (one registry, `REGISTRY`).

Example:
    >>> registry = Registry()
    >>> count = registry.add(Counter("/tensorflow/serving/request_count", "The total number of requests.",
    ...                              ("model_name", "status")))
    >>> count.increment("demo", "OK")
    >>> print(registry.page(), end="")
    # TYPE :tensorflow:serving:request_count counter
    :tensorflow:serving:request_count{model_name="demo",status="OK"} 1
"""

from __future__ import annotations

import bisect
import re
import threading
from pathlib import Path

PROMETHEUS_PATH = "/monitoring/prometheus/metrics"  # PrometheusExporter::kPrometheusPath, when the config has none
BATCH_THREAD_POOL = "batch_threads"


def exponential_buckets(scale: float, growth: float, count: int) -> tuple[float, ...]:
    """TensorFlow's `monitoring::Buckets::Exponential(scale, growth, count)` limits, and the last one, infinity.

    >>> exponential_buckets(10, 1.8, 3)
    (10, 18.0, 32.4, inf)
    """
    limits, bound = [], scale
    for _ in range(count):
        limits.append(bound)
        bound *= growth
    return (*limits, float("inf"))


def _number(value: float) -> str:
    """As absl::StrCat prints a double (six significant digits): 10, 32.4, 1e+06."""
    return "+Inf" if value == float("inf") else f"{value:.6g}"


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    escaped = (value.replace("\\", "\\\\").replace('"', '\\"') for value in values)
    return ",".join(f'{re.sub("[^a-zA-Z0-9]", "_", name)}="{value}"' for name, value in zip(names, escaped))


def _prometheus_name(name: str) -> str:
    return re.sub("[^a-zA-Z0-9_]", ":", name)


class Counter:
    """A count per combination of label values (TensorFlow's `monitoring::Counter<N>`)."""

    def __init__(self, name: str, description: str, label_names: tuple[str, ...] = ()):
        self.name, self.description, self.label_names = name, description, label_names
        self._counts: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()

    def increment(self, *labels: str, by: int = 1) -> None:
        with self._lock:
            self._counts[labels] = self._counts.get(labels, 0) + by

    def lines(self) -> list[str]:
        name = _prometheus_name(self.name)
        with self._lock:
            counts = sorted(self._counts.items())
        return [f"# TYPE {name} counter"] + [f"{name}{{{_labels(self.label_names, labels)}}} {count}"
                                              for labels, count in counts]


class Histogram:
    """Values per combination of label values, in buckets below `limits` (TensorFlow's `monitoring::Sampler<N>`:
    a value goes to the first bucket whose limit is above it)."""

    def __init__(self, name: str, description: str, label_names: tuple[str, ...], limits: tuple[float, ...]):
        self.name, self.description, self.label_names, self.limits = name, description, label_names, limits
        self._cells: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}  # labels -> (bucket counts, [sum])
        self._lock = threading.Lock()

    def observe(self, value: float, *labels: str) -> None:
        with self._lock:
            counts, total = self._cells.setdefault(labels, ([0] * len(self.limits), [0.0]))
            counts[min(bisect.bisect_right(self.limits, value), len(self.limits) - 1)] += 1
            total[0] += value

    def lines(self) -> list[str]:
        name = _prometheus_name(self.name)
        lines = [f"# TYPE {name} histogram"]
        with self._lock:
            cells = sorted((labels, (list(counts), total[0])) for labels, (counts, total) in self._cells.items())
        for labels, (counts, total) in cells:
            text = _labels(self.label_names, labels)
            prefix = f"{name}_bucket{{{text}{',' if text else ''}"
            cumulative = 0
            for limit, count in zip(self.limits, counts):
                cumulative += count
                lines.append(f'{prefix}le="{_number(limit)}"}} {cumulative}')
            lines += [f"{name}_sum{{{text}}} {_number(total)}", f"{name}_count{{{text}}} {cumulative}"]
        return lines


class Registry:
    """The metrics a page shows, in the order of their TensorFlow names (TF's CollectionRegistry)."""

    def __init__(self):
        self._metrics: dict[str, Counter | Histogram] = {}

    def add(self, metric):
        self._metrics[metric.name] = metric
        return metric

    def page(self) -> str:
        """The Prometheus text of every metric."""
        return "".join(f"{line}\n" for name in sorted(self._metrics) for line in self._metrics[name].lines())


REGISTRY = Registry()
REQUEST_COUNT = REGISTRY.add(Counter("/tensorflow/serving/request_count", "The total number of requests.",
                                     ("model_name", "status")))
REQUEST_LATENCY = REGISTRY.add(Histogram(
    "/tensorflow/serving/request_latency",
    "Distribution of wall time (in microseconds) for Tensorflow Serving request.", ("model_name", "API", "entrypoint"),
    exponential_buckets(10, 1.8, 33)))
QUEUING_LATENCY = REGISTRY.add(Histogram(
    "/tensorflow/serving/batching_session/queuing_latency", "Distribution of wall time spent (in microseconds) in "
    "queuing", ("thread_pool_name",), exponential_buckets(100, 1.2, 52)))
WRAPPED_RUN_COUNT = REGISTRY.add(Counter("/tensorflow/serving/batching_session/wrapped_run_count",
                                         "Total count of run calls on the wrapped session"))


def record_request(model_name: str, api: str, entrypoint: str, status: str, seconds: float) -> None:
    """A Predict or Classify request's count by status, and its latency when it succeeded (as TF Serving records)."""
    REQUEST_COUNT.increment(model_name, status)
    if status == "OK":
        REQUEST_LATENCY.observe(seconds * 1e6, model_name, api, entrypoint)


def record_batch(queued_seconds: list[float]) -> None:
    """A batch run: how long each of its requests waited for it."""
    WRAPPED_RUN_COUNT.increment()
    for seconds in queued_seconds:
        QUEUING_LATENCY.observe(seconds * 1e6, BATCH_THREAD_POOL)


def read_monitoring_config(path: str | Path) -> str | None:
    """The path that serves Prometheus text under `path`'s MonitoringConfig (text format), or None when it does not
    enable Prometheus. ValueError (naming the file, line and column) for a file that is not one.

    Example:
        >>> read_monitoring_config("monitoring.config")  # doctest: +SKIP
        '/monitoring/prometheus/metrics'
    """
    from google.protobuf import text_format

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"Monitoring config file not found: {path}") from None
    except (UnicodeDecodeError, IsADirectoryError) as error:
        raise ValueError(f"{path}: not a text MonitoringConfig ({error}).") from None
    config = _monitoring_config_class()()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as error:
        raise ValueError(f"{path}:{error}") from None
    prometheus = config.prometheus_config
    if not prometheus.enable:
        return None
    if prometheus.path and not prometheus.path.startswith("/"):
        raise ValueError(f"{path}: prometheus_config path must start with '/', got {prometheus.path!r}.")
    return prometheus.path or PROMETHEUS_PATH


def _monitoring_config_class():
    """tensorflow.serving.MonitoringConfig (tensorflow-serving-api ships no Python module for it): built from its
    two messages, in a descriptor pool of its own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="tensorflow_serving/config/monitoring_config.proto",
                                               package="tensorflow.serving", syntax="proto3")
    prometheus = proto.message_type.add(name="PrometheusConfig")
    prometheus.field.add(name="enable", number=1, type=field.TYPE_BOOL, label=field.LABEL_OPTIONAL)
    prometheus.field.add(name="path", number=2, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    monitoring = proto.message_type.add(name="MonitoringConfig")
    monitoring.field.add(name="prometheus_config", number=1, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                         type_name=".tensorflow.serving.PrometheusConfig")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.MonitoringConfig"))
