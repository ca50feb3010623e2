"""Mixed precision for a training run: which policies there are, which this machine takes, and building under one.

Example:
    >>> mixed_precision_error("mixed_bfloat16") is None
    True
    >>> with global_policy("mixed_bfloat16"):  # doctest: +SKIP
    ...     model = build_model()  # computes in bfloat16, keeps float32 weights
"""

from __future__ import annotations

import contextlib

import keras
import tensorflow as tf

MIXED_PRECISION_POLICIES = (None, "mixed_float16", "mixed_bfloat16")


def mixed_precision_error(policy: str | None) -> str | None:
    """Why a run cannot train under `policy` here (an unknown name; mixed_float16 without a GPU), or None."""
    if policy not in MIXED_PRECISION_POLICIES:
        return f"mixed_precision must be one of {list(MIXED_PRECISION_POLICIES)}, got {policy!r}."
    if policy == "mixed_float16" and not tf.config.list_physical_devices("GPU"):
        return ("mixed_precision mixed_float16 needs a GPU (CPUs compute float16 slowly and gain nothing); train in float32 here, "
                "or use mixed_bfloat16 on CPUs with bfloat16 units.")
    return None


@contextlib.contextmanager
def global_policy(policy: str | None):
    """Keras' global dtype policy is `policy` (None: left as it is) inside the block, and what it was after it."""
    previous = keras.mixed_precision.global_policy()
    if policy:
        keras.mixed_precision.set_global_policy(policy)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
