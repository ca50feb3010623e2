"""Quiet TensorFlow for the command line: its C++ log level and Python loggers, and the native
start-up lines that its libraries write to stderr while they load, before any log level applies
(`bert_tf.native_stderr`, which `import serving` sets up without importing TensorFlow).

Example:
    >>> quiet_tensorflow()  # before TensorFlow is imported  # doctest: +SKIP
    >>> import tensorflow  # no "I0000 ... oneDNN custom operations are on" lines  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os


def quiet_tensorflow() -> None:
    """From here on: TensorFlow's C++ logging off (fatal errors only), the tensorflow, absl and keras Python
    loggers at ERROR, and its native start-up lines dropped (`import serving` sets that up)."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # read once, when TensorFlow's libraries load
    for name in ("tensorflow", "absl", "keras"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import serving  # noqa: F401  (bert_tf.native_stderr, without importing TensorFlow)


def show_tensorflow_logs() -> None:
    """`-v`: every line TensorFlow logs, its start-up lines included."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
