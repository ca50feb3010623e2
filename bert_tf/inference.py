"""Fast inference: a traced-once `tf.function` for any BERT model, and raw text → predictions in input order.

`inference_function(model)` is the fixed-signature graph a model should run in when
speed matters: one trace serves every batch size and sequence length (no re-tracing),
dropout is off, and `jit_compile=True` compiles it with XLA (one compilation per input
shape; see benchmarks/RESULTS.md for when that pays on a CPU).

`TextPredictor(model, preprocessor)(texts)` runs raw strings through the in-graph
preprocessor and the model, sorting the texts by token count first so that each batch,
padded only to its own longest text (`BertPreprocessor(..., padding="longest")`), holds
texts of about the same length; results come back in the order of `texts`. On short
texts (SST-2: 25 tokens on average) this does a fraction of the work of padding to 128.

Example:
    >>> import bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> run = inference_function(encoder)
    >>> ids = tf.constant([[2, 7, 9, 3]])
    >>> tuple(run({"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)})
    ...       ["pooled_output"].shape)
    (1, 128)
    >>> # predict = TextPredictor(classifier, BertPreprocessor(tokenizer, padding="longest"))
    >>> # logits = predict(["a fine film", "a dull one"])
"""

from __future__ import annotations

from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

from bert_tf.model import INPUT_NAMES
from bert_tf.preprocessor import BertPreprocessor

_INPUT_SIGNATURE = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}


def inference_function(model: keras.Model, jit_compile: bool = False):
    """`model` (a `BertModel` or any model taking its three inputs) as a `tf.function` traced once.

    The function takes a dict of the three int32 [batch, seq] inputs (`input_word_ids`,
    `input_mask`, `input_type_ids`; all three required) and returns the model's outputs
    with `training=False`.
    """

    @tf.function(input_signature=[_INPUT_SIGNATURE], jit_compile=jit_compile)
    def run(inputs):
        return model(inputs, training=False)

    return run


class TextPredictor:
    """Raw texts → the model's outputs as NumPy arrays, in the order of the texts; build once, call often.

    Args:
        model: a model taking the three id inputs (`BertClassifier`, `BertModel`, ...).
        preprocessor: its `BertPreprocessor`; `padding="longest"` is what makes sorting pay.
        batch_size: texts per model call.
        sort_by_length: batch texts of similar token counts together (results are put back in order).
        jit_compile: compile the model with XLA (once per batch shape).
        output_names: for a model returning a dict (e.g. `BertModel`), the outputs to keep.

    Call it on strings, or on tuples of strings for models of text pairs (one per segment).
    Outputs must have one fixed-size row per text (classifier logits, `pooled_output`);
    per-token outputs differ in length between batches and raise a `ValueError`.
    """

    def __init__(
        self,
        model: keras.Model,
        preprocessor: BertPreprocessor,
        batch_size: int = 32,
        sort_by_length: bool = True,
        jit_compile: bool = False,
        output_names: Sequence[str] | None = None,
    ):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"TextPredictor: batch_size must be a positive integer, got {batch_size!r}.")
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        self.output_names = None if output_names is None else list(output_names)
        self._model = inference_function(model, jit_compile=jit_compile)
        self._preprocessor = preprocessor
        self._functions = {}  # per number of segments: (token counts, preprocessing), traced once each

    def _traced(self, segments: int):
        if segments not in self._functions:
            signature = [tuple(tf.TensorSpec([None], tf.string) for _ in range(segments))]
            tokenizer = self._preprocessor.tokenizer

            @tf.function(input_signature=signature)
            def token_counts(texts):
                return tf.add_n([tokenizer(segment).row_lengths() for segment in texts])

            self._functions[segments] = token_counts, tf.function(self._preprocessor, input_signature=signature)
        return self._functions[segments]

    def __call__(self, texts: Sequence[str] | Sequence[Sequence[str]]):
        texts = list(texts)
        if not texts:
            raise ValueError("TextPredictor: no texts given.")
        segments = [np.array(texts, dtype=object)] if isinstance(texts[0], str) else [
            np.array([text[i] for text in texts], dtype=object) for i in range(len(texts[0]))]
        token_counts, preprocess = self._traced(len(segments))
        order = np.arange(len(texts))
        if self.sort_by_length:
            order = np.argsort(token_counts(tuple(tf.constant(s) for s in segments)).numpy(), kind="stable")
        batches = []
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            outputs = self._model(preprocess(tuple(tf.constant(segment[rows]) for segment in segments)))
            if self.output_names is not None:
                outputs = {name: outputs[name] for name in self.output_names}
            batches.append(tf.nest.map_structure(lambda tensor: tensor.numpy(), outputs))
        restore = np.argsort(order)
        return tf.nest.map_structure(lambda *parts: _concatenated(parts)[restore], *batches)


def _concatenated(parts: Sequence[np.ndarray]) -> np.ndarray:
    shapes = {part.shape[1:] for part in parts}
    if len(shapes) > 1:
        raise ValueError(
            f"TextPredictor: an output has per-batch shapes {sorted(shapes)} (a sequence dimension?); only outputs "
            "with one fixed-size row per text can be put back in order. Select such outputs (e.g. logits, "
            "pooled_output)."
        )
    return np.concatenate(parts)
