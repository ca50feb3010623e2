"""BERT pre-training with a custom loop: any strategy, checkpoints, resume, TensorBoard, progress.

A custom loop rather than `model.fit`: Keras 3's `fit` fails under
`MultiWorkerMirroredStrategy` (tensorflow/tensorflow#72388), and resuming a killed run
needs the data position, which `fit` does not save. `BertPretrainer` still trains with
`fit` on one host.

A run survives being killed: it checkpoints every tenth of its steps or every 5 minutes,
whichever comes first; SIGTERM or SIGINT saves a checkpoint at the current step and ends
it; run again with the same config, it resumes from the newest intact checkpoint and says
from which (see `bert_tf.training.run_folder`).

Example:
    >>> config = PretrainingConfig(model="mini", output_dir="run/", num_train_steps=1000)  # doctest: +SKIP
    >>> run_pretraining(config, dataset_fn)  # dataset_fn(input_context) → batches of features  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import signal
import time
from pathlib import Path
from typing import Callable

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.model import BertModel
from bert_tf.model_directory import save_pretrained
from bert_tf.optimization import OptimizerConfig
from bert_tf.pretrainer import BertPretrainer, loss_denominators
from bert_tf.progress import TextProgress, announce, is_terminal
from bert_tf.training.checkpoint_cadence import CheckpointCadence
from bert_tf.training.mixed_precision import global_policy, mixed_precision_error
from bert_tf.training.replica_step import agreeing_step
from bert_tf.training.run_folder import CheckpointFolder, remove_interrupted_writes
from bert_tf.training.stop_signals import STOP_SIGNALS, StopSignals
from bert_tf.training.strategy import STRATEGY_NAMES, check_batches, is_chief, make_strategy, worker_directory
from bert_tf.vocabulary import read_vocab_file, resolve_lower_case

logger = logging.getLogger(__name__)
MAX_DEFAULT_WARMUP_STEPS = 100  # the default warm-up: a tenth of the run, at most this


@dataclasses.dataclass
class PretrainingConfig:
    """Everything a pre-training run needs (defaults: BERT's recipe for seq 128, scaled to a small run)."""

    output_dir: str  # checkpoints (ckpt-N), TensorBoard logs (logs/), final model (model/)
    # A preset name (see BertConfig.preset_names()), sized to the vocabulary, or a bert_config.json / config.json
    # path; see build_pretrainer.
    model: str = "mini"
    init_checkpoint: str | None = None  # start from these weights (any format from_pretrained reads)
    # Data: what pipelines.pretraining reads and how it builds the features.
    train_files: list[str] = dataclasses.field(default_factory=list)  # BERT text format or TFRecord shards
    vocab_file: str | None = None  # WordPiece vocabulary (saved with the model; sets the model's vocab_size)
    lower_case: bool | None = None  # None: the vocabulary's casing, which a given value must match
    seq_length: int = 128  # tokens per example, [CLS] and [SEP]s included
    max_predictions_per_seq: int = 20  # masked positions per example (BERT: 20 for 128, 80 for 512)
    masked_lm_prob: float = 0.15  # share of tokens selected for prediction
    short_seq_prob: float = 0.1  # share of examples given a shorter random target length
    whole_word_masking: bool = False  # mask every piece of a word together
    # Makes the initial weights, dropout, document order and sentence pairs reproducible (the masks are
    # drawn anew on every pass and run, see pipelines.pretraining); None: different every run.
    seed: int | None = 12345
    # Optimization.
    global_batch_size: int = 32  # examples per step over all replicas (each gets global / replicas)
    num_train_steps: int = 1000  # optimizer updates
    num_warmup_steps: int | None = None  # linear warm-up updates; None: a tenth of num_train_steps, at most 100
    learning_rate: float = 1e-4  # peak learning rate
    optimizer: str = "adamw"  # "adamw" or "lamb" (large batches)
    weight_decay: float = 0.01  # not applied to LayerNorm weights and biases
    gradient_accumulation_steps: int = 1  # batches per optimizer update
    # Hardware.
    strategy: str = "default"  # "default", "mirrored" (local devices) or "multi_worker" (TF_CONFIG)
    mixed_precision: str | None = None  # None, "mixed_float16" (GPUs, with loss scaling) or "mixed_bfloat16"
    jit_compile: bool = False  # compile the training step with XLA
    # Bookkeeping. A checkpoint is written at the steps checkpoint_every divides, after checkpoint_minutes of
    # training since the last one, whichever comes first, and at the last step: a short or slow run keeps its work.
    checkpoint_every: int | None = None  # steps between checkpoints; None: a tenth of the run
    checkpoint_minutes: float | None = 5.0  # training time between checkpoints; None: by steps only
    keep_checkpoints: int = 3  # newest checkpoints kept
    log_every: int = 50  # steps between TensorBoard summaries and progress-line refreshes

    def __post_init__(self):
        if self.strategy not in STRATEGY_NAMES:
            raise ValueError(f"PretrainingConfig: unknown strategy {self.strategy!r}; use one of {list(STRATEGY_NAMES)}.")
        if mixed_precision_error(self.mixed_precision):
            raise ValueError(f"PretrainingConfig: {mixed_precision_error(self.mixed_precision)}")
        for name in ("seq_length", "max_predictions_per_seq", "global_batch_size", "num_train_steps",
                     "checkpoint_every", "checkpoint_minutes", "keep_checkpoints", "log_every"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"PretrainingConfig: {name} must be positive, got {getattr(self, name)!r}.")
        if self.max_predictions_per_seq >= self.seq_length:
            raise ValueError("PretrainingConfig: max_predictions_per_seq must be smaller than seq_length.")
        if self.num_warmup_steps is None:
            self.num_warmup_steps = min(MAX_DEFAULT_WARMUP_STEPS, self.num_train_steps // 10)
        if not 0 <= self.num_warmup_steps < self.num_train_steps:
            raise ValueError(f"PretrainingConfig: num_warmup_steps must be at least 0 and below num_train_steps "
                             f"({self.num_train_steps}), got {self.num_warmup_steps}.")
        if self.vocab_file:
            self.lower_case = resolve_lower_case(self.vocab_file, self.lower_case)

    def optimizer_config(self) -> OptimizerConfig:
        return OptimizerConfig(
            learning_rate=self.learning_rate,
            num_train_steps=self.num_train_steps,
            num_warmup_steps=self.num_warmup_steps,
            optimizer=self.optimizer,
            weight_decay=self.weight_decay,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
        )


@dataclasses.dataclass
class PretrainingResult:
    model: BertPretrainer
    step: int  # batches trained in total, this run and the runs it resumed
    metrics: dict[str, float]  # the last logged values
    checkpoint: str | None  # the newest checkpoint
    # SIGTERM or SIGINT when a signal ended the run early: its checkpoint is saved, model/ is not written.
    stopped_by: signal.Signals | None = None


def build_pretrainer(config: PretrainingConfig) -> BertPretrainer:
    """The model to pre-train: `init_checkpoint`'s weights, or a random start from `model`.

    Its vocab_size is the number of tokens in `vocab_file` (when given): a preset takes it; a
    config file or checkpoint must already have it, or a ValueError names both sizes and files.
    """
    vocab_size = len(read_vocab_file(config.vocab_file)) if config.vocab_file else None
    if config.init_checkpoint:
        pretrainer = BertPretrainer.from_pretrained(config.init_checkpoint)
        source, bert_config = config.init_checkpoint, pretrainer.encoder.config
    elif config.model in BertConfig.preset_names():
        preset = BertConfig.preset(config.model)
        source, bert_config = config.model, preset.replace(vocab_size=vocab_size or preset.vocab_size)
    else:
        source, bert_config = config.model, BertConfig.from_json_file(config.model)
    if vocab_size and bert_config.vocab_size != vocab_size:
        raise ValueError(f"{source} has vocab_size {bert_config.vocab_size:,} but {config.vocab_file} has "
                         f"{vocab_size:,} tokens (one embedding row each): use the vocabulary it was made for, "
                         "or start from a preset name, which takes the vocabulary's size.")
    bert_config.check_sequence_length(config.seq_length, f"seq_length (for {source})")
    return pretrainer if config.init_checkpoint else BertPretrainer(BertModel(bert_config))


def _skipping(dataset_fn, consumed_steps: int):
    """`dataset_fn` that resumes after the batches of `consumed_steps` steps.

    Distributed iterators cannot be checkpointed, so a resumed run replays its (seeded,
    deterministic) pipeline past the batches already trained on: each step took one batch
    per replica from every worker's pipeline.
    """
    def resumed_dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        replicas_per_pipeline = context.num_replicas_in_sync // context.num_input_pipelines
        return dataset_fn(context).skip(consumed_steps * replicas_per_pipeline)

    return resumed_dataset_fn


def run_pretraining(
    config: PretrainingConfig,
    dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset],
    progress: bool = True,
    stop_after_steps: int | None = None,
    max_seconds: float | None = None,
) -> PretrainingResult:
    """Trains until `config.num_train_steps` updates, resuming from the newest intact checkpoint in `output_dir`.

    It says where it starts ("Resuming from step 300 (run/checkpoints/ckpt-300)" or "Starting at
    step 0"), in the log and the progress output. `stop_after_steps` and `max_seconds` end this
    run early, with a checkpoint, for time-sliced or preemptible jobs; so does SIGTERM or SIGINT
    (`PretrainingResult.stopped_by`), which then writes no model. Run again with the same config to
    continue; one for another model is a ValueError.

    `dataset_fn(input_context)` returns this worker's dataset of per-replica batches
    (`input_context.get_per_replica_batch_size(global_batch_size)` examples each) with
    the `PRETRAINING_FEATURES`; shard it with `input_context.input_pipeline_id`.

    Example:
        >>> config = PretrainingConfig(output_dir="run/", num_train_steps=1000)
        >>> result = run_pretraining(config, dataset_fn)  # doctest: +SKIP
        Resuming from step 300 (run/checkpoints/ckpt-300)
    """
    strategy = make_strategy(config.strategy)
    output_dir = Path(config.output_dir)
    chief = is_chief(strategy)
    check_batches(strategy, config.global_batch_size)
    if config.seed is not None:
        keras.utils.set_random_seed(config.seed)  # Python, NumPy and TensorFlow: the initial weights, dropout
    with global_policy(config.mixed_precision), strategy.scope():
        model = build_pretrainer(config)
        # Its global-norm clipping applies to the gradient summed over replicas (bert_tf.optimization).
        optimizer = config.optimizer_config().build()
        if config.mixed_precision == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        # Built now, so that a restored checkpoint finds the optimizer's slots to fill.
        optimizer.build(model.trainable_variables)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")

    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
    # Every worker resumes from the chief's checkpoints (a filesystem they share) and writes its own copy.
    checkpoints = CheckpointFolder(output_dir / "checkpoints")
    saved_to = CheckpointFolder(worker_directory(str(checkpoints.directory), strategy))
    if chief:
        remove_interrupted_writes(output_dir)
    checkpoints.check_model_config(model.encoder.config)
    restored = checkpoints.restore_newest_intact(checkpoint)
    newest = None if restored is None else str(checkpoints.prefix(restored))
    if chief:
        checkpoints.record_model_config(model.encoder.config)
        announce(f"Resuming from step {restored} ({newest})" if newest else "Starting at step 0", progress, logger)
    iterator = iter(strategy.distribute_datasets_from_function(_skipping(dataset_fn, int(step.numpy()))))
    total_batches = config.num_train_steps * config.gradient_accumulation_steps

    @tf.function(jit_compile=config.jit_compile or None)
    def compute_gradients(features, denominators):
        with tf.GradientTape() as tape:
            outputs = model(features, training=True)
            scaled_loss = optimizer.scale_loss(model.loss_and_metrics(features, outputs, denominators))
        return tape.gradient(scaled_loss, model.trainable_variables)

    def train_one_batch(features):
        # XLA may compile the forward and backward pass; what synchronises replicas (the
        # global loss denominators, the gradient sum) stays outside it.
        gradients = compute_gradients(features, loss_denominators(features))
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    train_step = agreeing_step(strategy, train_one_batch)

    if chief:
        (output_dir / "logs").mkdir(parents=True, exist_ok=True)
        (output_dir / "pretraining_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    writer = tf.summary.create_file_writer(str(output_dir / "logs")) if chief else tf.summary.create_noop_writer()
    metrics, started = {}, time.perf_counter()
    current = started_step = int(step.numpy())
    # A bar in a terminal; elsewhere (a log file) plain lines at a steady pace.
    shown = progress and chief
    progbar = keras.utils.Progbar(total_batches, stateful_metrics=["examples/s"], verbose=int(shown and is_terminal()))
    progbar.update(started_step)
    text_progress = TextProgress(total_batches, config.global_batch_size, first_step=started_step) \
        if shown and not is_terminal() else None
    cadence = CheckpointCadence(config.checkpoint_every or max(1, total_batches // 10),
                                None if config.checkpoint_minutes is None else config.checkpoint_minutes * 60)
    last_step = min(total_batches, started_step + (stop_after_steps or total_batches))
    stopped_by = None
    with StopSignals() as signals:
        while current < last_step:
            out_of_time = max_seconds is not None and time.perf_counter() - started >= max_seconds
            requests = [cadence.time_due(), out_of_time, *(signals.received == s for s in STOP_SIGNALS)]
            agreed = train_step(iterator, tf.constant([float(r) for r in requests])).numpy() > 0
            step.assign_add(1)
            checkpoint_due, out_of_time, *signalled = agreed
            stopped_by = next((s for s, received in zip(STOP_SIGNALS, signalled) if received), None)
            current = int(step.numpy())
            if out_of_time or stopped_by:
                last_step = current
            if current % config.log_every == 0 or current == last_step:
                elapsed = time.perf_counter() - started
                metrics = {m.name: float(m.result()) for m in model.metrics if m.name != "loss"}
                metrics["loss"] = metrics["mlm_loss"] + metrics["nsp_loss"]
                metrics["examples/s"] = (current - started_step) * config.global_batch_size / max(elapsed, 1e-9)
                metrics["learning_rate"] = float(optimizer.learning_rate)
                with writer.as_default(step=current):
                    for name, value in metrics.items():
                        tf.summary.scalar(name.replace("/", "_per_"), value)
                for metric in model.metrics:
                    metric.reset_state()
                progbar.update(current, values=[(k, v) for k, v in metrics.items() if k != "learning_rate"],
                               finalize=current == last_step)
                if text_progress is not None:
                    text_progress.update(current, {k: v for k, v in metrics.items() if k != "examples/s"})
            if cadence.step_due(current) or checkpoint_due or current == last_step:
                newest = str(saved_to.save(checkpoint, current, keep=config.keep_checkpoints))
                cadence.saved()
    if not chief:
        shutil.rmtree(saved_to.directory, ignore_errors=True)
    elif stopped_by:
        logger.info("%s: stopped at step %d with checkpoint %s.", stopped_by.name, current, newest)
    else:
        save_pretrained(model, output_dir / "model", vocab_file=config.vocab_file, lower_case=config.lower_case,
                        task="pretrainer", seq_length=config.seq_length)
    return PretrainingResult(model=model, step=current, metrics=metrics, checkpoint=newest, stopped_by=stopped_by)
