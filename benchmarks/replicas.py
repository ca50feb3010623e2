"""Fine-tuning on two replicas (MirroredStrategy on 2 logical CPU devices) against one device: steps/s, same loss.

BERT-Mini from a seeded random start, without dropout (replicas would draw masks of their own), fine-tunes on
SST-2 batches of 32 (the global batch), made as `bert-tf finetune` makes them (`bert_tf.training.finetune.training_data`;
no length buckets, whose last batches would split unevenly over replicas), with the step
`bert-tf finetune --strategy mirrored` trains with (`bert_tf.training.distributed_fit.distributed_train_step`:
pre-training's step running the model's `train_step`); one device runs the same step under the default
strategy. Each contender is a process of its own (`benchmarks.isolated`), as logical devices must be configured
before TensorFlow runs any op; their timed calls interleave. The same-loss check: the mean loss of the first
`CHECK_STEPS` steps and the weights after them, from the same start, on both. Two logical devices share the same
CPU cores, so no speed-up is expected here: the row shows what splitting the batch and summing the gradients costs.

    python -m benchmarks.run --only replicas
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from benchmarks.harness import Contender, interleaved, rate_cell, ratio
from benchmarks.isolated import IsolatedCalls
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "replicas"
BATCH_SIZE = 32
SEQ_LENGTH = 128
CHECK_STEPS = 8  # steps trained by both before the comparison of loss and weights
STEPS_PER_CALL = 4
TRAIN_EXAMPLES = 64 * BATCH_SIZE
ONE_DEVICE = "one device (default strategy)"
TWO_REPLICAS = "2 replicas (MirroredStrategy, 2 logical CPUs)"


def replica_calls(logical_cpus: int, model_config: str, train_file: str, vocab_file: str, quick: bool):
    """The child: splits the CPU into `logical_cpus` devices, builds the classifier and its batches under the
    strategy, trains `CHECK_STEPS` steps; `info`: their mean loss and the weights; the call "train" trains
    `STEPS_PER_CALL` more steps."""
    import tensorflow as tf

    if logical_cpus > 1:  # before TensorFlow runs any op
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus)
    import keras

    from bert_tf.optimization import create_optimizer
    from bert_tf.tokenizer import BertTokenizer
    from bert_tf.training.distributed_fit import distributed_train_step
    from bert_tf.training.strategy import make_strategy
    from bert_tf.training.finetune import load_encoder, training_data
    from bert_tf.training.finetune_config import FinetuneConfig

    config = FinetuneConfig(task="classify", train_file=train_file, output_dir="unused", init=model_config,
                            vocab_file=vocab_file, batch_size=BATCH_SIZE, seq_length=SEQ_LENGTH, bucketing=False,
                            dropout=0.0, max_train_examples=4 * BATCH_SIZE if quick else TRAIN_EXAMPLES,
                            strategy="mirrored" if logical_cpus > 1 else "default")
    strategy = make_strategy(config.strategy)
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():
        encoder, vocab, lower_case = load_encoder(config)
        training = training_data(config, BertTokenizer(vocab, lower_case))
        model = training.task.build_model(encoder, config.dropout)
        model.compile(optimizer=create_optimizer(3e-4, num_train_steps=10_000, num_warmup_steps=10),
                      loss=training.task.loss(config, training.data))
    step = distributed_train_step(model, strategy, training.batches.element_spec)
    iterator = iter(strategy.experimental_distribute_dataset(training.batches.repeat()))
    no_requests = tf.constant([0.0])

    def train(steps: int) -> None:
        for _ in range(steps):
            step(iterator, no_requests)

    train(CHECK_STEPS)
    info = {"replicas": strategy.num_replicas_in_sync, "loss": float(model.get_metrics_result()["loss"]),
            "weights": [weight.numpy() for weight in model.weights]}
    return {"train": lambda: train(STEPS_PER_CALL)}, info


def run(settings: Settings) -> BenchmarkResult:
    from bert_tf.vocabulary import read_vocab_file

    title = f"## Fine-tuning on two replicas{' (quick: tiny model)' if settings.quick else ''}"
    train_file = settings.data_file("sst2", "train.tsv")
    if train_file is None or not settings.vocab_file.exists():
        message = f"SST-2 train set or vocabulary not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    config = settings.config("mini", vocab_size=len(read_vocab_file(settings.vocab_file)), hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0)
    with tempfile.TemporaryDirectory() as scratch:
        model_config = Path(scratch) / "bert_config.json"
        config.write_json(model_config)
        arguments = (str(model_config), str(train_file), str(settings.vocab_file), settings.quick)
        with IsolatedCalls(replica_calls, 1, *arguments) as one, IsolatedCalls(replica_calls, 2, *arguments) as two:
            timings = interleaved([Contender(ONE_DEVICE, lambda: one.run("train"), items=STEPS_PER_CALL),
                                   Contender(TWO_REPLICAS, lambda: two.run("train"), items=STEPS_PER_CALL)],
                                  settings.rounds, warmup=1, max_seconds=settings.max_seconds,
                                  description="fine-tuning replicas")
            infos = {ONE_DEVICE: one.info, TWO_REPLICAS: two.info}
    loss_difference = abs(infos[ONE_DEVICE]["loss"] - infos[TWO_REPLICAS]["loss"])
    weight_difference = max(float(np.abs(a - b).max())
                            for a, b in zip(infos[ONE_DEVICE]["weights"], infos[TWO_REPLICAS]["weights"]))
    rows = [[name, rate_cell(t, 2), f"{t.median * BATCH_SIZE:,.0f}", f"{ratio(timings, name, ONE_DEVICE):.2f}",
             f"{infos[name]['loss']:.6f}"] for name, t in timings.items()]
    model = "The tiny smoke-test model" if settings.quick else \
        f"BERT-Mini (L{config.num_hidden_layers} H{config.hidden_size})"
    markdown = "\n\n".join([
        title,
        f"{model} from a seeded random start without dropout, SST-2 batches of {BATCH_SIZE} (global) as "
        f"`bert-tf finetune --no-bucketing` makes them, the step of `bert-tf finetune --strategy mirrored`; medians "
        f"(25th–75th percentile) of interleaved calls of {STEPS_PER_CALL} steps, each contender in a process of its "
        "own. The two logical devices share the same CPU cores: no speed-up is to be had here, the ratio is what "
        "splitting the batch and summing the gradients costs.",
        markdown_table(["contender", "steps/s", "examples/s", "÷ one device", f"mean loss, first {CHECK_STEPS} steps"],
                       rows),
        f"Same-loss check after {CHECK_STEPS} steps from the same start: loss difference {loss_difference:.1e}, "
        f"largest weight difference {weight_difference:.1e} (learning rate 3e-4; "
        f"{'the same' if loss_difference < 1e-4 and weight_difference < 1e-4 else 'NOT the same'} training).",
    ])
    data = {"batch_size": BATCH_SIZE, "check_steps": CHECK_STEPS, "loss_difference": loss_difference,
            "weight_difference": weight_difference, "losses": {n: i["loss"] for n, i in infos.items()},
            "results": {n: t.summary() for n, t in timings.items()}}
    return BenchmarkResult(NAME, markdown, data)
