"""Distribution strategies by name, and who writes files in a multi-worker run."""

from __future__ import annotations

import json
import os

import tensorflow as tf

STRATEGY_NAMES = ("default", "mirrored", "multi_worker")


def make_strategy(name: str = "default") -> tf.distribute.Strategy:
    """`"default"` (one device), `"mirrored"` (all local GPUs, else all logical CPUs) or `"multi_worker"`
    (the hosts in `TF_CONFIG`)."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.MirroredStrategy([d.name for d in gpus or tf.config.list_logical_devices("CPU")])
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "strategy 'multi_worker' needs the TF_CONFIG environment variable (the cluster's workers and this "
                'worker\'s index), e.g. {"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                '"task": {"type": "worker", "index": 0}}.'
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"Unknown strategy {name!r}; use one of {list(STRATEGY_NAMES)}.")


def check_batches(strategy: tf.distribute.Strategy, global_batch_size: int, name: str = "global_batch_size") -> None:
    """A one-line ValueError unless global batches of `global_batch_size` split evenly over the replicas of `strategy`
    (`name`: how the message calls the setting).

    Example:
        >>> check_batches(tf.distribute.get_strategy(), 32)  # one device: any size
    """
    replicas = strategy.num_replicas_in_sync
    if global_batch_size % replicas:
        raise ValueError(f"{name} {global_batch_size}, the global batch, is not divisible by the {replicas} replicas.")


def check_xla(strategy: tf.distribute.Strategy, jit_compile: bool, name: str = "jit_compile (--xla)") -> None:
    """A one-line ValueError where XLA cannot compile the training step of `strategy`'s replicas: several on this
    host's CPUs (logical devices), because XLA's CPU backend runs every compiled step on the first CPU, out of reach
    of the other replicas' variables. One device, GPUs, and one CPU per worker of a multi-worker run compile.

    Example:
        >>> check_xla(tf.distribute.get_strategy(), jit_compile=True)  # one device
    """
    if not jit_compile or strategy.num_replicas_in_sync == 1:
        return
    devices = strategy.extended.worker_devices
    if len(devices) > 1 and all(tf.DeviceSpec.from_string(d).device_type == "CPU" for d in devices):
        raise ValueError(f"{name} cannot compile for {len(devices)} replicas on this host's CPUs: XLA's CPU backend "
                         "runs every compiled step on the first CPU. Leave it off here; it compiles on GPUs and with "
                         "one CPU per worker (--strategy multi_worker).")


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that owns checkpoints, summaries and console output (the only one without TF_CONFIG)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    has_chief = "chief" in json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    return resolver.task_type == "chief" or (not has_chief and resolver.task_type == "worker" and resolver.task_id == 0)


def worker_directory(directory: str, strategy: tf.distribute.Strategy) -> str:
    """Where this worker writes: `directory` on the chief, a private temporary folder elsewhere.

    Every worker of a multi-worker run must take part in saving a checkpoint, but only the
    chief's copy is kept.
    """
    if is_chief(strategy):
        return directory
    return os.path.join(directory, f".worker_{strategy.cluster_resolver.task_id}_tmp")
