"""What each speed technique of bert_tf is worth: the same step with one technique swapped for the usual way.

Pre-training step of `mini` (batch 32, seq 128, 20 predictions, float32, bert_tf's AdamW),
BERT-base inference at batch 8, and a BERT-base classifier on a batch of short texts (32 texts
of 8 to 32 tokens, padded to 32), each technique replaced in turn by what it replaced:
- attention as heads-first batched matrix multiplies → the same products written as einsums;
- `bert_tf.layers.Dropout` (16 random bits per element, masking fused by XLA) → `keras.layers.Dropout`;
- in training, GELU and its gradient fused by XLA → `tf.nn.gelu`'s separate ops;
- at inference, the feed-forward bias added with `tf.nn.bias_add`, so that oneDNN fuses the bias and
  GELU into the matrix multiply → Keras' `Dense` (which adds the bias with `+`);
- `bert_tf.layers.LayerNormalization` (plain ops at inference, XLA-fused in training) →
  `keras.layers.LayerNormalization`;
- the MLM cross-entropy fused by XLA → `tf.nn.sparse_softmax_cross_entropy_with_logits`;
- `bert_tf.optimization.AdamW` (one fused kernel per variable) → `keras.optimizers.AdamW`;
- the last block computed only at the positions the heads read ([CLS] and the masked positions
  in pre-training, [CLS] in `BertClassifier`) → the whole last block, then a gather;
- `BertClassifier` and `BertTokenClassifier` at inference running the blocks on the real tokens'
  rows only (`TokenRows`) → the blocks on the padded grid (the token classifier also on texts
  without padding, where skipping it can only cost);
and, for context, the whole training step compiled with XLA (`compile(jit_compile=True)`).
The replaced versions are re-created here, while each model is built and traced; the
contenders run interleaved, so the ratios hold on a busy machine.

    python -m benchmarks.run --only techniques
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math

import keras
import numpy as np
import tensorflow as tf

import bert_tf
import bert_tf.layers.activated_dense as activated_dense_module
import bert_tf.layers.attention as attention_module
import bert_tf.layers.embeddings as embeddings_module
import bert_tf.layers.masked_lm_head as masked_lm_head_module
import bert_tf.layers.transformer_block as block_module
import bert_tf.pretrainer as pretrainer_module
from benchmarks.harness import Contender, interleaved, rate_cell
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.inference import inference_function
from bert_tf.layers.activated_dense import ActivatedDense
from bert_tf.layers.activations import ACTIVATIONS
from bert_tf.layers.attention import SelfAttention, padding_bias
from bert_tf.model import INPUT_NAMES
from bert_tf.optimization import AdamW

NAME = "techniques"
BATCH_SIZE, SEQ_LENGTH, PREDICTIONS = 32, 128, 20
STEPS_PER_CALL = 2
DEFAULT = "bert_tf as it is"
PADDED_GRID = "blocks on the padded grid"  # inference only: not a pre-training variant
KERAS_DENSE_BIAS = "feed-forward bias added by Keras' Dense"  # inference only
KERAS_LAYER_NORM = "keras.layers.LayerNormalization"


def einsum_attention(self, hidden_states, input_mask, training=None, query_states=None, token_rows=None):
    """`SelfAttention.call` with the attention products written as einsums (bert_tf before this change).

    On the padded grid only (`token_rows` None): the variants using it call `BertModel` itself."""
    query_states = hidden_states if query_states is None else query_states
    batch, seq, queries = tf.shape(hidden_states)[0], tf.shape(hidden_states)[1], tf.shape(query_states)[1]
    heads, size, hidden = self.config.num_attention_heads, self.config.head_size, self.config.hidden_size
    tokens = tf.reshape(hidden_states, [-1, hidden])
    query_tokens = tf.reshape(query_states, [-1, hidden])
    query = tf.reshape(self.query(query_tokens) * (1.0 / math.sqrt(size)), [batch, queries, heads, size])
    key = tf.reshape(self.key(tokens), [batch, seq, heads, size])
    value = tf.reshape(self.value(tokens), [batch, seq, heads, size])
    scores = tf.einsum("bqhd,bkhd->bhqk", query, key)
    probs = tf.nn.softmax(tf.cast(scores, tf.float32) + padding_bias(input_mask), axis=-1)
    dropped = self.probs_dropout(tf.cast(probs, self.compute_dtype), training=training)
    context = tf.reshape(tf.einsum("bhqk,bkhd->bqhd", dropped, value), [-1, hidden])
    return tf.reshape(self.output_dense(context), tf.shape(query_states)), probs


def full_last_block(self, inputs, training=None):
    """`BertPretrainer.call` computing every position of the last block, then gathering the masked ones."""
    encoded = self.encoder({name: inputs[name] for name in INPUT_NAMES if name in inputs}, training=training)
    positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
    masked_states = tf.gather(encoded["sequence_output"], positions, batch_dims=1)
    return {"mlm_logits": self.masked_lm(masked_states, self.encoder.embeddings.word_embeddings.embeddings),
            "nsp_logits": self.next_sentence(encoded["pooled_output"])}


def full_encoder_classifier(self, inputs, training=None):
    """`BertClassifier.call` reading `pooled_output` from the whole encoder."""
    pooled = self.encoder(inputs, training=training)["pooled_output"]
    return self.classifier(self.dropout(pooled, training=training))


def keras_dense_call(self, inputs, training=None):
    """`ActivatedDense.call` through Keras' `Dense` call: the bias added with `+`."""
    return (self.training_activation if training else self.inference_activation)(keras.layers.Dense.call(self, inputs))


def sparse_cross_entropy(labels, logits):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32), logits=logits)


# Variant name → (object, attribute, replacement) patched while the model is built and traced.
REPLACEMENTS = {
    "attention as einsums": [(SelfAttention, "call", einsum_attention)],
    "keras.layers.Dropout": [(module, "Dropout", keras.layers.Dropout)
                             for module in (attention_module, embeddings_module, block_module)],
    "tf.nn.sparse_softmax_cross_entropy_with_logits": [(pretrainer_module, "vocabulary_cross_entropy",
                                                        sparse_cross_entropy)],
    "tf.nn.gelu in training": [(activated_dense_module, "TRAINING_ACTIVATIONS", ACTIVATIONS)],
    KERAS_LAYER_NORM: [(module, "LayerNormalization", functools.partial(keras.layers.LayerNormalization, dtype="float32"))
                       for module in (embeddings_module, block_module, masked_lm_head_module)],
    "whole last block": [(pretrainer_module.BertPretrainer, "call", full_last_block),
                         (bert_tf.BertClassifier, "call", full_encoder_classifier)],
    PADDED_GRID: [(bert_tf.BertModel, "skip_padding", False)],
    KERAS_DENSE_BIAS: [(ActivatedDense, "call", keras_dense_call)],
}
INFERENCE_ONLY = (PADDED_GRID, KERAS_DENSE_BIAS)


@contextlib.contextmanager
def replaced(variant: str):
    """Swaps in the replacements of `variant` (none for the others) and puts the originals back."""
    patches = REPLACEMENTS.get(variant, [])
    originals = [getattr(owner, attribute) for owner, attribute, _ in patches]
    for owner, attribute, replacement in patches:
        setattr(owner, attribute, replacement)
    try:
        yield
    finally:
        for (owner, attribute, _), original in zip(patches, originals):
            setattr(owner, attribute, original)


def pretraining_features(config: bert_tf.BertConfig) -> dict:
    rng = np.random.default_rng(0)
    shape, predictions = (BATCH_SIZE, SEQ_LENGTH), (BATCH_SIZE, PREDICTIONS)
    features = {
        "input_word_ids": rng.integers(5, config.vocab_size, shape), "input_mask": np.ones(shape),
        "input_type_ids": np.zeros(shape), "masked_lm_positions": np.sort(rng.integers(1, SEQ_LENGTH, predictions)),
        "masked_lm_ids": rng.integers(5, config.vocab_size, predictions),
        "masked_lm_weights": np.ones(predictions, np.float32),
        "next_sentence_labels": rng.integers(0, 2, (BATCH_SIZE, 1)),
    }
    return {name: tf.constant(value, tf.float32 if name == "masked_lm_weights" else tf.int32)
            for name, value in features.items()}


def pretraining_contender(variant: str, config: bert_tf.BertConfig, features: dict) -> Contender:
    with replaced(variant):
        keras.utils.set_random_seed(0)
        model = bert_tf.BertPretrainer(bert_tf.BertModel(config))
        optimizer = keras.optimizers.AdamW(2e-5) if variant == "keras.optimizers.AdamW" else AdamW(learning_rate=2e-5)
        model.compile(optimizer=optimizer, jit_compile=variant == "whole step with XLA")
        model.train_on_batch(features)  # traced here, with the replacements in place

    def train():
        for _ in range(STEPS_PER_CALL):
            model.train_on_batch(features)
    return Contender(variant, train, items=STEPS_PER_CALL * BATCH_SIZE * SEQ_LENGTH)


def inference_contender(variant: str, model: keras.Model, lengths: list[int], seq_length: int,
                        output: str | None) -> Contender:
    """`model` on random ids of `lengths` tokens padded to `seq_length`; `output` names the tensor to fetch
    from a dict of outputs."""
    vocab_size = (model if isinstance(model, bert_tf.BertModel) else model.encoder).config.vocab_size
    mask = (np.arange(seq_length)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    ids = tf.constant(np.random.default_rng(0).integers(5, vocab_size, mask.shape) * mask, tf.int32)
    inputs = {"input_word_ids": ids, "input_mask": tf.constant(mask), "input_type_ids": tf.zeros_like(ids)}
    with replaced(variant):
        run = inference_function(model)
        run(inputs)  # traced here
    return Contender(variant, lambda: (run(inputs)[output] if output else run(inputs)).numpy(), items=len(lengths))


def _rows(timings: dict, unit_digits: int) -> list[list[str]]:
    default = timings[DEFAULT].median
    return [[name, rate_cell(t, unit_digits), f"{default / t.median:.2f}"] for name, t in timings.items()]


def run(settings: Settings) -> BenchmarkResult:
    mini = dataclasses.replace(settings.config("mini"), hidden_act="gelu_tanh")
    features = pretraining_features(mini)
    variants = [DEFAULT, *(v for v in REPLACEMENTS if v not in INFERENCE_ONLY), "keras.optimizers.AdamW",
                "whole step with XLA"]
    training = interleaved([pretraining_contender(v, mini, features) for v in variants], settings.rounds,
                           max_seconds=settings.max_seconds, description="techniques: pre-training")
    base = bert_tf.BertModel(dataclasses.replace(settings.config("base"), hidden_act="gelu_tanh"))
    batch = 2 if settings.quick else 8
    inference = interleaved([inference_contender(v, base, [SEQ_LENGTH] * batch, SEQ_LENGTH, "sequence_output")
                             for v in (DEFAULT, "attention as einsums", KERAS_DENSE_BIAS, KERAS_LAYER_NORM)],
                            settings.rounds, max_seconds=settings.max_seconds, description="techniques: inference")
    classifier = bert_tf.BertClassifier(base, num_classes=2)
    texts, short = (4, 8) if settings.quick else (32, 32)
    lengths = np.random.default_rng(0).integers(short // 4, short + 1, texts).tolist()
    classification = interleaved([inference_contender(v, classifier, lengths, short, None)
                                  for v in (DEFAULT, PADDED_GRID, "whole last block")],
                                 settings.rounds, max_seconds=settings.max_seconds, description="techniques: classifier")
    token_classifier = bert_tf.BertTokenClassifier(base, num_labels=9)
    token_cases = {f"{texts} texts of {min(lengths)}–{max(lengths)} tokens padded to {short}": (lengths, short),
                   f"{batch} texts of {SEQ_LENGTH} tokens (no padding)": ([SEQ_LENGTH] * batch, SEQ_LENGTH)}
    token_classification = {
        case: interleaved([inference_contender(v, token_classifier, case_lengths, seq, None) for v in (DEFAULT, PADDED_GRID)],
                          settings.rounds, max_seconds=settings.max_seconds, description="techniques: token classifier")
        for case, (case_lengths, seq) in token_cases.items()}
    keras.backend.clear_session()
    markdown = "\n\n".join([
        f"## Speed techniques, one at a time{' (quick: tiny models)' if settings.quick else ''}",
        "Each row replaces one technique of bert_tf by what it replaced (re-created in `benchmarks/techniques.py`); "
        "\"as it is ÷ this\" above 1 is what the technique gains. Medians (25th–75th percentile) of interleaved "
        "rounds after a warm-up call.",
        f"### Pre-training step, `mini` (L{mini.num_hidden_layers} H{mini.hidden_size}), batch {BATCH_SIZE}, "
        f"seq {SEQ_LENGTH}, {PREDICTIONS} predictions, float32, {STEPS_PER_CALL} `train_on_batch` steps per call",
        markdown_table(["variant", "tokens/s", "as it is ÷ this"], _rows(training, 0)),
        f"### Encoder inference, BERT-base, batch {batch}, seq {SEQ_LENGTH}, float32 (`inference_function`)",
        markdown_table(["variant", "sequences/s", "as it is ÷ this"], _rows(inference, 2)),
        f"### BertClassifier inference, BERT-base, {texts} texts of {min(lengths)}–{max(lengths)} tokens "
        f"({np.mean(lengths):.1f} on average) padded to {short}, float32",
        "\"whole last block\" also runs the blocks on the padded grid.",
        markdown_table(["variant", "sequences/s", "as it is ÷ this"], _rows(classification, 2)),
        "### BertTokenClassifier inference, BERT-base, float32",
        markdown_table(["texts", "variant", "sequences/s", "as it is ÷ this"],
                       [[case, *row] for case, timings in token_classification.items() for row in _rows(timings, 2)]),
    ])
    data = {"pretraining": {n: t.summary() for n, t in training.items()},
            "inference": {n: t.summary() for n, t in inference.items()}, "inference_batch": batch,
            "classifier": {n: t.summary() for n, t in classification.items()}, "classifier_lengths": lengths,
            "token_classifier": {case: {n: t.summary() for n, t in timings.items()}
                                 for case, timings in token_classification.items()}}
    return BenchmarkResult(NAME, markdown, data)
