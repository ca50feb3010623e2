"""Training throughput of Keras training steps, mini and base: fine-tuning steps/s on SST-2, pre-training tokens/s.

Same config, same starting weights (a seeded KerasHub `BertBackbone`, copied into bert_tf),
same optimizer settings (AdamW, lr 2e-5, Keras' defaults: `keras.optimizers.AdamW` for KerasHub,
`bert_tf.optimization.AdamW`, the same update fused into one kernel per variable, for bert_tf),
batch 32, sequence length 128, float32:
- Fine-tuning on SST-2 train sentences, tokenized once into cached batches (tokenizer speed is
  measured by `benchmarks.pipelines`): KerasHub `BertTextClassifier` on the output of its
  `BertTextClassifierPreprocessor(sequence_length=128)`; bert_tf `BertClassifier` on
  `BertPreprocessor` batches padded to 128 (the same work), and on length-bucketed batches
  padded to their longest (`bert_tf.tasks.bucketing`, what `bert-tf finetune` does by default).
- Pre-training on batches made by `pipelines.pretraining.pretraining_dataset` from the team
  corpus (cached, so that this measures the training step; `benchmarks.pipelines` measures
  the pipeline): bert_tf `BertPretrainer` (masked LM + next sentence, vocabulary
  projection only at the 20 masked positions) and KerasHub `BertMaskedLM` (masked LM only,
  also only at the masked positions); and, not float32 and so outside the float32 comparison,
  both under `mixed_bfloat16` (this CPU has bfloat16 units). Tokens/s counts all 128 positions.
Each timed call is a fixed number of `train_on_batch` steps (the compiled step `fit` runs) on
the next batches of one long-lived iterator per contender. Skipped when the team data is absent.

    python -m benchmarks.run --only training
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.contenders import keras_hub_backbone
from benchmarks.data import prepared_corpus, pretraining_batches, sst2
from benchmarks.harness import Contender, interleaved, rate_cell, ratio
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.optimization import AdamW

NAME = "training"
BATCH_SIZE = 32
SEQ_LENGTH = 128
LEARNING_RATE = 2e-5
OURS_FIXED = "bert_tf BertClassifier, padded to 128"
OURS_BUCKETED = "bert_tf BertClassifier, length-bucketed batches"
KERAS_HUB_CLASSIFIER = "KerasHub BertTextClassifier (sequence_length=128)"
OURS_PRETRAINER = "bert_tf BertPretrainer (MLM + NSP)"
OURS_PRETRAINER_BF16 = "bert_tf BertPretrainer, mixed_bfloat16 (not float32)"
KERAS_HUB_MLM = "KerasHub BertMaskedLM (MLM)"
KERAS_HUB_MLM_BF16 = "KerasHub BertMaskedLM, mixed_bfloat16 (not float32)"
# SST-2 batches tokenized once and cycled through (tokenization speed is `benchmarks.pipelines`' subject).
DISTINCT_BATCHES = 64
# Training steps per timed call, by preset (about 1-6 s each on 2 cores).
STEPS_PER_CALL = {"mini": 4, "base": 1}


def _optimizer(ours: bool):
    """AdamW with Keras' defaults and LEARNING_RATE: Keras' own for KerasHub, bert_tf's (the same update
    rule, fused into one kernel per variable) for bert_tf, as each package's users would train."""
    return AdamW(learning_rate=LEARNING_RATE) if ours else keras.optimizers.AdamW(LEARNING_RATE)


def _in_memory(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """The (finite) dataset's batches, computed once and kept in memory."""
    examples = tf.nest.map_structure(lambda *batches: tf.concat(batches, axis=0), *list(dataset))
    return tf.data.Dataset.from_tensor_slices(examples).batch(BATCH_SIZE)


def _train(model, dataset: tf.data.Dataset, steps: int):
    """A call that trains `model` on the next `steps` batches of one long-lived iterator over `dataset`.

    `train_on_batch` runs the same compiled step as `fit`; a long-lived iterator (as in a
    real epoch) keeps the input pipeline's start-up and `fit`'s per-call set-up out of the timing.
    """
    batches = iter(dataset.repeat())

    def train():
        for _ in range(steps):
            model.train_on_batch(*next(batches))
    return train


def finetuning_contenders(config, settings: Settings, steps: int) -> list[Contender]:
    """KerasHub and bert_tf classifiers with the same weights, each training on `steps` SST-2 batches per call."""
    import keras_hub

    from bert_tf.tasks.bucketing import batch_examples, rows_dataset
    from bert_tf.tasks.classification.data import TextPacker

    texts, labels = sst2(settings.data_file("sst2", "train.tsv"), DISTINCT_BATCHES * BATCH_SIZE)
    backbone = keras_hub_backbone(config)
    hub_tokenizer = keras_hub.models.BertTokenizer(vocabulary=str(settings.vocab_file), lowercase=True)
    hub_preprocessor = keras_hub.models.BertTextClassifierPreprocessor(hub_tokenizer, sequence_length=SEQ_LENGTH)
    hub = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)
    hub.compile(optimizer=_optimizer(ours=False), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
    models = {}
    for name in (OURS_FIXED, OURS_BUCKETED):
        models[name] = bert_tf.BertClassifier(bert_tf.from_pretrained(backbone), num_classes=2)
        models[name].classifier.set_weights(hub.get_layer("logits").get_weights())
        models[name].compile(optimizer=_optimizer(ours=True))

    tokenizer = bert_tf.BertTokenizer(settings.vocab_file, lower_case=True)
    preprocessor = bert_tf.BertPreprocessor(tokenizer, seq_length=SEQ_LENGTH)
    raw = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(BATCH_SIZE)
    fixed = _in_memory(raw.map(lambda text, label: (preprocessor(text), label)))
    hub_fixed = _in_memory(raw.map(lambda text, label: (hub_preprocessor(text), label)))
    # The way `bert-tf finetune` batches: unpadded examples, grouped by length, each batch padded to its longest.
    features = TextPacker(tokenizer, bert_tf.TaskSpec(task="classify", seq_length=SEQ_LENGTH))(texts)
    bucketed = batch_examples(rows_dataset((features, labels)), features["input_word_ids"].row_lengths().numpy(),
                              BATCH_SIZE, SEQ_LENGTH, training=True, bucketing=True, seed=0)
    return [
        Contender(OURS_BUCKETED, _train(models[OURS_BUCKETED], bucketed, steps), items=steps),
        Contender(OURS_FIXED, _train(models[OURS_FIXED], fixed, steps), items=steps),
        Contender(KERAS_HUB_CLASSIFIER, _train(hub, hub_fixed, steps), items=steps),
    ]


def pretraining_contenders(config, batches: list[dict], steps: int) -> list[Contender]:
    """bert_tf `BertPretrainer` and KerasHub `BertMaskedLM` with the same encoder weights, `steps` steps per call."""
    import keras_hub

    def masked_lm():
        model = keras_hub.models.BertMaskedLM(keras_hub_backbone(config), preprocessor=None)
        model.compile(optimizer=_optimizer(ours=False), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      weighted_metrics=["accuracy"])
        return model

    hub = masked_lm()
    ours = bert_tf.BertPretrainer(bert_tf.from_pretrained(hub.backbone))
    ours.compile(optimizer=_optimizer(ours=True))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        ours_bf16 = bert_tf.BertPretrainer(bert_tf.BertModel(ours.encoder.config))
        hub_bf16 = masked_lm()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    ours_bf16.set_weights(ours.get_weights())
    ours_bf16.compile(optimizer=_optimizer(ours=True))
    hub_bf16.set_weights(hub.get_weights())
    features = tf.data.Dataset.from_tensor_slices({name: np.concatenate([b[name] for b in batches]) for name in batches[0]})
    features = features.batch(BATCH_SIZE, drop_remainder=True)
    hub_features = features.map(lambda f: (
        {"token_ids": f["input_word_ids"], "padding_mask": f["input_mask"], "segment_ids": f["input_type_ids"],
         "mask_positions": f["masked_lm_positions"]},
        f["masked_lm_ids"], f["masked_lm_weights"]))
    tokens = steps * BATCH_SIZE * SEQ_LENGTH
    return [
        Contender(OURS_PRETRAINER, _train(ours, features.map(lambda f: (f,)), steps), items=tokens),
        Contender(KERAS_HUB_MLM, _train(hub, hub_features, steps), items=tokens),
        Contender(OURS_PRETRAINER_BF16, _train(ours_bf16, features.map(lambda f: (f,)), steps), items=tokens),
        Contender(KERAS_HUB_MLM_BF16, _train(hub_bf16, hub_features, steps), items=tokens),
    ]


def run(settings: Settings) -> BenchmarkResult:
    title = f"## Training throughput{' (quick: tiny model)' if settings.quick else ''}"
    train_file, corpus = settings.data_file("sst2", "train.tsv"), settings.data_file("corpus")
    if train_file is None or corpus is None or not settings.vocab_file.exists():
        message = f"SST-2 train set, corpus or vocabulary not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory() as scratch:
        files = prepared_corpus(corpus, Path(scratch), settings.quick)
        batches = pretraining_batches(files, settings.vocab_file, BATCH_SIZE, 2 if settings.quick else 4)

    sections, data = [title], {"batch_size": BATCH_SIZE, "seq_length": SEQ_LENGTH, "results": {}}
    for preset in ("mini", "base"):
        config = settings.config(preset)
        steps = 1 if settings.quick else STEPS_PER_CALL[preset]
        rounds = settings.rounds if preset == "mini" or settings.quick else max(3, settings.rounds // 2)
        finetuning = interleaved(finetuning_contenders(config, settings, steps), rounds, warmup=1,
                                 max_seconds=settings.max_seconds, description=f"fine-tuning {preset}")
        pretraining = interleaved(pretraining_contenders(config, batches, steps), rounds, warmup=1,
                                  max_seconds=settings.max_seconds, description=f"pre-training {preset}")
        keras.backend.clear_session()
        rows = [[name, rate_cell(t, 2), f"{t.median * BATCH_SIZE:,.0f}", f"{ratio(finetuning, name, KERAS_HUB_CLASSIFIER):.2f}"]
                for name, t in finetuning.items()]
        pre_rows = [[name, rate_cell(t, 0), f"{t.median / SEQ_LENGTH / BATCH_SIZE:.2f}",
                     f"{ratio(pretraining, name, KERAS_HUB_MLM):.2f}"] for name, t in pretraining.items()]
        sections += [
            f"### {preset}{'' if settings.quick else f' (L{config.num_hidden_layers} H{config.hidden_size})'}: "
            f"fine-tuning on SST-2, {steps} step(s) per timed call",
            markdown_table(["contender", "steps/s", "examples/s", "÷ KerasHub"], rows),
            f"### {preset}: pre-training, {steps} step(s) per timed call",
            markdown_table(["contender", "tokens/s", "steps/s", "÷ KerasHub"], pre_rows),
        ]
        data["results"][preset] = {"finetuning": {n: t.summary() for n, t in finetuning.items()},
                                   "pretraining": {n: t.summary() for n, t in pretraining.items()}}
    sections.insert(1, "Medians (25th–75th percentile) of interleaved rounds after a warm-up call; `train_on_batch` "
                       "on a long-lived iterator per contender (the step `fit` compiles); same optimizer settings "
                       f"(AdamW, lr {LEARNING_RATE}, Keras' defaults; bert_tf's AdamW applies Keras' update rule fused "
                       f"into one kernel per variable), batch {BATCH_SIZE}, sequence length {SEQ_LENGTH}, float32.")
    return BenchmarkResult(NAME, "\n\n".join(sections), data)
