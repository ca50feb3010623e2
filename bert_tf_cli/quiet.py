"""Quiet TensorFlow for the command line: its C++ log level and Python loggers, and the native
start-up lines that its libraries write to stderr while they load, before any log level applies.

Example:
    >>> quiet_tensorflow()  # before TensorFlow is imported  # doctest: +SKIP
    >>> import tensorflow  # no "I0000 ... oneDNN custom operations are on" lines  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import os
import re
import sys

from serving.native_stderr import native_lines_dropped

# What TensorFlow's libraries log natively as they load: absl's header line and info/warning lines
# ("I0000 00:00:1795502979.633505   21176 port.cc:153] oneDNN custom operations are on ...").
NATIVE_START_UP_LINE = re.compile(r"WARNING: All log messages before absl::InitializeLog\(\)|[IW]\d{4} [\d:.]+ +\d+ ")


def quiet_tensorflow() -> None:
    """From here on: TensorFlow's C++ logging off (fatal errors only), the tensorflow, absl and keras Python
    loggers at ERROR, and the native start-up lines dropped when TensorFlow is first imported."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # read once, when TensorFlow's libraries load
    for name in ("tensorflow", "absl", "keras"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if "tensorflow" not in sys.modules and not any(isinstance(f, _QuietTensorFlowImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlowImport())


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` at its first import and loads it with its native start-up lines dropped."""

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
        with native_lines_dropped(NATIVE_START_UP_LINE):
            self.loader.exec_module(module)
