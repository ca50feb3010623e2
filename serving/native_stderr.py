"""Lines that native libraries write straight to the process's stderr (file descriptor 2), filtered.

TensorFlow's libraries log as they load, and LiteRT prints "INFO: Created TensorFlow Lite
XNNPACK delegate for CPU." when it prepares a model, from C++ and before (or without) any log
level applying; the only way to keep a quiet command quiet is to catch file descriptor 2 while
that code runs and write back the lines that are not noise.

Example:
    >>> with native_lines_dropped(re.compile(r"INFO: ")):  # doctest: +SKIP
    ...     interpreter.allocate_tensors()
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile


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
