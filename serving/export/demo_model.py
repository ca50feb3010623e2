"""`save_demo_model`: a tiny text-classifier SavedModel to try the server on (tests, load test).

It has no tokenizer or BERT weights, only a few variables, and two signatures:
- `serving_default`: `text` (string [batch], UTF-8; invalid UTF-8 makes the graph raise
  InvalidArgumentError) -> `probabilities` (float32 [batch, 3]) and `label_names`
  (string [batch, 3]: negative, neutral, positive);
- `serve_ids`: `ids` (int32 [batch, seq], each in [0, VOCAB_SIZE)) -> `scores` (float32
  [batch, 3], the mean of an embedding over the ids).
`seed` picks the weights, so two versions answer differently.

Example:
    >>> path = save_demo_model("/tmp/models/demo", version=1)  # doctest: +SKIP
    >>> str(path)                                              # doctest: +SKIP
    '/tmp/models/demo/1'
"""

from __future__ import annotations

import os
from pathlib import Path

import tensorflow as tf

LABELS = ("negative", "neutral", "positive")
VOCAB_SIZE = 50


class DemoClassifier(tf.Module):
    """Scores a text from four character statistics; scores ids by a mean embedding."""

    def __init__(self, seed: int):
        super().__init__(name="demo_classifier")
        self.text_weights = tf.Variable(tf.random.stateless_normal([4, len(LABELS)], seed=[seed, 1]))
        self.id_embeddings = tf.Variable(tf.random.stateless_normal([VOCAB_SIZE, len(LABELS)], seed=[seed, 2]))
        self.labels = tf.constant(LABELS)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def classify_text(self, text):
        chars = tf.strings.unicode_decode(text, "UTF-8", errors="strict")
        codes = tf.cast(chars, tf.float32) / 128.0
        count = tf.cast(chars.row_lengths(), tf.float32)
        features = tf.stack(
            [
                count / 10.0,
                tf.reduce_sum(codes, axis=1) / (count + 1.0),
                tf.reduce_sum(codes * codes, axis=1) / (count + 1.0),
                tf.ones_like(count),
            ],
            axis=1,
        )
        return {
            "probabilities": tf.nn.softmax(features @ self.text_weights),
            "label_names": tf.tile(self.labels[tf.newaxis], [tf.shape(text)[0], 1]),
        }

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="ids")])
    def score_ids(self, ids):
        return {"scores": tf.reduce_mean(tf.gather(self.id_embeddings, ids), axis=1)}


def save_demo_model(model_dir: str | Path, version: int, seed: int | None = None) -> Path:
    """Writes version `version` (weights from `seed`, default: the version) to `model_dir/<version>`.

    It is saved to a temporary directory beside it and renamed, so that a polling server
    never sees half a model.
    """
    model_dir = Path(model_dir)
    final = model_dir / str(version)
    if final.exists():
        raise FileExistsError(f"{final} exists already.")
    temporary = model_dir / f".tmp-{version}-{os.getpid()}"
    module = DemoClassifier(seed=version if seed is None else seed)
    tf.saved_model.save(
        module, str(temporary), signatures={"serving_default": module.classify_text, "serve_ids": module.score_ids}
    )
    temporary.rename(final)
    return final
