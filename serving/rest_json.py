"""TensorFlow Serving's REST JSON formats, both ways: the server decodes requests and
encodes responses, the REST client does the reverse. Malformed JSON content is a
`ValueError` with a message that says where.

Predict request: `{"signature_name": ..., "instances": [...]}` (row format) or
`{"signature_name": ..., "inputs": ...}` (columnar format).
- Row: one instance per batch element. With one input an instance is its value (or an
  object `{name: value}`); with several, an object holding every input. Instances are
  stacked into batch-major tensors, so they must all have the same shape.
- Columnar: `inputs` is the whole tensor (one input) or an object `{name: tensor}`.
- Tensors are nested lists. A string is a JSON string (sent as UTF-8) or `{"b64": ...}`
  for binary data. Integers must be JSON integers; floats take any JSON number.

Predict response: row format -> `{"predictions": [...]}`, one entry per batch element
(the value, or an object of outputs when there are several); columnar ->
`{"outputs": value or {name: value}}`. A string output is written as a JSON string, or as
`{"b64": ...}` when its name ends in `_bytes` (TensorFlow Serving's rule) or when it is not
valid UTF-8 (where TensorFlow Serving would write invalid JSON).

Classify request: `{"signature_name": ..., "context": {feature: value}, "examples":
[{feature: value or [values]}, ...]}`; response `{"results": [[[label, score], ...], ...]}`.

Example:
    >>> import tensorflow as tf
    >>> inputs, row_format = decode_predict_request({"instances": ["hi", {"b64": "/w=="}]}, {"text": tf.string})
    >>> inputs["text"].tolist(), row_format
    ([b'hi', b'\\xff'], True)
    >>> encode_predict_response({"probabilities": np.array([[0.5, 0.5]])}, row_format=True)
    {'predictions': [[0.5, 0.5]]}
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Mapping, Sequence

import numpy as np
import tensorflow as tf

from serving.classification import make_example
from serving.protocol import input_names_message

B64_KEY = "b64"
BYTES_SUFFIX = "_bytes"
NO_EXAMPLES = "No examples: send at least one in 'instances' or 'inputs'."


# ----- predict, server side ----------------------------------------------------


def signature_name_of(body: Any) -> str:
    """The request's `signature_name` ("" when absent); checks that the body is a JSON object."""
    if not isinstance(body, dict):
        raise ValueError(f"The request body must be a JSON object, not {type(body).__name__}.")
    name = body.get("signature_name", "")
    if not isinstance(name, str):
        raise ValueError("'signature_name' must be a string.")
    return name


def decode_predict_request(
    body: Mapping[str, Any], input_dtypes: Mapping[str, tf.DType]
) -> tuple[dict[str, np.ndarray], bool]:
    """The input tensors of a predict request, and whether it used the row ("instances") format."""
    if ("instances" in body) == ("inputs" in body):
        raise ValueError("The request must have exactly one of the keys 'instances' (row format) or 'inputs' (columnar).")
    names = sorted(input_dtypes)
    if not names:
        raise ValueError("The signature takes no inputs.")
    if body.get("inputs", body.get("instances")) == []:
        raise ValueError(NO_EXAMPLES)
    if "inputs" in body:
        value = body["inputs"]
        if not _is_named(value):
            if len(names) > 1:
                raise ValueError(
                    f"'inputs' is a plain value/list, but the signature takes several inputs: {', '.join(names)}."
                )
            return {names[0]: to_array(value, input_dtypes[names[0]], names[0])}, False
        _check_names(value, names, "'inputs' object")
        return {name: to_array(value[name], input_dtypes[name], name) for name in names}, False
    instances = body["instances"]
    if not isinstance(instances, list):
        raise ValueError("'instances' must be a list.")
    named = _is_named(instances[0])
    if not named and len(names) > 1:
        raise ValueError(
            f"'instances' is a plain list, but the signature takes several inputs ({', '.join(names)}): "
            "send a list of objects."
        )
    columns: dict[str, list] = {name: [] for name in names}
    for index, instance in enumerate(instances):
        if _is_named(instance) != named:
            raise ValueError(f"Item {index} of 'instances': expected {'an object' if named else 'a value or list'}.")
        if named:
            _check_names(instance, names, f"item {index} of 'instances'")
            for name in names:
                columns[name].append(instance[name])
        else:
            columns[names[0]].append(instance)
    return {name: to_array(columns[name], input_dtypes[name], name) for name in names}, True


def encode_predict_response(outputs: Mapping[str, np.ndarray], row_format: bool) -> dict:
    """The JSON body answering a predict request in the format it used."""
    values = {name: to_json(array, as_b64=name.endswith(BYTES_SUFFIX)) for name, array in outputs.items()}
    single = next(iter(values.values())) if len(values) == 1 else None
    if not row_format:
        return {"outputs": values if single is None else single}
    batch_sizes = {name: (array.shape[0] if array.ndim else None) for name, array in outputs.items()}
    for name, size in batch_sizes.items():
        if size is None:
            raise ValueError(f"Output {name} is a scalar: the row format needs batch-major outputs; use 'inputs'.")
    if len(set(batch_sizes.values())) > 1:
        raise ValueError(
            f"Outputs have different batch sizes {batch_sizes}: the row format cannot hold them; use 'inputs'."
        )
    if single is not None:
        return {"predictions": single}
    size = next(iter(batch_sizes.values()), 0)
    return {"predictions": [{name: value[index] for name, value in values.items()} for index in range(size)]}


# ----- predict, client side ----------------------------------------------------


def encode_predict_request(inputs: Mapping[str, np.ndarray], signature_name: str, row_format: bool) -> dict:
    """The JSON body of a predict request; strings go as `{"b64": ...}`, exact for any bytes."""
    values = {name: to_json(np.asarray(array), as_b64=True) for name, array in inputs.items()}
    body: dict[str, Any] = {"signature_name": signature_name}
    if row_format:
        sizes = {len(value) if isinstance(value, list) else None for value in values.values()}
        if len(sizes) != 1 or None in sizes:
            raise ValueError("The row format needs every input to have the same batch size (first dimension).")
        body["instances"] = [{name: value[index] for name, value in values.items()} for index in range(sizes.pop())]
    else:
        body["inputs"] = values
    return body


def decode_predict_response(body: Mapping[str, Any], output_dtypes: Mapping[str, tf.DType]) -> dict[str, np.ndarray]:
    """The output tensors of a predict response, given the signature's output dtypes."""
    names = sorted(output_dtypes)
    if "predictions" in body:
        rows = body["predictions"]
        columns = {names[0]: rows} if len(names) == 1 else {name: [row[name] for row in rows] for name in names}
    elif "outputs" in body:
        columns = {names[0]: body["outputs"]} if len(names) == 1 else body["outputs"]
    else:
        raise ValueError(f"Not a predict response (no 'predictions' or 'outputs'): {str(body)[:200]}")
    return {name: to_array(columns[name], output_dtypes[name], name) for name in names}


# ----- classify ----------------------------------------------------------------


def decode_classify_request(body: Mapping[str, Any]) -> list[tf.train.Example]:
    """The examples of a classify request, each merged with the request's `context`."""
    context, examples = body.get("context", {}), body.get("examples")
    if not isinstance(examples, list) or not examples:
        raise ValueError("A classify request needs 'examples': a non-empty list of objects.")
    if not isinstance(context, dict) or not all(isinstance(example, dict) for example in examples):
        raise ValueError("'context' and every item of 'examples' must be JSON objects {feature: value}.")
    decoded_context = {key: _feature_value(key, value) for key, value in context.items()}
    return [
        make_example({**decoded_context, **{key: _feature_value(key, value) for key, value in example.items()}})
        for example in examples
    ]


def encode_classify_request(examples: Sequence[Mapping[str, Any]], signature_name: str) -> dict:
    """The JSON body of a classify request; bytes features go as `{"b64": ...}`."""

    def feature(value):
        if isinstance(value, (list, tuple, np.ndarray)):
            return [feature(item) for item in value]
        if isinstance(value, bytes):
            return {B64_KEY: base64.b64encode(value).decode("ascii")}
        return value.item() if isinstance(value, np.generic) else value

    return {
        "signature_name": signature_name,
        "examples": [{key: feature(value) for key, value in example.items()} for example in examples],
    }


def encode_classify_response(results: Sequence[Sequence[tuple[str, float]]]) -> dict:
    return {"results": [[[label, score] for label, score in classes] for classes in results]}


# ----- tensors -----------------------------------------------------------------


def to_array(value: Any, dtype: tf.DType, name: str) -> np.ndarray:
    """A dense tensor from nested JSON lists; every list at one level must have the same length."""
    shape, probe = [], value
    while isinstance(probe, list):
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    leaves: list = []
    _flatten(value, shape, 0, dtype, name, leaves)
    numpy_dtype = object if dtype == tf.string else dtype.as_numpy_dtype
    return np.array(leaves, dtype=numpy_dtype).reshape(shape)


def to_json(array: np.ndarray, as_b64: bool) -> Any:
    """Nested lists of JSON values; strings as text, or as `{"b64": ...}` if `as_b64` or not UTF-8."""
    if array.dtype == object or array.dtype.kind in "SU":
        return _map_nested(array.tolist(), lambda item: _string_to_json(item, as_b64))
    return array.tolist()


def _flatten(value, shape, level, dtype, name, leaves) -> None:
    if isinstance(value, list):
        if level >= len(shape) or len(value) != shape[level]:
            raise ValueError(f"Input {name}: the nested lists are not rectangular (a list of length {len(value)} "
                             f"at depth {level}, where the first element implies shape {shape}).")
        for item in value:
            _flatten(item, shape, level + 1, dtype, name, leaves)
    elif level != len(shape):
        raise ValueError(f"Input {name}: value {str(value)[:80]} at depth {level}, where the first element "
                         f"implies shape {shape}.")
    else:
        leaves.append(_leaf(value, dtype, name))


def _leaf(value, dtype: tf.DType, name: str):
    if dtype == tf.string:
        if isinstance(value, str):
            return value.encode("utf-8")
        if _is_b64(value):
            return _b64_decode(value[B64_KEY])
    elif dtype.is_bool:
        if isinstance(value, bool):
            return value
    elif dtype.is_integer:
        if isinstance(value, int) and not isinstance(value, bool):
            if not dtype.min <= value <= dtype.max:
                raise ValueError(f"Input {name}: {value} is out of range for {dtype.name}.")
            return value
    elif dtype.is_floating:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    else:
        raise ValueError(f"Input {name}: dtype {dtype.name} cannot be written in JSON.")
    raise ValueError(f"Input {name}: JSON value {str(value)[:80]} is not of the expected type {dtype.name}.")


def _feature_value(key: str, value: Any):
    """A JSON feature value (or flat list of them) with `{"b64": ...}` decoded to bytes."""
    if isinstance(value, list):
        return [_feature_leaf(key, item) for item in value]
    return _feature_leaf(key, value)


def _feature_leaf(key: str, value: Any):
    if _is_b64(value):
        return _b64_decode(value[B64_KEY])
    if isinstance(value, (str, bool, int, float)):
        return value
    raise ValueError(f"Feature {key!r}: {str(value)[:80]} is not a string, number, {{'b64': ...}} or a flat list of them.")


def _string_to_json(item, as_b64: bool):
    data = item.encode("utf-8") if isinstance(item, str) else item
    if not as_b64:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {B64_KEY: base64.b64encode(data).decode("ascii")}


def _map_nested(value, function):
    return [_map_nested(item, function) for item in value] if isinstance(value, list) else function(value)


def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(B64_KEY), str)


def _is_named(value) -> bool:
    return isinstance(value, dict) and not _is_b64(value)


def _b64_decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"Unable to base64-decode {text[:40]!r}.") from None


def _check_names(value: Mapping[str, Any], names: list[str], where: str) -> None:
    if set(value) != set(names):
        raise ValueError(f"{where}: {input_names_message(value, names)}; the signature takes "
                         f"{', '.join(repr(name) for name in names)}.")
