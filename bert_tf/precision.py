"""`with_precision`: the same bert-tf model (encoder or task model), computing under another dtype policy.

Under Keras' `mixed_bfloat16` the matrix multiplies run in bfloat16 (on CPUs with bfloat16
units, AVX512_BF16 or AMX, oneDNN's bfloat16 kernels) while the weights stay float32, for
training; under `bfloat16` the weights are stored in bfloat16 too, which gives the same outputs
(the mixed policy rounds every weight to bfloat16 before using it) without casting them at
every call, for inference. Either way bert-tf's layer norms, softmax and GELU compute in
float32, and the task heads' final dense layers are float32, so the outputs are float32. The
serving export's `quantize="bf16"` uses `bfloat16`.

Example:
    >>> import bert_tf
    >>> model = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> fast = with_precision(model, "mixed_bfloat16")
    >>> fast.compute_dtype, len(fast.weights) == len(model.weights)
    ('bfloat16', True)
"""

from __future__ import annotations

import keras
import numpy as np

from bert_tf.layers.initializer import weights_loaded_next

PRECISIONS = ("float32", "mixed_bfloat16", "bfloat16", "mixed_float16")  # mixed_float16: GPUs, for training


def with_precision(model: keras.Model, policy: str) -> keras.Model:
    """A copy of `model` (same class, config and weights) built under the dtype policy `policy`."""
    if policy not in PRECISIONS:
        raise ValueError(f"policy must be one of {PRECISIONS}, got {policy!r}.")
    config = _without_dtype_policies(model.get_config())
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        with weights_loaded_next():
            copy = type(model).from_config(config)
            copy(_example_inputs(), training=False)  # builds the variables, in the same order as the original's
    finally:
        keras.mixed_precision.set_global_policy(previous)
    copy.set_weights(model.get_weights())
    return copy


def _without_dtype_policies(config):
    """`config` with every recorded dtype policy dropped, so that the global policy applies to every layer."""
    if isinstance(config, dict):
        return {key: _without_dtype_policies(value) for key, value in config.items()
                if not (key == "dtype" and isinstance(value, (dict, str)))}
    if isinstance(config, list):
        return [_without_dtype_policies(value) for value in config]
    return config


def _example_inputs() -> dict[str, np.ndarray]:
    """One two-token row of BERT's three inputs, enough to build any bert-tf model."""
    ids = np.array([[1, 1]], np.int32)
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
