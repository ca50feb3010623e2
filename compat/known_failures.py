"""The failures the check expects, and why: `KNOWN_FAILURES`, `is_known`.

The int8 `model.tflite` (raw text or `--ids-only`) does not load in TensorFlow before 2.17:
"Didn't find op for builtin opcode 'FULLY_CONNECTED' version '12'". TensorFlow 2.21's converter
writes that version for a float32 matrix multiply with int8 weights quantized per output channel
(dynamic-range quantization, tensorflow/lite/tools/versioning/op_version.cc); the TFLite runtime of
TensorFlow 2.15 and 2.16 has no kernel for it, 2.17's has. Writing per-tensor weights instead,
which older runtimes read, would change the int8 model whose accuracy benchmarks/RESULTS.md
measured: not done. Serve it with TensorFlow (or TF Serving) 2.17 or newer, or serve a SavedModel.

Example:
    >>> is_known("int8", "2.16.2", Outcome(loads=False, error=f"tflite: ValueError: {FULLY_CONNECTED_12}."))
    True
    >>> is_known("int8", "2.17.1", Outcome(loads=False, error=f"tflite: ValueError: {FULLY_CONNECTED_12}."))
    False
"""

from __future__ import annotations

from compat.table import Outcome

FULLY_CONNECTED_12 = "Didn't find op for builtin opcode 'FULLY_CONNECTED' version '12'"
# {(export kind, TensorFlow major.minor): what its error says}
KNOWN_FAILURES = {(kind, version): FULLY_CONNECTED_12
                  for kind in ("int8", "int8-ids-only") for version in ("2.15", "2.16")}


def is_known(kind: str, version: str, outcome: Outcome) -> bool:
    """Whether `outcome` (not loading) is the failure documented for `kind` in TensorFlow `version` (x.y.z)."""
    expected = KNOWN_FAILURES.get((kind, minor_version(version)))
    return expected is not None and not outcome.loads and expected in outcome.error


def minor_version(version: str) -> str:
    """The major.minor of a version.

    >>> minor_version("2.16.2")
    '2.16'
    """
    return ".".join(version.split(".")[:2])
