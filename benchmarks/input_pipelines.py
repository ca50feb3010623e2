"""Input pipelines: tokenizer throughput against Rust `tokenizers`, and the pre-training pipeline against
what the pre-training step consumes.

1. Tokenize and pack SST-2 train sentences to 128 ids: bert_tf's `tf.data` + `BertPreprocessor`
   against `tokenizers.BertWordPieceTokenizer.encode_batch` (the functions of
   `benchmarks.tokenizer`, timed here interleaved). Tokens/s, `[CLS]`/`[SEP]` counted, padding not.
2. `pipelines.pretraining.pretraining_dataset` on books of the team corpus (prepared with
   `pipelines.corpus.prepare_corpus` into a temporary directory), batch 32, seq 128: examples/s
   of one long-lived iterator, timed alone and back to back (what it sustains); then training
   steps (`BertPretrainer.train_on_batch`) of the mini and base models, interleaved, on cached
   batches and on batches taken from the live pipeline (which prepares the next ones meanwhile). If the live-fed steps are as
   fast as the cached ones, the pipeline does not limit training (on this 2-core machine the
   pipeline's threads and the training step share the same cores).
Skipped when the team data is absent.

    python -m benchmarks.run --only pipelines
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import keras
import tensorflow as tf
import tokenizers

import bert_tf
from benchmarks import tokenizer as tokenizer_benchmark
from benchmarks.data import prepared_corpus
from benchmarks.harness import Contender, interleaved, rate_cell
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "pipelines"
SEQ_LENGTH = 128
BATCH_SIZE = 32
MAX_PREDICTIONS = 20
OURS_TOKENIZER = "bert_tf tf.data + BertPreprocessor"
RUST_TOKENIZER = "tokenizers BertWordPieceTokenizer.encode_batch (Rust)"
PIPELINE = "pretraining_dataset (examples/s of a running iterator)"
# Batches per timed call of the pipeline: several windows of documents (each book is one document and
# a window yields its examples in one burst), far more than the shuffle and prefetch buffers hold.
# Training steps per timed call by preset.
PIPELINE_BATCHES = 1000
TRAINING_STEPS = {"mini": 4, "base": 1}


def tokenizer_comparison(settings: Settings) -> tuple[dict, int, int]:
    """Interleaved timings of the two tokenizers on SST-2 train, the number of sentences and of tokens."""
    sentences = tokenizer_benchmark.sst2_train_sentences(settings.data_dir)[:2000 if settings.quick else None]
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(settings.vocab_file), seq_length=SEQ_LENGTH)
    reference = tokenizers.BertWordPieceTokenizer(str(settings.vocab_file), lowercase=True)
    reference.enable_truncation(SEQ_LENGTH)
    reference.enable_padding(length=SEQ_LENGTH)
    dataset = tokenizer_benchmark.tf_data_pipeline(preprocessor, sentences, batch_size=1024)
    tokens = sum(int(tf.reduce_sum(batch["input_mask"])) for batch in dataset)
    expected = sum(sum(encoding.attention_mask) for encoding in reference.encode_batch(sentences))
    if tokens != expected:
        raise RuntimeError(f"pipelines: token counts differ: bert_tf {tokens}, tokenizers {expected}.")
    contenders = [
        Contender(OURS_TOKENIZER, lambda: tokenizer_benchmark.time_tf_data(dataset), items=tokens),
        Contender(RUST_TOKENIZER, lambda: reference.encode_batch(sentences), items=tokens),
    ]
    return interleaved(contenders, settings.rounds, max_seconds=settings.max_seconds, description="tokenizers"), \
        len(sentences), tokens


def _pretraining_dataset(files, settings: Settings) -> tf.data.Dataset:
    from pipelines.pretraining import pretraining_dataset

    return pretraining_dataset(files, str(settings.vocab_file), seq_length=SEQ_LENGTH,
                               max_predictions_per_seq=MAX_PREDICTIONS, batch_size=BATCH_SIZE, seed=0)


def pipeline_throughput(files, settings: Settings):
    """Examples/s of one long-lived pipeline iterator, timed back to back (nothing else runs meanwhile).

    The pipeline makes examples in bursts (a window of documents at a time), so the rate that
    counts is the sustained one: all examples of all calls over their total time.
    """
    batches = 2 if settings.quick else PIPELINE_BATCHES
    running = iter(_pretraining_dataset(files, settings))

    def pull():
        for _ in range(batches):
            next(running)

    contender = Contender(PIPELINE, pull, items=batches * BATCH_SIZE)
    return interleaved([contender], settings.rounds, warmup=1, max_seconds=settings.max_seconds,
                       description="pre-training pipeline")[PIPELINE]


def training_live_and_cached(files, settings: Settings, preset: str) -> dict:
    """Interleaved training steps of `preset` on cached batches and on batches taken from the live pipeline."""
    steps = 1 if settings.quick else TRAINING_STEPS[preset]
    config = settings.config(preset)
    cached = [batch for batch in _pretraining_dataset(files, settings).take(4)]
    live = iter(_pretraining_dataset(files, settings))  # one long-lived iterator, as a training loop has
    models = {}
    for kind in ("cached", "live"):
        models[kind] = bert_tf.BertPretrainer(bert_tf.BertModel(config))
        models[kind].compile(optimizer=keras.optimizers.AdamW(2e-5))

    def train(kind: str):
        def steps_on_batches():
            for step in range(steps):
                models[kind].train_on_batch(cached[step % len(cached)] if kind == "cached" else next(live))
        return steps_on_batches

    contenders = [
        Contender(f"{preset} BertPretrainer.train_on_batch, cached batches", train("cached"), items=steps * BATCH_SIZE),
        Contender(f"{preset} BertPretrainer.train_on_batch, live pipeline", train("live"), items=steps * BATCH_SIZE),
    ]
    rounds = settings.rounds if settings.quick else max(3, settings.rounds // (2 if preset == "mini" else 3))
    return interleaved(contenders, rounds, warmup=1, max_seconds=settings.max_seconds, description=f"training {preset}")


def run(settings: Settings) -> BenchmarkResult:
    title = "## Input pipelines"
    train_file, corpus = settings.data_file("sst2", "train.tsv"), settings.data_file("corpus")
    if train_file is None or corpus is None or not settings.vocab_file.exists():
        message = f"SST-2 train set, corpus or vocabulary not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    tokenizer_timings, sentences, tokens = tokenizer_comparison(settings)
    with tempfile.TemporaryDirectory() as scratch:
        files = prepared_corpus(corpus, Path(scratch), settings.quick)
        pipeline = pipeline_throughput(files, settings)
        by_preset = {preset: training_live_and_cached(files, settings, preset) for preset in ("mini", "base")}
        keras.backend.clear_session()

    ours, rust = tokenizer_timings[OURS_TOKENIZER], tokenizer_timings[RUST_TOKENIZER]
    rows = [["", PIPELINE, f"{pipeline.sustained:,.1f} sustained; per call {rate_cell(pipeline)}", ""]]
    for preset, timings in by_preset.items():
        for name, timing in timings.items():
            rows.append([preset, name, rate_cell(timing), f"{pipeline.sustained / timing.median:,.0f}"])
    markdown = "\n\n".join([
        title,
        f"### Tokenize and pack: SST-2 train, {sentences:,} sentences → {tokens:,} tokens, seq {SEQ_LENGTH}",
        markdown_table(["contender", "tokens/s"], [[n, rate_cell(t, 0)] for n, t in tokenizer_timings.items()]),
        f"bert_tf ÷ Rust (medians): **{ours.median / rust.median:.2f}** (tf.data runs the batches in parallel on all "
        "cores; `encode_batch` also uses all cores).",
        f"### Pre-training pipeline against the training step (batch {BATCH_SIZE}, seq {SEQ_LENGTH}, "
        f"{MAX_PREDICTIONS} predictions; corpus: {', '.join(Path(f).name for f in files)})",
        markdown_table(["model", "contender", "examples/s", "pipeline ÷ this"], rows),
        f"The pipeline's rate is sustained: {pipeline.rounds} calls of {PIPELINE_BATCHES if not settings.quick else 2} "
        "batches, all examples over the total time (per call it swings, since a window of documents yields its "
        "examples in one burst). \"pipeline ÷ this\" over 1 means the pipeline alone makes examples faster "
        "than that consumer takes them; "
        "live ≈ cached means the pipeline does not slow training down.",
    ])
    data = {
        "tokenizer": {"sentences": sentences, "tokens": tokens,
                      "results": {n: t.summary() for n, t in tokenizer_timings.items()}},
        "pretraining_pipeline": pipeline.summary(),
        "training_live_and_cached": {preset: {n: t.summary() for n, t in timings.items()}
                                     for preset, timings in by_preset.items()},
        "corpus_files": [Path(f).name for f in files],
    }
    return BenchmarkResult(NAME, markdown, data)
