"""Tiny encoders, toy separable data sets and compiled task models for the task-model tests.

Run as a script (`python tests/tiny_tasks.py classifier span_labeler global_clipnorm`), it
runs each named check under `tf.distribute.MirroredStrategy` on 2 logical CPUs and prints
one JSON line each. It is a separate process because logical devices must be configured
before TensorFlow runs any op.
"""

import contextlib
import json
import sys

import numpy as np
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.model import BertModel
from bert_tf.optimization import AdamW, create_optimizer
from bert_tf.tasks.classification.model import BertClassifier
from bert_tf.tasks.ner.model import BertTokenClassifier
from bert_tf.tasks.squad.model import BertSpanLabeler

SEQ_LENGTH = 8
TINY = dict(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=SEQ_LENGTH,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)


def tiny_encoder():
    return BertModel(BertConfig(**TINY))


def _sequences(classes, seed):
    """[CLS] w w w w [SEP] [PAD] [PAD]: class 0 has word ids below 50, class 1 above."""
    rng = np.random.default_rng(seed)
    n = len(classes)
    words = np.where(classes[:, None] == 0, rng.integers(5, 50, size=(n, 4)), rng.integers(50, 100, size=(n, 4)))
    word_ids = np.concatenate([np.full((n, 1), 2), words, np.full((n, 1), 3), np.zeros((n, 2), int)], axis=1)
    mask = (np.arange(SEQ_LENGTH) < 6).astype(np.int32)[None].repeat(n, axis=0)
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": np.zeros_like(word_ids)}


def classification_data(n=32, seed=0):
    """(inputs, labels [n]) where the label is the class of all the words.

    The first token (in place of [CLS]) names the class too: a tiny random encoder mixes
    tokens too slowly for `pooled_output`, read at that token, to learn from the others in a few steps.
    """
    labels = np.arange(n) % 2
    inputs = _sequences(labels, seed)
    inputs["input_word_ids"][:, 0] = 10 + labels
    return inputs, labels


def token_data(n=32, seed=0):
    """(inputs, labels [n, seq]): each word is labelled 1 if its id is >= 50; -100 on [CLS], [SEP], padding
    and position 3 (as if it were a later WordPiece of the word before)."""
    rng = np.random.default_rng(seed)
    inputs = _sequences(np.zeros(n, int), seed)
    words = rng.integers(5, 100, size=(n, 4))
    inputs["input_word_ids"][:, 1:5] = words
    labels = np.full((n, SEQ_LENGTH), -100)
    labels[:, 1:5] = (words >= 50).astype(int)
    labels[:, 3] = -100
    return inputs, labels


def span_data(n=32, seed=0):
    """(inputs, {"start_logits", "end_logits"}): the answer is the token pair 4, 1, starting at position 1, 2 or 3."""
    inputs = _sequences(np.zeros(n, int), seed)
    starts = 1 + np.arange(n) % 3
    inputs["input_word_ids"][np.arange(n), starts] = 4
    inputs["input_word_ids"][np.arange(n), starts + 1] = 1
    return inputs, {"start_logits": starts, "end_logits": starts + 1}


def compiled_task(name, learning_rate=5e-3, num_train_steps=100, **head_arguments):
    """A fresh task model compiled with its defaults, and its toy data: (model, inputs, labels)."""
    if name == "classifier":
        model = BertClassifier(tiny_encoder(), num_classes=2, dropout=0.0, **head_arguments)
        inputs, labels = classification_data()
    elif name == "token_classifier":
        model = BertTokenClassifier(tiny_encoder(), num_labels=2, dropout=0.0, **head_arguments)
        inputs, labels = token_data()
    elif name == "span_labeler":
        model = BertSpanLabeler(tiny_encoder(), **head_arguments)
        inputs, labels = span_data()
    else:
        raise ValueError(f"unknown task {name!r}")
    model.compile(optimizer=create_optimizer(learning_rate, num_train_steps))
    return model, inputs, labels


def _fit(strategy, name):
    """Fits a task for 1 epoch and predicts: the losses and the prediction shapes."""
    with strategy.scope():
        model, inputs, labels = compiled_task(name)
    history = model.fit(inputs, labels, batch_size=8, epochs=1, verbose=0).history
    outputs = model.predict(inputs, batch_size=8, verbose=0)
    shapes = {key: list(value.shape) for key, value in outputs.items()} if isinstance(outputs, dict) else list(outputs.shape)
    return {"loss": history["loss"], "shapes": shapes}


def _clip_global_norm(strategy):
    """The sum over replicas of what the optimizer makes of gradients [3, 0] (replica 0) and [0, 4] (replica 1)."""
    with strategy.scope():
        optimizer = create_optimizer(0.1, num_train_steps=10, clipnorm=1.0)
    gradients = strategy.experimental_distribute_values_from_function(
        lambda context: tf.constant([[3.0, 0.0], [0.0, 4.0]])[context.replica_id_in_sync_group]
    )
    clipped = strategy.run(lambda gradient: optimizer._clip_gradients([gradient])[0], args=(gradients,))
    return {"sum": strategy.reduce(tf.distribute.ReduceOp.SUM, clipped, axis=None).numpy().tolist()}


def adamw_difference(strategy, steps=4):
    """Largest weight difference between a classifier fitted with bert_tf's AdamW (fused update) under `strategy`
    and the same classifier fitted on one device (same settings, start and batches)."""
    models = []
    for scope in (strategy.scope(), contextlib.nullcontext()):
        with scope:
            model = BertClassifier(tiny_encoder(), num_classes=2, dropout=0.0)
            model.compile(optimizer=AdamW(learning_rate=1e-2, weight_decay=0.01, epsilon=1e-6))
        if models:
            model.set_weights(models[0].get_weights())
        models.append(model)
    inputs, labels = classification_data()
    for model in models:
        model.fit(inputs, labels, batch_size=len(labels) // steps, epochs=1, verbose=0, shuffle=False)
    return max(float(np.abs(a - b).max()) for a, b in zip(models[0].get_weights(), models[1].get_weights()))


def run_mirrored(names):
    """Runs each named check under MirroredStrategy on 2 logical CPUs and prints one JSON line each:
    a task name (fit and predict), "global_clipnorm" or "fused_adamw" (against one device)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    for name in names:
        if name == "global_clipnorm":
            result = _clip_global_norm(strategy)
        elif name == "fused_adamw":
            result = {"max_difference": adamw_difference(strategy)}
        else:
            result = _fit(strategy, name)
        print(json.dumps({"name": name, "replicas": strategy.num_replicas_in_sync, **result}))


if __name__ == "__main__":
    run_mirrored(sys.argv[1:])
