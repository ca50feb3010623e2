"""Request batching, as TensorFlow Serving's `--enable_batching`: concurrent requests to one signature of one
model version are merged into one model call, and each caller gets its own rows back.

The parameters are TensorFlow Serving's `BatchingParameters`, read from the same text-format file
(`--batching_parameters_file`), with the same names, meanings and defaults:
- `max_batch_size` (1000): rows per model call. A request with more rows is split into calls of at
  most that many (and its rows joined again), as TF Serving with `enable_large_batch_splitting`.
  `max_execution_batch_size`, if set, bounds the calls instead.
- `batch_timeout_micros` (0): how long a batch that is not full waits for more requests. With 0 a
  batch goes as soon as a thread is free: requests merge while every thread is busy.
- `max_enqueued_batches` (10): batches waiting for a thread; a request that needs one more fails
  at once: UNAVAILABLE (REST 503).
- `num_batch_threads` (the cores): model calls at once, per model version.
- `allowed_batch_sizes`: a batch is padded up to the next of these sizes (rising, the last equal to
  the largest batch) with copies of its first row, so the model sees few shapes.
Each number must be within `RANGES` (TF Serving sets no bounds; past these a file hung the server or
started thousands of threads): a file outside them is refused in one line naming the field and its range.
- `pad_variable_length_inputs` (false): requests whose inputs differ in a dimension other than the
  first are padded to the longest, with each tensor's first element, as TF Serving pads them;
  without it, such requests are not merged with each other.
Outputs whose size depends on the batch beyond its rows (e.g. NER's per-word outputs) come back
padded to the longest request of the batch, as from TF Serving.

Isolation: a request is checked alone before it joins a batch; if a merged call fails anyway, each
of its requests is run alone, so a bad request fails by itself. A request whose gRPC deadline
passes while it waits is dropped from its batch (DEADLINE_EXCEEDED). An unexpected error in a batch
thread fails the batch it ran and every request waiting (INTERNAL), and the thread goes on: no
request waits for a thread that has gone. Signatures whose inputs or
outputs are not batch-major (`model_info`) run unbatched. Each version has its own threads
(TF Serving shares one pool among models).

Example:
    >>> parameters = read_batching_parameters("batching.txt")   # "max_batch_size { value: 32 }"  # doctest: +SKIP
    >>> batcher = Batcher(servable._run, servable.signature_defs, parameters)  # doctest: +SKIP
    >>> batcher.run("serving_default", {"text": np.array([b"a fine day"], dtype=object)})  # doctest: +SKIP
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable, Mapping

import grpc
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format, wrappers_pb2

from serving.server import monitoring
from serving.server.errors import ServingError

logger = logging.getLogger(__name__)

MAX_BATCH_ROWS = 2**16
# Each number's (lowest, highest, what the highest means).
RANGES = {
    "max_batch_size": (1, MAX_BATCH_ROWS, ""),
    "max_execution_batch_size": (1, MAX_BATCH_ROWS, ""),
    "batch_timeout_micros": (0, 10_000_000, " (10 s)"),
    "max_enqueued_batches": (1, 1_000_000, ""),
    "num_batch_threads": (1, 256, ""),
}


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """TensorFlow Serving's batching parameters that this server applies (module docstring)."""

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = dataclasses.field(default_factory=lambda: len(os.sched_getaffinity(0)))
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False
    max_execution_batch_size: int | None = None

    def __post_init__(self):
        for name, (lowest, highest, meaning) in RANGES.items():
            value = getattr(self, name)
            if value is not None and not lowest <= value <= highest:
                raise ValueError(f"{name} must be from {lowest} to {highest}{meaning}, got {value}.")
        sizes = list(self.allowed_batch_sizes)
        if sizes and (sizes != sorted(set(sizes)) or sizes[0] < 1 or sizes[-1] != self.execution_batch_size):
            raise ValueError(f"allowed_batch_sizes {sizes} must rise, and the last must be the largest batch "
                             f"({self.execution_batch_size}).")

    @property
    def execution_batch_size(self) -> int:
        """Rows per model call."""
        return self.max_execution_batch_size or self.max_batch_size


def read_batching_parameters(path: str | Path) -> BatchingParameters:
    """The parameters of a TensorFlow Serving `--batching_parameters_file` (text-format BatchingParameters);
    ValueError, naming the file, for one that does not parse or holds a number out of its range."""
    message = _batching_parameters_message()
    try:
        text_format.Parse(Path(path).read_text(encoding="utf-8"), message)
    except text_format.ParseError as error:
        raise ValueError(f"{path}: not a BatchingParameters text proto: {error}") from None
    values = {name: getattr(message, name).value for name in (
        "max_batch_size", "batch_timeout_micros", "max_enqueued_batches", "num_batch_threads",
        "max_execution_batch_size") if message.HasField(name)}
    if message.HasField("enable_large_batch_splitting") and not message.enable_large_batch_splitting.value:
        logger.warning("%s: enable_large_batch_splitting is false, but this server always splits large requests.",
                       path)
    try:
        return BatchingParameters(**values, allowed_batch_sizes=tuple(message.allowed_batch_sizes),
                                  pad_variable_length_inputs=message.pad_variable_length_inputs)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _batching_parameters_message():
    """An empty `tensorflow.serving.BatchingParameters` (the pip package has the APIs, not this proto): the fields
    by TF Serving's names and types, so that its files parse as TF Serving parses them."""
    proto = descriptor_pb2.FileDescriptorProto(name="bert_tf/batching_parameters.proto", package="tensorflow.serving",
                                               syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
    message = proto.message_type.add(name="BatchingParameters")
    wrapped = {"max_batch_size": "Int64Value", "batch_timeout_micros": "Int64Value",
               "max_enqueued_batches": "Int64Value", "num_batch_threads": "Int64Value",
               "thread_pool_name": "StringValue", "enable_large_batch_splitting": "BoolValue",
               "max_execution_batch_size": "Int64Value"}
    field = descriptor_pb2.FieldDescriptorProto
    for number, (name, kind) in enumerate(wrapped.items(), start=1):
        message.field.add(name=name, number=number, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                          type_name=f".google.protobuf.{kind}")
    message.field.add(name="allowed_batch_sizes", number=20, type=field.TYPE_INT64, label=field.LABEL_REPEATED)
    message.field.add(name="pad_variable_length_inputs", number=21, type=field.TYPE_BOOL, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters"))()


Run = Callable[[str, Mapping[str, np.ndarray], list], Mapping[str, np.ndarray]]


@dataclasses.dataclass(eq=False)
class _Request:
    """Rows of one request (all of it, or one part of a large one) waiting for their batch."""

    inputs: Mapping[str, np.ndarray]
    rows: int
    deadline: float | None
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    outputs: Mapping[str, np.ndarray] | None = None
    error: ServingError | None = None
    abandoned: bool = False  # its caller stopped waiting (deadline)
    queued_at: float = dataclasses.field(default_factory=time.monotonic)

    def finish(self, outputs=None, error=None) -> None:
        self.outputs, self.error = outputs, error
        self.done.set()


@dataclasses.dataclass
class _Queue:
    """One signature's batches: the open one, which requests join, and the closed ones waiting for a thread."""

    open: list[_Request] = dataclasses.field(default_factory=list)
    open_rows: int = 0
    open_since: float = 0.0
    closed: collections.deque = dataclasses.field(default_factory=collections.deque)


class Batcher:
    """Merges concurrent `run` calls per signature into calls of `run_model(signature, inputs, outputs)`."""

    def __init__(self, run_model: Run, signature_defs, parameters: BatchingParameters, describe: str = ""):
        self.parameters = parameters
        self._run_model = run_model
        self._describe = describe
        self._batched = {name for name, signature in signature_defs.signature_def.items() if _batch_major(signature)}
        self._outputs = {name: list(signature_defs.signature_def[name].outputs) for name in self._batched}
        self._queues: dict[str, _Queue] = {name: _Queue() for name in self._batched}
        self._changed = threading.Condition()
        self._closing = False
        self._threads = [threading.Thread(target=self._work, name=f"batch-{index}", daemon=True)
                         for index in range(parameters.num_batch_threads)]
        for thread in self._threads:
            thread.start()

    def batches(self, signature: str) -> bool:
        """Whether requests to `signature` are batched (its inputs and outputs are batch-major)."""
        return signature in self._batched and not self._closing

    def run(self, signature: str, inputs: Mapping[str, np.ndarray], deadline: float | None = None
            ) -> dict[str, np.ndarray]:
        """Every output of `signature` for checked `inputs`, computed in a batch with other requests."""
        rows = len(next(iter(inputs.values())))
        size = self.parameters.execution_batch_size
        parts = [_Request({name: value[start:start + size] for name, value in inputs.items()},
                          min(size, rows - start), deadline) for start in range(0, rows, size)] or [
            _Request(inputs, 0, deadline)]
        with self._changed:
            needed = sum(1 for _ in self._new_batches(self._queues[signature], parts))
            if needed and self._waiting_batches() + needed > self.parameters.max_enqueued_batches:
                raise ServingError(grpc.StatusCode.UNAVAILABLE,
                                   "The batch scheduling queue to which this task was submitted is full "
                                   f"(max_enqueued_batches {self.parameters.max_enqueued_batches}).")
            for part in parts:
                self._enqueue(self._queues[signature], part)
            self._changed.notify_all()
        for part in parts:
            left = None if deadline is None else deadline - time.monotonic()
            if not part.done.wait(left):
                part.abandoned = True
                raise ServingError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline exceeded while waiting for a batch.")
            if part.error is not None:
                raise part.error
        if len(parts) == 1:
            return dict(parts[0].outputs)
        return {name: _joined([part.outputs[name] for part in parts]) for name in parts[0].outputs}

    def close(self) -> None:
        """Lets the threads end once the batches waiting are done; later requests run unbatched."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()

    # ----- under `_changed` ----------------------------------------------------------------

    def _new_batches(self, queue: _Queue, parts: list[_Request]):
        """The batches that `parts` would open (one per yield), without changing `queue`."""
        rows, shape = queue.open_rows, _shape_key(queue.open[0]) if queue.open else None
        for part in parts:
            if rows == 0 or not self._fits(rows, shape, part):
                yield part
                rows, shape = 0, _shape_key(part)
            rows += part.rows

    def _fits(self, rows: int, shape, part: _Request) -> bool:
        same_shape = self.parameters.pad_variable_length_inputs or shape == _shape_key(part)
        return same_shape and rows + part.rows <= self.parameters.execution_batch_size

    def _enqueue(self, queue: _Queue, part: _Request) -> None:
        if queue.open and not self._fits(queue.open_rows, _shape_key(queue.open[0]), part):
            queue.closed.append(queue.open)
            queue.open, queue.open_rows = [], 0
        if not queue.open:
            queue.open_since = time.monotonic()
        queue.open.append(part)
        queue.open_rows += part.rows

    def _waiting_batches(self) -> int:
        return sum(len(queue.closed) + bool(queue.open) for queue in self._queues.values())

    def _next_batch(self) -> tuple[str, list[_Request]] | float | None:
        """A batch to run (signature, requests), or the seconds until an open batch is due (None: none is)."""
        timeout = self.parameters.batch_timeout_micros / 1e6
        due_in = None
        for name, queue in self._queues.items():
            if queue.closed:
                return name, queue.closed.popleft()
            if queue.open:
                wait = queue.open_since + timeout - time.monotonic()
                if wait <= 0 or queue.open_rows >= self.parameters.execution_batch_size or self._closing:
                    batch, queue.open, queue.open_rows = queue.open, [], 0
                    return name, batch
                due_in = wait if due_in is None else min(due_in, wait)
        return due_in

    # ----- the batch threads -----------------------------------------------------------------

    def _work(self) -> None:
        """Runs batches until the batcher closes; an unexpected error fails the requests of the batch and those
        waiting (INTERNAL), and the thread goes on."""
        while True:
            batch = []
            try:
                taken = self._take_batch()
                if taken is None:
                    return
                signature, batch = taken
                self._run_batch(signature, batch)
            except Exception as error:  # a bug must not leave requests waiting for a thread that has gone
                logger.exception("A batch thread%s failed: failing its batch and the requests waiting.", self._describe)
                for part in batch + self._take_every_request():
                    if not part.done.is_set():
                        part.finish(error=_internal_error(error))

    def _take_batch(self) -> tuple[str, list[_Request]] | None:
        """The next batch to run (signature, requests), once there is one; None once closed with none left."""
        with self._changed:
            while True:
                taken = self._next_batch()
                if isinstance(taken, tuple):
                    return taken
                if taken is None and self._closing:
                    return None
                self._changed.wait(taken)

    def _take_every_request(self) -> list[_Request]:
        """Every request waiting in the queues, which it empties."""
        with self._changed:
            taken = [part for queue in self._queues.values() for batch in [queue.open, *queue.closed] for part in batch]
            self._queues = {name: _Queue() for name in self._queues}
        return taken

    def _run_batch(self, signature: str, batch: list[_Request]) -> None:
        now = time.monotonic()
        late = [part for part in batch if part.abandoned or (part.deadline is not None and part.deadline <= now)]
        for part in late:
            part.finish(error=ServingError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline exceeded in the batch queue."))
        batch = [part for part in batch if part not in late]
        if not batch:
            return
        rows = sum(part.rows for part in batch)
        monitoring.record_batch([now - part.queued_at for part in batch])
        size = next((size for size in self.parameters.allowed_batch_sizes if size >= rows), rows)
        logger.info("Batch of %d row(s) from %d request(s)%s for %s%s.", rows, len(batch),
                    f", padded to {size}" if size > rows else "", signature, self._describe)
        try:
            outputs = self._run_model(signature, _merged([part.inputs for part in batch], size - rows),
                                      self._outputs[signature])
        except ServingError as error:
            if len(batch) == 1 and size == rows:
                batch[0].finish(error=error)
                return
            for part in batch:  # one bad request must not fail its neighbours: each runs alone
                self._run_alone(signature, part)
            return
        except Exception as error:  # a bug in the model must fail this batch only
            logger.exception("A batch for %s%s failed.", signature, self._describe)
            for part in batch:
                part.finish(error=_internal_error(error))
            return
        start = 0
        for part in batch:
            part.finish({name: np.asarray(value)[start:start + part.rows] for name, value in outputs.items()})
            start += part.rows

    def _run_alone(self, signature: str, part: _Request) -> None:
        try:
            part.finish(dict(self._run_model(signature, part.inputs, self._outputs[signature])))
        except ServingError as error:
            part.finish(error=error)


def _internal_error(error: Exception) -> ServingError:
    return ServingError(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


def _batch_major(signature) -> bool:
    """Whether every input and output of a SignatureDef has a first dimension of any size (the batch)."""
    tensors = list(signature.inputs.values()) + list(signature.outputs.values())
    return bool(signature.inputs) and all(
        not info.tensor_shape.unknown_rank and info.tensor_shape.dim and info.tensor_shape.dim[0].size == -1
        for info in tensors)


def _shape_key(part: _Request) -> tuple:
    return tuple(sorted((name, np.shape(value)[1:]) for name, value in part.inputs.items()))


def _merged(requests: list[Mapping[str, np.ndarray]], padding_rows: int) -> dict[str, np.ndarray]:
    """The requests' inputs joined along the rows, each padded to the longest (with its first element), and
    `padding_rows` copies of the first row after them."""
    merged = {}
    for name in requests[0]:
        values = [np.asarray(request[name]) for request in requests]
        longest = np.max([value.shape[1:] for value in values], axis=0) if values[0].ndim > 1 else ()
        padded = [_padded(value, longest, value.flat[0] if value.size else 0) for value in values]
        joined = np.concatenate(padded)
        if padding_rows:
            joined = np.concatenate([joined, np.repeat(joined[:1], padding_rows, axis=0)])
        merged[name] = joined
    return merged


def _padded(value: np.ndarray, shape, fill) -> np.ndarray:
    """`value` [rows, ...] padded with `fill` to [rows, *shape]."""
    missing = [(0, 0)] + [(0, int(want) - have) for want, have in zip(shape, value.shape[1:])]
    if not any(after for _, after in missing):
        return value
    if value.dtype == object:
        out = np.full((value.shape[0], *map(int, shape)), fill, dtype=object)
        out[tuple(slice(0, size) for size in value.shape)] = value
        return out
    return np.pad(value, missing, constant_values=fill)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts of one request's output joined along the rows, each padded to the longest ("" or 0 after its end)."""
    parts = [np.asarray(part) for part in parts]
    if parts[0].ndim < 2:
        return np.concatenate(parts)
    longest = np.max([part.shape[1:] for part in parts], axis=0)
    return np.concatenate([_padded(part, longest, b"" if part.dtype == object else 0) for part in parts])
