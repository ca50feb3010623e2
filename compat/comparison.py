"""`compare`: how far one TensorFlow's answers to an export are from the project's, within its precision's tolerance.

The tolerances, absolute, on every float output (probabilities, logits, embeddings, scores):
- float32: 1e-5, as the tests hold the SavedModel to the Keras model;
- bf16: 2**-6, two bfloat16 steps at 1.0 (bfloat16 keeps 8 bits of mantissa: its step at 1.0 is 2**-7);
- int8: 0.02, the bound the tests hold an int8 model to against float32 (tests/test_quantized_export.py):
  the weights are the same int8 numbers in every version, only the runtime's kernels could differ.
Every other output (strings, ids, tags, answer offsets) must be equal, and every output the project's
TensorFlow gave must be there, with the same shape.

Example:
    >>> reference = {"tflite/serving_default/probabilities": np.array([0.25, 0.75], np.float32),
    ...              "tflite/serving_default/label_names": np.array([b"neg", b"pos"])}
    >>> compare(reference, {**reference, "tflite/serving_default/probabilities": np.array([0.25, 0.7500001])},
    ...         "float32")
    Agreement(max_difference=1e-07, mismatches=())
    >>> compare(reference, {"tflite/serving_default/probabilities": np.array([0.3, 0.7])}, "float32").mismatches
    ('tflite/serving_default/label_names is missing', 'tflite/serving_default/probabilities differs by 0.05')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOLERANCES = {"float32": 1e-5, "bf16": 2 ** -6, "int8": 0.02}


@dataclass(frozen=True)
class Agreement:
    """The largest difference over the float outputs, and what is beyond the tolerance or not equal."""

    max_difference: float
    mismatches: tuple[str, ...] = ()


def compare(reference: dict[str, np.ndarray], answers: dict[str, np.ndarray], precision: str) -> Agreement:
    """`answers` against `reference` (both {reader/signature/output: array} for one export) at `precision`'s
    tolerance (`TOLERANCES`)."""
    tolerance = TOLERANCES[precision]
    largest, mismatches = 0.0, []
    for key, expected in sorted(reference.items()):
        actual = answers.get(key)
        if actual is None:
            mismatches.append(f"{key} is missing")
        elif actual.shape != expected.shape:
            mismatches.append(f"{key} has shape {actual.shape}, not {expected.shape}")
        elif expected.dtype.kind == "f":
            difference = float(largest_difference(expected, actual))
            largest = max(largest, difference)
            if difference > tolerance:
                mismatches.append(f"{key} differs by {difference:.2g}")
        elif not np.array_equal(actual, expected):
            mismatches.append(f"{key} differs")
    return Agreement(round(largest, 12), tuple(mismatches))


def largest_difference(expected: np.ndarray, actual: np.ndarray) -> float:
    """The largest absolute difference; NaN where both are NaN counts as equal, NaN against a number as infinite.

    >>> largest_difference(np.array([1.0, np.nan]), np.array([1.5, np.nan]))
    0.5
    >>> largest_difference(np.array([1.0]), np.array([np.nan]))
    inf
    """
    gap = np.abs(expected.astype(np.float64) - actual.astype(np.float64))
    gap[np.isnan(expected) & np.isnan(actual)] = 0.0
    return float(np.nan_to_num(gap, nan=np.inf).max(initial=0.0))
