"""This machine's matrix-multiply peak, measured so that it is an honest ceiling for BERT.

Why a naive check underestimates it (one numpy or eager `tf.matmul` of 2048², timed once):
- numpy multiplies with OpenBLAS, TensorFlow with oneDNN: different libraries and kernels
  (numpy's is much slower here), so numpy says nothing about what TensorFlow reaches.
- A single eager call pays oneDNN's kernel creation, thread-pool wake-up and Python dispatch.
- On a shared machine, one short call catches whatever else runs at that moment: with two
  cores, one busy core halves a two-thread product.
So the peak is timed as chains of dependent products inside one `tf.function` (each product
feeds the next, so none can be skipped or merged; ~60 GFLOP per call), at BERT's own shapes
and at large square ones, interleaved over several rounds; the peak is the best call of the
best shape (`Timing.best`), and, less disturbed by other processes, the median rate per CPU
second (`Timing.cpu_median`). `benchmarks.inference` times that best chain again in the same
rounds as the models it compares with it, so that both see the machine in the same state. `float32_error` checks that float32 products really are float32
(oneDNN would use bfloat16 arithmetic with ONEDNN_DEFAULT_FPMATH_MODE=BF16).

Example:
    >>> from benchmarks.harness import interleaved
    >>> timings = interleaved(peak_contenders([(256, 256, 256)], gflop_per_call=0.1), rounds=2)
    >>> timings["[256,256]x[256,256] float32"].best > 0  # GFLOP/s
    True
"""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

from benchmarks.harness import Contender


def chain(m: int, k: int, n: int, iterations: int, dtype=tf.float32):
    """(`run()`, flops per call): `iterations` dependent products [m,k]x[k,n] (and [m,n]x[n,k] back when n≠k)."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((m, k)), dtype)
    # Scaled so that values keep their size along the chain (no overflow, no denormals).
    forth = tf.constant(rng.standard_normal((k, n)) / np.sqrt(k), dtype)
    back = tf.constant(rng.standard_normal((n, k)) / np.sqrt(n), dtype)

    matrices = [forth] if k == n else [forth, back]

    @tf.function
    def run():
        y = x
        for index in range(iterations):
            y = tf.matmul(y, matrices[index % len(matrices)])
        return tf.reduce_sum(y[:1, :1])

    flops = 2 * m * k * n * iterations
    return (lambda: run().numpy()), flops


def iterations_for(m: int, k: int, n: int, gflop_per_call: float) -> int:
    """Products per chain so that one call does about `gflop_per_call` GFLOP (at least 2)."""
    return max(2, round(gflop_per_call * 1e9 / (2 * m * k * n)))


def shape_name(m: int, k: int, n: int, dtype=tf.float32) -> str:
    chain_of = f"[{m},{k}]x[{k},{n}]" + ("" if k == n else f"x[{n},{k}]")
    return f"{chain_of} {tf.as_dtype(dtype).name}"


def peak_contenders(shapes, gflop_per_call: float = 60.0, dtype=tf.float32) -> list[Contender]:
    """One contender per (m, k, n) chain; its items are GFLOP, so its rates are GFLOP/s."""
    contenders = []
    for m, k, n in shapes:
        run, flops = chain(m, k, n, iterations_for(m, k, n, gflop_per_call), dtype)
        contenders.append(Contender(shape_name(m, k, n, dtype), run, items=flops / 1e9))
    return contenders


def naive_checks(size: int = 2048) -> dict:
    """The quick checks that mislead: one timed numpy product, and eager TF products (first and warm)."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((size, size), np.float32), rng.standard_normal((size, size), np.float32)
    flops = 2 * size**3

    def timed(function):
        start = time.perf_counter()
        function()
        return flops / (time.perf_counter() - start) / 1e9

    ta, tb = tf.constant(a), tf.constant(b)
    first_eager = timed(lambda: tf.matmul(ta, tb).numpy())
    warm_eager = max(timed(lambda: tf.matmul(ta, tb).numpy()) for _ in range(3))
    numpy_once = timed(lambda: a @ b)
    return {
        f"numpy (OpenBLAS) {size}², one call": numpy_once,
        f"tf.matmul {size}² eager, first call": first_eager,
        f"tf.matmul {size}² eager, best of 3 warm calls": warm_eager,
    }


def float32_error() -> float:
    """Largest relative error of a TF float32 product [1024,768]x[768,3072] against float64 (1e-6: float32; 1e-3: bfloat16)."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((1024, 768)), rng.standard_normal((768, 3072))
    exact = a @ b
    product = tf.matmul(tf.constant(a, tf.float32), tf.constant(b, tf.float32)).numpy()
    return float(np.abs(product - exact).max() / np.abs(exact).max())
