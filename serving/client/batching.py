"""Client-side request preparation: inputs as numpy arrays, and a large request sent as chunks
of `max_batch_size` with the answers joined.

Lists are converted as `tf.constant` does (Python ints -> int32, floats -> float32, str ->
UTF-8 bytes); numpy arrays are sent as they are. Predict outputs whose first dimension is
the batch (size -1 in the signature) are concatenated along it; any other output (e.g.
label names of shape [k]) is taken from the first chunk.

Example:
    >>> import numpy as np
    >>> double = lambda inputs: {"y": inputs["x"] * 2}
    >>> predict_in_batches(double, {"x": np.arange(5)}, 2, batch_major=lambda: {"y"})["y"]
    array([0, 2, 4, 6, 8])
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

Arrays = Mapping[str, np.ndarray]


def as_arrays(inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The inputs as numpy arrays: arrays unchanged, anything else through `tf.constant`."""
    return {name: value if isinstance(value, np.ndarray) else tf.constant(value).numpy() for name, value in inputs.items()}


def chunks(items: Sequence, size: int | None) -> list[Sequence]:
    """`items` in slices of at most `size` (None: one slice); no items give one empty slice."""
    size = size or max(len(items), 1)
    return [items[start : start + size] for start in range(0, max(len(items), 1), size)]


def batch_size(inputs: Arrays) -> int:
    """The common first dimension of all inputs; ValueError if they disagree or one is a scalar."""
    sizes = {name: (np.shape(value)[0] if np.ndim(value) else None) for name, value in inputs.items()}
    if None in sizes.values() or len(set(sizes.values())) > 1:
        raise ValueError(f"Every input needs the same batch size (first dimension) to be split; got {sizes}.")
    return next(iter(sizes.values()), 0)


def predict_in_batches(
    predict: Callable[[Arrays], dict[str, np.ndarray]],
    inputs: Arrays,
    max_batch_size: int | None,
    batch_major: Callable[[], set[str]],
) -> dict[str, np.ndarray]:
    """`predict(inputs)`, in chunks of at most `max_batch_size` (None: one request).

    `batch_major()` names the batch-major outputs; it is called only when the request is split.
    """
    if not max_batch_size or batch_size(inputs) <= max_batch_size:
        return predict(inputs)
    total = batch_size(inputs)
    answers = [
        predict({name: value[start : start + max_batch_size] for name, value in inputs.items()})
        for start in range(0, total, max_batch_size)
    ]
    joined = batch_major()
    return {
        name: np.concatenate([answer[name] for answer in answers]) if name in joined else value
        for name, value in answers[0].items()
    }


def batch_major_outputs(signature_def: Mapping[str, Any]) -> set[str]:
    """The outputs of a SignatureDef (as JSON, see the clients' `metadata()`) whose first dimension
    is the batch: size -1, or unknown rank (taken to be batch-major)."""
    names = set()
    for name, info in signature_def.get("outputs", {}).items():
        shape = info.get("tensor_shape", {})
        dims = shape.get("dim", [])
        if shape.get("unknown_rank") or (dims and int(dims[0].get("size", 0)) == -1):
            names.add(name)
    return names
