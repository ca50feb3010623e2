"""`TfliteModel`: runs a `.tflite` file from `serving.export.tflite` on numpy inputs or texts, for checking.

It uses LiteRT's `InterpreterWithCustomOps` (`ai_edge_litert`) with tensorflow-text's
TFLite kernels registered (`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`), so
both the ids and the raw-text models run. Every call resizes the inputs to the batch
given, and prepares texts as the SavedModel's graph does before tokenizing, with TensorFlow
ops TFLite has no kernels for: each is cut to the model's `max_text_bytes` (`model_info`), and
bytes that are not UTF-8, and U+FFFD, are dropped, as bert_tf's tokenizer drops them (the
TFLite tokenizer would read them as `[UNK]`).

Example:
    >>> model = TfliteModel("sst2.tflite")               # doctest: +SKIP
    >>> model.info["task"], model.input_names()           # doctest: +SKIP
    ('classify', ['text'])
    >>> model.classify(["a fine film", "dull"])           # doctest: +SKIP
    [('positive', 0.91), ('negative', 0.84)]

    $ python -m serving.tflite_runner sst2.tflite "a fine film" "dull"
    $ python -m serving.tflite_runner sst2.tflite - < sentences.txt
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from serving.native_stderr import native_lines_dropped
from serving.protocol import DEFAULT_SIGNATURE

REPLACEMENT_CHARACTER = "\ufffd".encode("utf-8")
LITERT_INFO_LINE = re.compile(r"INFO: Created TensorFlow Lite XNNPACK delegate")


class TfliteModel:
    """The `.tflite` file `path`, loaded; `num_threads` None lets LiteRT choose."""

    def __init__(self, path: str | Path, num_threads: int | None = None):
        import tensorflow_text
        from ai_edge_litert.interpreter import InterpreterWithCustomOps

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"TFLite model not found: {self.path}")
        self.interpreter = InterpreterWithCustomOps(
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
            model_path=str(self.path),
            num_threads=num_threads,
        )
        # LiteRT prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." as it prepares the model;
        # dropped unless TensorFlow's every log line is asked for (TF_CPP_MIN_LOG_LEVEL=0, as `bert-tf -v` sets
        # it), the rule of TensorFlow's start-up lines (bert_tf/native_stderr.py).
        verbose = os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0"
        with contextlib.nullcontext() if verbose else native_lines_dropped(LITERT_INFO_LINE):
            self.interpreter.allocate_tensors()
        self.signatures = self.interpreter.get_signature_list()

    @functools.cached_property
    def info(self) -> dict[str, Any]:
        """The `model_info` signature's values as Python objects (task, seq_length, lower_case, ...)."""
        values = self.run({"request": [""]}, "model_info")
        return {name: _python_value(value[0]) for name, value in values.items()}

    def input_names(self, signature: str = DEFAULT_SIGNATURE) -> list[str]:
        return list(self._signature(signature)["inputs"])

    @functools.cached_property
    def max_text_bytes(self) -> int | None:
        """The UTF-8 bytes of each text kept before tokenizing (None for a model that does not say)."""
        return self.info.get("max_text_bytes") if "model_info" in self.signatures else None

    def run(self, inputs: Mapping[str, Any], signature: str = DEFAULT_SIGNATURE) -> dict[str, np.ndarray]:
        """The signature's outputs for `inputs` ({name: array-like}, cast to the input's dtype)."""
        expected = set(self._signature(signature)["inputs"])
        if set(inputs) != expected:
            raise ValueError(f"Signature {signature!r} takes inputs {sorted(expected)}, got {sorted(inputs)}.")
        runner = self.interpreter.get_signature_runner(signature)
        details = runner.get_input_details()
        arrays = {name: _as_input(value, details[name]["dtype"]) for name, value in inputs.items()}
        if signature != "model_info":
            arrays = {name: _prepared_texts(value, self.max_text_bytes) if value.dtype == object else value
                      for name, value in arrays.items()}
        return runner(**arrays)

    def signature_defs(self):
        """The signatures as TensorFlow Serving's model metadata describes them (a `SignatureDefMap`)."""
        import tensorflow as tf
        from tensorflow_serving.apis import get_model_metadata_pb2

        result = get_model_metadata_pb2.SignatureDefMap()
        for name in self.signatures:
            runner = self.interpreter.get_signature_runner(name)
            signature = result.signature_def[name]
            signature.method_name = "tensorflow/serving/predict"
            for tensors, details in ((signature.inputs, runner.get_input_details()),
                                     (signature.outputs, runner.get_output_details())):
                for key, detail in details.items():
                    tensors[key].name = detail["name"]
                    tensors[key].dtype = tf.dtypes.as_dtype(detail["dtype"]).as_datatype_enum
                    for size in detail["shape_signature"]:
                        tensors[key].tensor_shape.dim.add(size=int(size))
        return result

    def predict_texts(self, *segments: Sequence[str | bytes]) -> dict[str, np.ndarray]:
        """The outputs of a raw-text model for texts (and, for pair models, a second list of texts)."""
        names = self.input_names()
        if "input_word_ids" in names:
            seq_length = self.info.get("seq_length", "seq_length") if "model_info" in self.signatures else "seq_length"
            raise ValueError(
                f"{self.path} takes token ids, not text: int32 input_word_ids, input_mask and input_type_ids "
                f"[batch, {seq_length}], fed with TfliteModel(path).run({{...}}) (a SavedModel export's `preprocess` "
                "signature makes them from text); for raw text, export a classifier with --tflite-input text.")
        if len(segments) != len(names):
            raise ValueError(f"{self.path} takes {len(names)} text input(s) ({', '.join(names)}), got {len(segments)}.")
        return self.run(dict(zip(names, segments)))

    def classify(self, *segments: Sequence[str | bytes]) -> list[tuple[str, float]]:
        """For each text (pair), its most probable label and that probability (classifiers only)."""
        outputs = self.predict_texts(*segments)
        if "probabilities" not in outputs:
            raise ValueError(f"{self.path} is not a classifier (its outputs are {sorted(outputs)}).")
        best = outputs["probabilities"].argmax(axis=1)
        return [
            (_python_value(labels[index]), float(probabilities[index]))
            for labels, probabilities, index in zip(outputs["label_names"], outputs["probabilities"], best)
        ]

    def _signature(self, name: str) -> dict:
        if name not in self.signatures:
            raise ValueError(f"{self.path} has no signature {name!r}; it has {sorted(self.signatures)}.")
        return self.signatures[name]


def _prepared_texts(texts: np.ndarray, max_bytes: int | None) -> np.ndarray:
    """`texts` (UTF-8 bytes) cut to `max_bytes` (`bert_tf.tasks.text_budget.cut_text`), without invalid UTF-8
    and U+FFFD; the array itself when there is nothing to do (the usual request)."""
    too_long = max_bytes is not None and any(len(text) > max_bytes for text in texts.flat)
    invalid = not all(_is_utf8(text) and REPLACEMENT_CHARACTER not in text for text in texts.flat)
    if not (too_long or invalid):
        return texts
    import tensorflow as tf

    from bert_tf.tasks.text_budget import cut_text

    prepared = tf.constant(texts.reshape(-1))
    if too_long:
        prepared = cut_text(prepared, max_bytes)
    if invalid:  # each invalid sequence becomes U+FFFD, then every U+FFFD goes: no word is split
        prepared = tf.strings.unicode_transcode(prepared, "UTF-8", "UTF-8", errors="replace")
        prepared = tf.strings.regex_replace(prepared, "\ufffd", "")
    return np.array(prepared.numpy(), dtype=object).reshape(texts.shape)


def _is_utf8(text: bytes) -> bool:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _as_input(value, dtype) -> np.ndarray:
    if dtype in (np.bytes_, np.object_, np.str_):  # texts of any shape (a reranker's documents: [batch, documents])
        texts = np.asarray(value, dtype=object)
        return np.array([item.encode("utf-8") if isinstance(item, str) else item for item in texts.flat],
                        dtype=object).reshape(texts.shape)
    return np.asarray(value, dtype=dtype)


def _python_value(value):
    value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if isinstance(value, np.ndarray):
        return [_python_value(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value.item() if isinstance(value, np.generic) else value


def main(argv: list[str] | None = None) -> int:
    """`python -m serving.tflite_runner MODEL.tflite TEXT ...`: prints each text's label and probability."""
    parser = argparse.ArgumentParser(prog="python -m serving.tflite_runner", description=main.__doc__)
    parser.add_argument("model", help="a raw-text classifier .tflite file (export --format tflite --tflite-input text)")
    parser.add_argument("texts", nargs="+", help="texts to classify; - reads them from stdin, one per line")
    args = parser.parse_args(argv)
    texts = [line.rstrip("\n") for line in sys.stdin if line.strip()] if args.texts == ["-"] else args.texts
    try:
        for text, (label, probability) in zip(texts, TfliteModel(args.model).classify(texts)):
            print(f"{label}\t{probability:.4f}\t{text}")
    except (FileNotFoundError, ValueError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
