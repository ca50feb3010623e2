"""Lines that native libraries write straight to the process's stderr (file descriptor 2), filtered.

TensorFlow's libraries log as they load, and LiteRT prints "INFO: Created TensorFlow Lite
XNNPACK delegate for CPU." when it prepares a model, from C++ and before (or without) any log
level applying; the only way to keep a quiet command quiet is to catch file descriptor 2 while
that code runs and write back the lines that are not noise.

`quiet_tensorflow_start_up()` drops TensorFlow's start-up lines (absl's "WARNING: All log messages
before absl::InitializeLog()", the oneDNN and CUDA-driver notices, the "failed call to cuInit ...
(303)" of a machine without a GPU) when TensorFlow is first imported; errors still show. The cuInit
line comes when TensorFlow first looks for GPUs, at its first op, in the user's code: so the import
looks for them, filtered, and TensorFlow keeps what it found (a GPU machine finds its GPUs, silently,
and logs as before when it uses them). `import
bert_tf` calls it, and so does `import serving` (which loads this file on its own: `import
bert_tf.native_stderr` would first run bert_tf/__init__, which imports TensorFlow). Only the
standard library here.

Example:
    >>> with native_lines_dropped(re.compile(r"INFO: ")):  # doctest: +SKIP
    ...     interpreter.allocate_tensors()
    >>> quiet_tensorflow_start_up()  # before TensorFlow is imported  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile

# What TensorFlow's libraries log natively as they load: absl's header line, info/warning lines
# ("I0000 00:00:1795502979.633505   21176 port.cc:153] oneDNN custom operations are on ..."), the
# CPU-feature notice's second line, and the CUDA error of a machine that has the driver but no GPU.
TENSORFLOW_START_UP_LINE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\)|[IW]\d{4} [\d:.]+ +\d+ |To enable the following "
    r"instructions: .* rebuild TensorFlow|E\d{4} [\d:.]+ +\d+ cuda_\w+\.cc:\d+\] failed call to cuInit: .*\(303\)")


@contextlib.contextmanager
def native_lines_dropped(noise: re.Pattern):
    """Runs the block with stderr (file descriptor 2) captured, then writes back the lines `noise` does not match."""
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        stderr = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(stderr, 2)
            os.close(stderr)
            captured.seek(0)
            for line in captured.read().decode("utf-8", errors="replace").splitlines(keepends=True):
                if not noise.match(line):
                    sys.stderr.write(line)


def quiet_tensorflow_start_up() -> None:
    """Drops TensorFlow's native start-up lines (`TENSORFLOW_START_UP_LINE`) when it is first imported, if it is
    not yet; other lines pass. `TF_CPP_MIN_LOG_LEVEL=0` (every TensorFlow log line) keeps them too."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        return
    if "tensorflow" not in sys.modules and not any(getattr(f, "quiets_tensorflow", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowImport())


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` at its first import and loads it with its native start-up lines dropped."""

    quiets_tensorflow = True

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _StartUpLinesDropped(spec.loader)
        return spec


class _StartUpLinesDropped:
    """`loader`, with stderr filtered while it runs the module."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):  # everything but the two methods below is the wrapped loader's
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        with native_lines_dropped(TENSORFLOW_START_UP_LINE):
            self.loader.exec_module(module)
            module.config.list_physical_devices("GPU")  # TensorFlow's search for GPUs, which says cuInit failed
