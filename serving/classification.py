"""The Classify convention of this server: `tf.train.Example`s classified by a predict-style signature.

TensorFlow Serving's Classify wants a classification signature (method
`tensorflow/serving/classify`, one input `inputs` of serialized Examples). bert-tf
exports predict-style signatures instead (e.g. `text` -> `probabilities`), so Classify
is defined here for them (classification-method signatures are not supported); the server runs
it (`serving.server.classify`), the clients send its Examples (`make_example`):

Inputs: each input of the signature is read from the Example feature of the same name.
Features of `example_list_with_context.context` apply to every example; an example's
own feature of the same name wins.
- a string input takes a `bytes_list`, an integer input an `int64_list`, a float input
  a `float_list` (or an `int64_list`);
- an input of shape [batch] takes exactly one value per example; an input of shape
  [batch, n] (or [batch, None]) takes the feature's list as its row, the same length in
  every example.

Outputs: the scores are the output `scores`, else `probabilities` (float, [batch, k]);
the labels are the output `classes`, else `label_names` (string, [batch, k] or [k]);
without one, class i is labelled "i". Every example gets its k (label, score) pairs in
the model's class order (not sorted). Anything else is INVALID_ARGUMENT.

Example:
    >>> example = make_example({"text": "a fine day"})
    >>> example.features.feature["text"].bytes_list.value
    [b'a fine day']
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import tensorflow as tf

SCORE_OUTPUTS = ("scores", "probabilities")
LABEL_OUTPUTS = ("classes", "label_names")


def make_example(features: Mapping[str, object]) -> tf.train.Example:
    """An Example from {name: value or list of values}: strings/bytes, integers (or bools) or floats."""
    example = tf.train.Example()
    for key, value in features.items():
        values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
        feature = example.features.feature[key]
        if all(isinstance(item, (str, bytes)) for item in values):
            feature.bytes_list.value.extend(item.encode("utf-8") if isinstance(item, str) else item for item in values)
        elif all(isinstance(item, (bool, int, np.integer, np.bool_)) for item in values):
            feature.int64_list.value.extend(int(item) for item in values)
        elif all(isinstance(item, (int, float, np.integer, np.floating)) for item in values):
            feature.float_list.value.extend(float(item) for item in values)
        else:
            raise ValueError(
                f"Feature {key!r}: values must be all strings/bytes, all integers or all numbers; got {value!r}."
            )
    return example
