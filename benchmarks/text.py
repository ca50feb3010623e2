"""Raw text to predictions: the first 256 SST-2 dev sentences through tokenizer and classifier, batch 32.

Same random BERT-base weights (encoder and classification head) in every package:
- bert_tf: `bert_tf.inference.TextPredictor` — in-graph tokenization (`BertPreprocessor`,
  `padding="longest"`), sentences sorted by token count so each batch of 32 pads to its own
  longest; results in input order. Also without the sorting (padding to the longest of each
  batch in input order), to show what each technique gives.
- KerasHub: `BertTextClassifier` with its `BertTextClassifierPreprocessor(sequence_length=128)`:
  `predict(sentences, batch_size=32)` (its documented path), and the preprocessor and model
  called in one `tf.function` per batch of 32 (no `predict` machinery).
- transformers: the tokenizer (`transformers.BertTokenizer(vocab=...)`, the Rust backend) with
  `padding="longest"` per batch of 32, and `BertForSequenceClassification` on PyTorch (eager,
  `inference_mode`).
Also bert_tf and KerasHub's faster path under `mixed_bfloat16` (not float32, so outside the
float32 comparison: the same-precision pair of rows; bert_tf's predicted classes are compared
with float32's). Sentences/s, after a check that the float32 contenders
give the same logits (within 1e-3) as transformers (KerasHub: on all but the few sentences where
its tokenizer differs).
Skipped when the team data (sst2/dev.tsv) is absent.

    python -m benchmarks.run --only text
"""

from __future__ import annotations

import tempfile

import keras
import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.contenders import keras_hub_backbone, torch_classifier
from benchmarks.data import sst2
from benchmarks.harness import Contender, interleaved, rate_cell, ratio
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.inference import TextPredictor

NAME = "text"
OURS = "bert_tf TextPredictor (padding to longest, sorted by length)"
OURS_UNSORTED = "bert_tf TextPredictor (padding to longest, input order)"
OURS_BF16 = "bert_tf TextPredictor (sorted), mixed_bfloat16 (not float32)"
KERAS_HUB = "KerasHub BertTextClassifier.predict (sequence_length=128)"
KERAS_HUB_FUNCTION = "KerasHub preprocessor + BertTextClassifier in one tf.function (sequence_length=128)"
KERAS_HUB_BF16 = "KerasHub preprocessor + BertTextClassifier in one tf.function, mixed_bfloat16 (not float32)"
TORCH = "transformers tokenizer + BertForSequenceClassification (padding to longest)"
BATCH_SIZE = 32
SEQ_LENGTH = 128
TOLERANCE = 1e-3


def _keras_hub_classifier(backbone, vocab_file):
    import keras_hub

    tokenizer = keras_hub.models.BertTokenizer(vocabulary=str(vocab_file), lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=SEQ_LENGTH)
    return keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)


def _hub_batch_function(classifier):
    """KerasHub's preprocessor and classifier called in one `tf.function` on a batch of strings."""
    return tf.function(lambda texts: classifier(classifier.preprocessor(texts), training=False))


def run(settings: Settings) -> BenchmarkResult:
    dev_file = settings.data_file("sst2", "dev.tsv")
    if dev_file is None or not settings.vocab_file.exists():
        message = f"SST-2 dev set or vocabulary not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"## Raw text to predictions, SST-2 dev\n\nSkipped: {message}.",
                               {"skipped": message})
    import torch
    import transformers

    sentences = sst2(dev_file, 64 if settings.quick else 256)[0]
    config = settings.config("base")
    backbone = keras_hub_backbone(config)
    hub_classifier = _keras_hub_classifier(backbone, settings.vocab_file)
    ours = bert_tf.BertClassifier(bert_tf.from_pretrained(backbone), num_classes=2)
    ours.classifier.set_weights(hub_classifier.get_layer("logits").get_weights())
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        ours_bf16 = bert_tf.BertClassifier(bert_tf.BertModel(ours.encoder.config), num_classes=2)
        hub_classifier_bf16 = _keras_hub_classifier(keras_hub_backbone(config), settings.vocab_file)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    ours_bf16.set_weights(ours.get_weights())
    hub_classifier_bf16.set_weights(hub_classifier.get_weights())
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(settings.vocab_file, lower_case=True),
                                            seq_length=SEQ_LENGTH, padding="longest")
    tokenizer = transformers.BertTokenizer(vocab=str(settings.vocab_file), do_lower_case=True)
    with tempfile.TemporaryDirectory() as directory:
        torch_model = torch_classifier(ours, directory)

    def torch_predict():
        logits = []
        with torch.inference_mode():
            for start in range(0, len(sentences), BATCH_SIZE):
                inputs = tokenizer(sentences[start:start + BATCH_SIZE], padding="longest", truncation=True,
                                   max_length=SEQ_LENGTH, return_tensors="pt")
                logits.append(torch_model(**inputs).logits.numpy())
        return np.concatenate(logits)

    def hub_function_predict(batch_function):
        return lambda: np.concatenate([batch_function(tf.constant(sentences[start:start + BATCH_SIZE])).numpy()
                                       for start in range(0, len(sentences), BATCH_SIZE)])

    ours_sorted = TextPredictor(ours, preprocessor, batch_size=BATCH_SIZE)
    ours_unsorted = TextPredictor(ours, preprocessor, batch_size=BATCH_SIZE, sort_by_length=False)
    ours_bf16_sorted = TextPredictor(ours_bf16, preprocessor, batch_size=BATCH_SIZE)
    predictions = {
        OURS: lambda: ours_sorted(sentences),
        OURS_UNSORTED: lambda: ours_unsorted(sentences),
        KERAS_HUB: lambda: hub_classifier.predict(sentences, batch_size=BATCH_SIZE, verbose=0),
        KERAS_HUB_FUNCTION: hub_function_predict(_hub_batch_function(hub_classifier)),
        TORCH: torch_predict,
        OURS_BF16: lambda: ours_bf16_sorted(sentences),
        KERAS_HUB_BF16: hub_function_predict(_hub_batch_function(hub_classifier_bf16)),
    }
    outputs = {name: np.asarray(predict()) for name, predict in predictions.items()}
    # transformers' tokenizer is the reference BERT tokenization; KerasHub's BertTokenizer(lowercase=True)
    # keeps accents ("amélie" → [UNK] where BERT has "amelie"), so a few of its inputs differ.
    reference = outputs[TORCH]
    differences = {name: np.abs(logits - reference).max(axis=1) for name, logits in outputs.items()}
    disagreeing = {name: int((difference > TOLERANCE).sum()) for name, difference in differences.items()}
    for name in (OURS, OURS_UNSORTED, KERAS_HUB, KERAS_HUB_FUNCTION):
        allowed = len(sentences) // 50 if name.startswith("KerasHub") else 0
        if disagreeing[name] > allowed:
            raise RuntimeError(f"text: {name} gives logits more than {TOLERANCE} away from transformers' on "
                               f"{disagreeing[name]} of {len(sentences)} sentences (allowed: {allowed}).")
    same_class = float(np.mean(outputs[OURS_BF16].argmax(1) == outputs[OURS].argmax(1)))

    token_counts = np.array([len(ids) for ids in tokenizer(sentences, truncation=True, max_length=SEQ_LENGTH)["input_ids"]])
    # Positions in attention's padded grid, and in the other layers' matrix multiplies: bert_tf's
    # classifier runs those on the real tokens only (`bert_tf.layers.TokenRows`).
    padded = {
        OURS: _padded_positions(np.sort(token_counts)),
        OURS_UNSORTED: _padded_positions(token_counts),
        KERAS_HUB: SEQ_LENGTH * len(sentences),
        KERAS_HUB_FUNCTION: SEQ_LENGTH * len(sentences),
        TORCH: _padded_positions(token_counts),
        OURS_BF16: _padded_positions(np.sort(token_counts)),
        KERAS_HUB_BF16: SEQ_LENGTH * len(sentences),
    }
    in_matmuls = {name: int(token_counts.sum()) if name.startswith("bert_tf") else positions
                  for name, positions in padded.items()}
    contenders = [Contender(name, predict, items=len(sentences)) for name, predict in predictions.items()]
    # The agreement check above ran every contender once: that was the warm-up.
    timings = interleaved(contenders, settings.rounds, warmup=0, max_seconds=settings.max_seconds, description="text")
    rows = [[name, rate_cell(timing), f"{padded[name]:,}", f"{in_matmuls[name]:,}", f"{ratio(timings, OURS, name):.2f}"]
            for name, timing in timings.items()]
    markdown = "\n\n".join([
        f"## Raw text to predictions, SST-2 dev{' (quick: tiny model)' if settings.quick else ''}",
        f"First {len(sentences)} dev sentences ({token_counts.mean():.1f} tokens on average, at most "
        f"{token_counts.max()}), batch {BATCH_SIZE}, tokenization included, same random BERT-base weights and "
        f"classification head everywhere. bert_tf's float32 logits agree with transformers' within "
        f"{max(differences[OURS].max(), differences[OURS_UNSORTED].max()):.1e} on every sentence; KerasHub's differ "
        f"by more than {TOLERANCE} on {disagreeing[KERAS_HUB]} sentence(s), where its tokenizer keeps accents "
        f"(BERT uncased strips them); mixed_bfloat16 predicts the same class as float32 for {same_class:.1%} of "
        "the sentences. Sentences/s: median "
        f"(25th–75th percentile) of {min(t.rounds for t in timings.values())}+ interleaved rounds after a warm-up "
        "call (the agreement check). "
        "Positions: the token positions the encoder computes, padding included, in attention and in the other "
        "layers (bert_tf's classifier runs its projections, feed-forward layers and LayerNorms on the real tokens "
        "only).",
        markdown_table(["contender", "sentences/s", "positions (attention)", "positions (other layers)",
                        "bert_tf (sorted) ÷ this"], rows),
    ])
    data = {
        "sentences": len(sentences),
        "mean_tokens": float(token_counts.mean()),
        "padded_positions": padded,
        "positions_in_matmuls": in_matmuls,
        "max_logit_difference_from_transformers": {name: float(d.max()) for name, d in differences.items()},
        "sentences_disagreeing_with_transformers": disagreeing,
        "bfloat16_same_class": same_class,
        "results": {name: timing.summary() for name, timing in timings.items()},
    }
    return BenchmarkResult(NAME, markdown, data)


def _padded_positions(token_counts: np.ndarray) -> int:
    """Token positions computed when consecutive batches of BATCH_SIZE are padded to their longest."""
    return int(sum(len(batch) * batch.max() for batch in np.split(token_counts, range(BATCH_SIZE, len(token_counts), BATCH_SIZE))))
