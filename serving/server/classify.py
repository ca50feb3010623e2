"""`classify`: a Classify request run on a servable, by the convention of `serving.classification`.

Example:
    >>> classify(servable, "serving_default", [make_example({"text": "a fine day"})])  # doctest: +SKIP
    [[('negative', 0.1), ('neutral', 0.3), ('positive', 0.6)]]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import input_pb2

from bert_tf.tasks.base import served_text
from serving.classification import LABEL_OUTPUTS, SCORE_OUTPUTS
from serving.server.errors import ServingError
from serving.server.servable import Servable


def examples_of(request_input: input_pb2.Input) -> list[tf.train.Example]:
    """The examples of a Classify request's `input`, each merged with the context if there is one."""
    if request_input.WhichOneof("kind") == "example_list_with_context":
        context = request_input.example_list_with_context.context
        examples = []
        for own in request_input.example_list_with_context.examples:
            merged = tf.train.Example()
            merged.CopyFrom(context)
            for key, feature in own.features.feature.items():
                merged.features.feature[key].CopyFrom(feature)
            examples.append(merged)
    else:
        examples = list(request_input.example_list.examples)
    if not examples:
        raise ServingError.invalid_argument("Classify: the request holds no examples (Input is empty).")
    return examples


def classify(
    servable: Servable, signature_name: str, examples: Sequence[tf.train.Example]
) -> list[list[tuple[str, float]]]:
    """Runs the signature on the examples; for each example, its (label, score) per class."""
    signature = servable.signature_def(signature_name)
    score_key = next((key for key in SCORE_OUTPUTS if key in signature.outputs), None)
    if score_key is None:
        raise ServingError.invalid_argument(
            f"Classify: the signature has no class-score output ({' or '.join(SCORE_OUTPUTS)}); "
            f"its outputs are {', '.join(sorted(signature.outputs))}."
        )
    label_key = next((key for key in LABEL_OUTPUTS if key in signature.outputs), None)
    inputs = {key: _input_from_features(key, info, examples) for key, info in signature.inputs.items()}
    outputs = servable.predict(signature_name, inputs, [score_key] + ([label_key] if label_key else []))
    scores = outputs[score_key]
    if scores.ndim != 2 or scores.shape[0] != len(examples) or not np.issubdtype(scores.dtype, np.floating):
        raise ServingError.invalid_argument(
            f"Classify: output {score_key} must be float [batch, classes]; it is {scores.dtype} {list(scores.shape)}."
        )
    if label_key is None:
        labels = np.broadcast_to(np.array([str(index) for index in range(scores.shape[1])]), scores.shape)
    else:
        try:
            labels = np.broadcast_to(outputs[label_key], scores.shape)
        except ValueError:
            raise ServingError.invalid_argument(
                f"Classify: output {label_key} has shape {list(outputs[label_key].shape)}; "
                f"it must be [classes] or [batch, classes] like {score_key} {list(scores.shape)}."
            ) from None
    return [
        [(served_text(label), float(score)) for label, score in zip(row_labels, row_scores)]
        for row_labels, row_scores in zip(labels, scores)
    ]


def _input_from_features(key, info, examples: Sequence[tf.train.Example]) -> np.ndarray:
    """The signature input `key` (a TensorInfo) filled from feature `key` of every example."""
    dtype = tf.dtypes.as_dtype(info.dtype)
    rank = None if info.tensor_shape.unknown_rank else len(info.tensor_shape.dim)
    if rank not in (1, 2):
        raise ServingError.invalid_argument(
            f"Classify: input {key} must have shape [batch] or [batch, n] to be read from Examples."
        )
    if dtype == tf.string:
        kinds = ("bytes_list",)
    elif dtype.is_integer:
        kinds = ("int64_list",)
    elif dtype.is_floating:
        kinds = ("float_list", "int64_list")
    else:
        raise ServingError.invalid_argument(f"Classify: input {key} has dtype {dtype.name}, which Examples cannot hold.")
    rows = []
    for index, example in enumerate(examples):
        if key not in example.features.feature:
            raise ServingError.invalid_argument(f"Classify: example {index} has no feature {key!r} (a signature input).")
        feature = example.features.feature[key]
        kind = feature.WhichOneof("kind")
        if kind is not None and kind not in kinds:
            raise ServingError.invalid_argument(
                f"Classify: feature {key!r} of example {index} is a {kind}; input {key} ({dtype.name}) needs "
                f"{' or '.join(kinds)}."
            )
        rows.append(list(getattr(feature, kind).value) if kind else [])
    lengths = {len(row) for row in rows}
    if rank == 1 and lengths != {1}:
        raise ServingError.invalid_argument(f"Classify: feature {key!r} must hold exactly one value in every example.")
    if rank == 2 and len(lengths) > 1:
        raise ServingError.invalid_argument(f"Classify: feature {key!r} must have the same length in every example.")
    try:
        return np.array(
            [row[0] for row in rows] if rank == 1 else rows, dtype=object if dtype == tf.string else dtype.as_numpy_dtype
        )
    except (OverflowError, ValueError) as error:
        raise ServingError.invalid_argument(f"Classify: feature {key!r} does not fit {dtype.name}: {error}") from None
