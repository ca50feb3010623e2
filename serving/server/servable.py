"""Servables: one loaded version of a model, run with the checks TensorFlow Serving makes.

A version directory holds a SavedModel (`saved_model.pb`, `variables/`) or a TFLite model
(`model.tflite`, the name TensorFlow Serving's `--prefer_tflite_model` reads; `bert-tf export
--quantize int8` writes one). `load_servable` picks: the SavedModel, unless there is none or
`prefer_tflite_model`. Both kinds answer alike (`Servable`).

Inputs are checked against the signature (names, dtypes, ranks, fixed dimensions, no negative
dimension, the batch at most `RequestLimits.max_batch_size`) before the model runs; `check_inputs` makes the
same checks on claimed dtypes and shapes, so that the gRPC front end refuses a request before it
builds any array from it. Token-id inputs are checked by value, the same way for every kind of
version: `input_word_ids` within the vocabulary and `input_type_ids` within the segment types
(both from the version's `model_info`), `input_mask` 0 or 1 (a TFLite model would otherwise
wrap a negative id into the vocabulary). A bad request is a `ServingError` (INVALID_ARGUMENT, or NOT_FOUND for
an unknown signature), and so is an error the model itself raises (e.g.
`tf.errors.InvalidArgumentError` for invalid UTF-8), with its message.

With batching parameters (`--enable_batching`), a version merges concurrent requests into one
model call per signature (`serving.server.batching`); the checks above are made per request first.

One deliberate difference from TensorFlow Serving: an unknown signature name is NOT_FOUND
here; the official server answers FAILED_PRECONDITION.

Example:
    >>> servable = load_servable("/tmp/models/demo/1", version=1)        # doctest: +SKIP
    >>> servable.predict("serving_default", {"text": np.array([b"hello"], dtype=object)})  # doctest: +SKIP
    {'label_names': array([[b'negative', b'neutral', b'positive']], dtype=object),
     'probabilities': array([[0.2, 0.3, 0.5]], dtype=float32)}
"""

from __future__ import annotations

import abc
import dataclasses
import os
import re
import threading
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import tensorflow as tf

# Registers the tensorflow-text ops (FastBertNormalize, ...) before any SavedModel loads:
# a model holding a tokenizer fails to load without it ("Op type not registered 'FastBertNormalize'", even for a
# signature that takes ids: the whole graph is loaded).
import tensorflow_text  # noqa: F401
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2
from tensorflow_serving.apis import get_model_metadata_pb2

from serving.protocol import DEFAULT_SIGNATURE, SAVED_MODEL_FILE, TFLITE_MODEL_FILE, input_names_message
from serving.server.batching import Batcher, BatchingParameters
from serving.server.errors import ServingError


def holds_model(version_dir: Path) -> bool:
    """Whether `version_dir` holds a complete model: `saved_model.pb` or `model.tflite`."""
    return (version_dir / SAVED_MODEL_FILE).is_file() or (version_dir / TFLITE_MODEL_FILE).is_file()


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """What one request may hold (0: no limit); past a limit it is INVALID_ARGUMENT."""

    max_batch_size: int = 0  # rows: the first dimension of the inputs (`--max_batch_size`, as TF Serving's batching)
    # Bytes of text over all string inputs (`--max_request_text_bytes`): each text is cut to the model's
    # max_text_bytes anyway, but a batch of long texts makes the windows of all of them at once.
    max_text_bytes: int = 0


def load_servable(path: str | Path, version: int, limits: RequestLimits = RequestLimits(),
                  prefer_tflite_model: bool = False, batching: BatchingParameters | None = None) -> "Servable":
    """The model in the version directory `path`: its SavedModel, or its `model.tflite` if it has no
    SavedModel or `prefer_tflite_model` (TensorFlow Serving's flag); its requests batched with `batching`."""
    path = Path(path)
    tflite = path / TFLITE_MODEL_FILE
    if tflite.is_file() and (prefer_tflite_model or not (path / SAVED_MODEL_FILE).is_file()):
        servable = TfliteServable(path, version, limits)
    else:
        servable = SavedModelServable(path, version, limits)
    if batching is not None:
        servable.batcher = Batcher(servable._run, servable.signature_defs, batching, f" (version {version})")
    return servable


class Servable(abc.ABC):
    """Version `version` of a model, loaded from the version directory `path` (see `load_servable`).

    `limits` bound each request (`RequestLimits`). `signature_defs` are the signatures as
    TensorFlow Serving's metadata reports them; `signature_names` those a request may run.
    """

    def __init__(self, path: str | Path, version: int, limits: RequestLimits = RequestLimits()):
        self.path = Path(path)
        self.version = version
        self.limits = limits
        self.signature_defs = get_model_metadata_pb2.SignatureDefMap()
        self.signature_names: frozenset[str] = frozenset()
        self.value_limits: dict[str, tuple[int, str]] = {}  # input -> (its values' end, what they are)
        self.precision = ""  # "float32", "bf16" or "int8", from `model_info` (exports without it: "")
        self.batcher: Batcher | None = None  # merges concurrent requests (`load_servable`'s `batching`)

    @property
    @abc.abstractmethod
    def kind(self) -> str:
        """"SavedModel" or "TFLite"."""

    def describe(self) -> str:
        """How the version computes, for people: "int8 TFLite", "float32 SavedModel"."""
        return f"{self.precision} {self.kind}".strip()

    def read_model_info(self) -> None:
        """Reads `model_info`, where the export has it: the precision, and the values each token-id input may hold
        (`check_values`)."""
        limits = {"input_mask": (2, "mask values must be 0 or 1")}
        if "model_info" in self.signature_names:
            outputs = self.signature_def("model_info").outputs
            wanted = [name for name in ("vocab_size", "type_vocab_size", "quantization") if name in outputs]
            info = {name: np.asarray(value).reshape(-1)[0] for name, value in
                    self._run("model_info", {"request": np.array([b""], dtype=object)}, wanted).items()}
            if "vocab_size" in info:
                size = int(info["vocab_size"])
                limits["input_word_ids"] = (size, f"token ids must be in [0, {size}) (the vocabulary's size)")
            if "type_vocab_size" in info:
                size = int(info["type_vocab_size"])
                limits["input_type_ids"] = (size, f"segment ids must be in [0, {size}) (the model's segment types)")
            if "quantization" in info:
                quantization = info["quantization"]
                quantization = quantization.decode() if isinstance(quantization, bytes) else str(quantization)
                self.precision = "float32" if quantization == "none" else quantization
        self.value_limits = limits

    def check_values(self, inputs: Mapping[str, np.ndarray]) -> None:
        """INVALID_ARGUMENT when the inputs hold more text than `limits.max_text_bytes`, or a token-id input a value
        outside its range (see `read_model_info`)."""
        text_bytes = sum(len(item) for values in inputs.values() if np.asarray(values).dtype == object
                         for item in np.asarray(values).ravel() if isinstance(item, (bytes, str)))
        if self.limits.max_text_bytes and text_bytes > self.limits.max_text_bytes:
            raise ServingError.invalid_argument(
                f"The request holds {text_bytes:,} bytes of text, over the server's limit of "
                f"{self.limits.max_text_bytes:,} (--max_request_text_bytes): send fewer or shorter texts.")
        for name, (end, rule) in self.value_limits.items():
            values = inputs.get(name)
            if values is None or not np.size(values) or not np.issubdtype(np.asarray(values).dtype, np.integer):
                continue
            low, high = int(np.min(values)), int(np.max(values))
            if low < 0 or high >= end:
                raise ServingError.invalid_argument(f"{name} holds {low if low < 0 else high}: {rule}.")

    @abc.abstractmethod
    def _run(self, name: str, inputs: Mapping[str, np.ndarray], wanted: list[str]) -> Mapping[str, np.ndarray]:
        """Signature `name`'s outputs (at least those `wanted`) for checked inputs; model errors as `ServingError`."""

    def signature_def(self, name: str) -> meta_graph_pb2.SignatureDef:
        """The runnable signature `name` ("" means `serving_default`); NOT_FOUND if there is none."""
        name = name or DEFAULT_SIGNATURE
        if name not in self.signature_names:
            raise ServingError.not_found(
                f'Serving signature key "{name}" not found. This model has: {", ".join(sorted(self.signature_names))}.'
            )
        return self.signature_defs.signature_def[name]

    def close(self) -> None:
        """Stops batching (the version is unloaded); requests still running finish."""
        if self.batcher is not None:
            self.batcher.close()

    def predict(
        self, signature_name: str, inputs: Mapping[str, np.ndarray], output_filter: Iterable[str] = (),
        deadline: float | None = None,
    ) -> dict[str, np.ndarray]:
        """Runs a signature on numpy inputs; returns its outputs (only `output_filter`'s, if given). `deadline`
        (`time.monotonic()`) bounds the wait for a batch."""
        name = signature_name or DEFAULT_SIGNATURE
        defaults = self.signature_def(name).defaults  # what TF Serving feeds for an input left out of a request
        inputs = {**{key: tf.make_ndarray(proto) for key, proto in defaults.items() if key not in inputs}, **inputs}
        signature = self.check_inputs(name, {key: (_tf_dtype(value), value.shape) for key, value in inputs.items()})
        wanted = list(dict.fromkeys(output_filter)) or list(signature.outputs)
        unknown = [key for key in wanted if key not in signature.outputs]
        if unknown:
            raise ServingError.invalid_argument(
                f"output tensor alias not found in signature: {', '.join(unknown)}; "
                f"the outputs are {', '.join(sorted(signature.outputs))}."
            )
        self.check_values(inputs)
        rows = max((len(value) for value in inputs.values() if np.ndim(value)), default=0)
        if self.batcher is not None and rows and self.batcher.batches(name):
            outputs = self.batcher.run(name, inputs, deadline)
        else:
            outputs = self._run(name, inputs, wanted)
        return {key: _as_array(outputs[key]) for key in wanted}

    def check_inputs(
        self, signature_name: str, inputs: Mapping[str, tuple[tf.DType, Sequence[int]]]
    ) -> meta_graph_pb2.SignatureDef:
        """Checks {input: (dtype, shape)} against signature `signature_name`; returns the SignatureDef.

        An input the signature has a default for (SignatureDef `defaults`, TF Serving's optional inputs) may be
        left out. Raises INVALID_ARGUMENT for missing or extra inputs, a wrong dtype, rank or fixed
        dimension, a negative dimension, or a batch (first dimension) over `max_batch_size`.
        Example: `servable.check_inputs("serve_ids", {"ids": (tf.int32, [2, 128])})`.
        """
        signature = self.signature_def(signature_name)
        sent, expected = set(inputs) | set(signature.defaults), set(signature.inputs)
        if sent != expected:
            raise ServingError.invalid_argument(
                f"Signature {signature_name or DEFAULT_SIGNATURE}: {input_names_message(sent, expected)}; it takes "
                f"{', '.join(repr(name) for name in sorted(expected))}."
            )
        for key, (sent_dtype, shape) in inputs.items():
            info = signature.inputs[key]
            expected_dtype = tf.dtypes.as_dtype(info.dtype)
            if sent_dtype != expected_dtype:
                raise ServingError.invalid_argument(
                    f"Expects arg[{key}] to be {expected_dtype.name} but {sent_dtype.name} is provided"
                )
            if any(size < 0 for size in shape):
                raise ServingError.invalid_argument(f"Input {key} has a negative dimension: {list(shape)}.")
            if info.tensor_shape.unknown_rank:
                continue
            dims = [dim.size for dim in info.tensor_shape.dim]
            if len(dims) != len(shape) or any(want not in (-1, got) for want, got in zip(dims, shape)):
                expected_shape = "[" + ",".join("?" if dim == -1 else str(dim) for dim in dims) + "]"
                raise ServingError.invalid_argument(
                    f"Input {key} has shape {list(shape)}, but the signature expects {expected_shape}."
                )
        batch = max((shape[0] for _, shape in inputs.values() if len(shape)), default=0)
        if self.limits.max_batch_size and batch > self.limits.max_batch_size:
            raise ServingError.invalid_argument(
                f"Batch size {batch} is larger than the server's maximum batch size {self.limits.max_batch_size} "
                "(--max_batch_size); send smaller batches (the clients' max_batch_size splits them)."
            )
        return signature


class SavedModelServable(Servable):
    """A SavedModel version (`saved_model.pb`, `variables/`), run by TensorFlow."""

    kind = "SavedModel"

    def __init__(self, path: str | Path, version: int, limits: RequestLimits = RequestLimits()):
        super().__init__(path, version, limits)
        self._model = tf.saved_model.load(str(self.path), tags=["serve"])
        self.signature_defs = _read_signature_defs(self.path / SAVED_MODEL_FILE)
        self.signature_names = frozenset(self._model.signatures)
        self.read_model_info()

    def _run(self, name: str, inputs: Mapping[str, np.ndarray], wanted: list[str]) -> Mapping[str, np.ndarray]:
        specs = self.signature_defs.signature_def[name].inputs
        tensors = {key: tf.constant(value, dtype=tf.dtypes.as_dtype(specs[key].dtype)) for key, value in inputs.items()}
        try:
            outputs = self._model.signatures[name](**tensors)
        except tf.errors.OpError as error:
            raise ServingError.from_tf_error(error) from error
        return {key: outputs[key].numpy() for key in wanted}


class TfliteServable(Servable):
    """A TFLite version (`model.tflite`), run by LiteRT with one thread per usable core.

    One call runs at a time (a LiteRT interpreter is not thread-safe; its kernels use every
    core). Texts are cut to the model's `max_text_bytes` (`model_info`) before they reach
    the interpreter, as the SavedModel cuts them in its graph.
    """

    kind = "TFLite"

    def __init__(self, path: str | Path, version: int, limits: RequestLimits = RequestLimits()):
        from serving.tflite_runner import TfliteModel

        super().__init__(path, version, limits)
        self._model = TfliteModel(self.path / TFLITE_MODEL_FILE, num_threads=len(os.sched_getaffinity(0)))
        self._lock = threading.Lock()
        self.signature_defs = self._model.signature_defs()
        self.signature_names = frozenset(self._model.signatures)
        self.read_model_info()

    def _run(self, name: str, inputs: Mapping[str, np.ndarray], wanted: list[str]) -> Mapping[str, np.ndarray]:
        try:  # LiteRT computes every output anyway
            with self._lock:
                return self._model.run(inputs, name)
        except (RuntimeError, ValueError) as error:
            raise ServingError.invalid_argument(f"The TFLite model failed on this request: {one_line(error)}") from error


def one_line(error: Exception) -> str:
    """An error's message on one line: LiteRT writes its error lines with nothing between them ("out of
    boundsNode number 2 ...")."""
    return re.sub(r"\s*(?<![.\s])(?=Node number \d+)", ". ", " ".join(str(error).split()))


def _read_signature_defs(path: Path) -> get_model_metadata_pb2.SignatureDefMap:
    """The SignatureDefs of the "serve" MetaGraph, as TensorFlow Serving's metadata reports them."""
    saved_model = saved_model_pb2.SavedModel.FromString(path.read_bytes())
    graphs = [graph for graph in saved_model.meta_graphs if "serve" in graph.meta_info_def.tags]
    result = get_model_metadata_pb2.SignatureDefMap()
    for key, signature in (graphs or saved_model.meta_graphs)[0].signature_def.items():
        result.signature_def[key].CopyFrom(signature)
    return result


def _tf_dtype(value: np.ndarray) -> tf.DType:
    # Strings arrive as numpy object arrays of bytes (or as bytes/str arrays from Python callers).
    return tf.string if value.dtype == object or value.dtype.kind in "SU" else tf.dtypes.as_dtype(value.dtype)


def _as_array(value) -> np.ndarray:
    # A scalar string output comes back from `.numpy()` as plain bytes: keep it an object array like the others.
    return np.array(value, dtype=object) if isinstance(value, bytes) else np.asarray(value)
