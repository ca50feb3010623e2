"""Work timed in a child process of its own: each model its own TensorFlow runtime, one call at a time.

Models timed together in one process share TensorFlow's thread pools, its op caches and the memory
allocator; in the distillation benchmark that halved the small students' measured speed (7 models × 4 paths in
one process: L2/H128 2.4× the teacher; each model alone: 5.3×). An `IsolatedCalls` child builds its calls once
and runs one of them per `run(name)`, while the parent times it with `benchmarks.harness.interleaved` as usual:
the rounds still interleave the contenders, only one child works at a time, and the pipe's round trip (~0.1 ms)
is small against the calls timed.

Example (the builder must be a module-level function, as the child is spawned):
    >>> from benchmarks.distillation import model_calls
    >>> with IsolatedCalls(model_calls, "models/sst2", "/tmp/exports", ["a fine day"]) as calls:  # doctest: +SKIP
    ...     calls.run("int8|32")
"""

from __future__ import annotations

import multiprocessing
import traceback
from typing import Callable

Calls = dict[str, Callable[[], object]]


class IsolatedCalls:
    """A spawned child that builds `(calls, info) = build(*args)` and runs `calls[name]()` on each `run(name)`;
    `info` (picklable: sizes, paths) is kept as `self.info`. A failure in the child is raised here as
    RuntimeError with the child's traceback."""

    def __init__(self, build: Callable[..., tuple[Calls, dict]], *args):
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, build, args), daemon=True)
        self._process.start()
        child.close()
        try:
            self.info = self._answer()
        except RuntimeError:
            self.close()
            raise

    def run(self, name: str) -> None:
        self._connection.send(name)
        self._answer()

    def _answer(self):
        try:
            status, value = self._connection.recv()
        except EOFError:
            raise RuntimeError(f"the child process died (exit code {self._process.exitcode})") from None
        if status == "error":
            raise RuntimeError(f"in the child process:\n{value}")
        return value

    def close(self) -> None:
        try:
            self._connection.send(None)
            self._process.join(timeout=30)
        except OSError:  # the child has gone already (BrokenPipeError)
            pass
        if self._process.is_alive():
            self._process.terminate()
        self._connection.close()

    def __enter__(self) -> "IsolatedCalls":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _serve(connection, build: Callable[..., tuple[Calls, dict]], args: tuple) -> None:
    """The child: builds the calls, then runs the one named in each message until it receives None (a failing
    call is reported and the child goes on; a failing build ends it)."""
    with connection:
        try:
            calls, info = build(*args)
        except Exception:  # noqa: BLE001 - reported to the parent, which raises it
            connection.send(("error", traceback.format_exc()))
            return
        connection.send(("ok", info))
        while (name := connection.recv()) is not None:
            try:
                calls[name]()
                connection.send(("ok", None))
            except Exception:  # noqa: BLE001
                connection.send(("error", traceback.format_exc()))
