"""Fine-tuning and evaluation, whole: `finetune(config)` trains and saves a model, `evaluate(model_dir, file)` scores it.

`finetune` reads and checks all data first (an unknown dev label, a malformed line, a
SQuAD answer off its context: an error before any training), then trains with Keras
`fit` (progress bar, AdamW with warm-up and linear decay), scores the dev file after every
epoch (the task's own scores: accuracy/F1/MCC, entity F1, SQuAD EM/F1, added to the Keras
logs as `val_*`), keeps the best epoch's weights (`keras.callbacks.ModelCheckpoint`) and
stops early if asked (`keras.callbacks.EarlyStopping`). Checkpoints go to a temporary
directory next to the output; the output directory is written once, at the end, by
`bert_tf.save_pretrained` (atomic), with the task's settings and the dev scores.

On several devices or hosts (`config.strategy`, as in pre-training), `config.batch_size` is the global
batch, split over the replicas, and N replicas train as one device would on the same batches
(tests/test_finetune_strategies.py); every model is built under the strategy, which trains with
`bert_tf.training.distributed_fit` (the pre-training loop's step: Keras 3's `fit` fails under
`MultiWorkerMirroredStrategy`), and only the chief writes the output directory.

With `config.teacher` (a fine-tuned model directory), the same run distils it (`bert-tf distill`): the
task, labels and settings are the teacher's, the student starts from `config.init` (or the teacher's
own layers) and learns from the labels and the teacher's soft targets (`bert_tf.Distiller`); the
directory written is the student's, with the teacher's task.

Example:
    >>> result = finetune(FinetuneConfig(task="classify", train_file="sst2/train.tsv",  # doctest: +SKIP
    ...                                  dev_file="sst2/dev.tsv", init="pretrain_run/model", output_dir="sst2"))
    >>> result.metrics["accuracy"], result.best_epoch  # doctest: +SKIP
    (0.81, 2)
    >>> evaluate("sst2", "sst2/dev.tsv")[1]["accuracy"]  # doctest: +SKIP
    0.81
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import bert_tf
from bert_tf.checkpoints import check_vocabulary_fits
from bert_tf.checkpoints.installed import is_installed_model_name
from bert_tf.checkpoints.pretrained import presets_home
from bert_tf.distillation import Distiller, student_from_teacher
from bert_tf.inspection.loading import load_inspection_model
from bert_tf.model_directory import exported_version, resolve_model_directory
from bert_tf.optimization import create_optimizer
from bert_tf.precision import with_precision
from bert_tf.progress import TextProgressCallback, announce, is_terminal
from bert_tf.tasks.base import FinetuneTask
from bert_tf.tasks.registry import task_from_directory, task_from_spec
from bert_tf.text_files import existing_file, utf8_lines
from bert_tf.tokenizer import BertTokenizer
from bert_tf.training.distributed_fit import StopOnSignal, TrainingStopped, distributed_fit
from bert_tf.training.mixed_precision import global_policy
from bert_tf.training.stop_signals import StopSignals
from bert_tf.training.strategy import check_batches, check_xla, is_chief, make_strategy
from bert_tf.vocabulary import read_vocab_file, resolve_lower_case
from bert_tf.training.augmentation import augment_texts
from bert_tf.training.finetune_config import FinetuneConfig

CASING_FLAGS = ("--cased (lower_case=False)", "--uncased (lower_case=True)")  # how casing errors name them

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class FinetuneResult:
    output_dir: Path | None  # None on the workers of a multi-worker run but its chief: only the chief writes it
    metrics: dict  # dev scores of the saved weights (empty without a dev file)
    best_epoch: int | None  # 1-based epoch whose weights were saved (None: the last, without a dev file)
    epochs_run: int
    history: dict  # Keras' per-epoch logs: loss, accuracy, val_<score>, ...
    train_examples: int
    train_steps: int  # optimizer updates in the schedule (all epochs)
    train_seconds: float  # model.fit, dev scoring included
    model: keras.Model  # the trained task model (the student, when distilling), on every worker
    stopped: TrainingStopped | None = None  # SIGTERM or SIGINT cut the run short; the best epoch scored was saved


def load_encoder(config: FinetuneConfig):
    """The encoder to start from, its vocab.txt and casing: `(encoder, vocab_file, lower_case)`.

    `config.init` is a checkpoint (any format `bert_tf.from_pretrained` reads, or a preset
    name with weights under `presets_home()`), or a random start: a preset name or a
    bert_config.json (then `config.vocab_file` is required and sets the vocabulary size).
    """
    init = Path(config.init)
    is_config_file = init.is_file() and init.suffix == ".json"
    if not starts_from_random_weights(config):
        encoder = bert_tf.from_pretrained(config.init)
        vocab_file = config.vocab_file or encoder.vocab_file
        if vocab_file is None:
            raise ValueError(f"{config.init} has no vocab.txt; pass the vocabulary it was trained with (--vocab).")
    else:
        if not is_config_file and config.init not in bert_tf.BertConfig.preset_names():
            raise FileNotFoundError(
                f"{config.init} is neither a checkpoint nor a bert_config.json nor a preset name "
                f"({', '.join(bert_tf.BertConfig.preset_names()[-6:])}, ...)."
            )
        if config.vocab_file is None:
            raise ValueError(f"A random start from {config.init} needs a vocabulary (vocab_file / --vocab).")
        vocab_file = config.vocab_file
        vocab_size = len(read_vocab_file(vocab_file))
        if is_config_file:
            bert_config = bert_tf.BertConfig.from_json_file(init)
        else:
            bert_config = bert_tf.BertConfig.preset(config.init, vocab_size=vocab_size)
        encoder = bert_tf.BertModel(bert_config)
    check_vocabulary_fits(len(read_vocab_file(vocab_file)), encoder.config.vocab_size, vocab_file)
    lower_case = resolve_lower_case(vocab_file, config.lower_case, CASING_FLAGS)
    config.task_spec().check_fits(encoder.config)
    return encoder, Path(vocab_file), lower_case


def starts_from_random_weights(config: FinetuneConfig) -> bool:
    """Whether `config.init` is a random start (a preset name or a config file, see `load_encoder`), not trained
    weights (a checkpoint, or the teacher's layers)."""
    if config.teacher is not None and config.init == "teacher":
        return False
    init = Path(config.init)
    if init.is_file() and init.suffix == ".json":
        return True
    return not (init.exists() or Path(f"{init}.index").is_file() or (presets_home() / config.init).exists()
                or is_installed_model_name(config.init))


def teacher_directory(path) -> Path:
    """The model directory a teacher is (`--teacher`); an export for serving is an error that says which to give."""
    if exported_version(Path(path)) is not None:
        raise FileNotFoundError(f"--teacher {path} is an export for serving: give the fine-tuned model directory it "
                                "was exported from (bert-tf finetune's --out).")
    return resolve_model_directory(path)


class DevScores(keras.callbacks.Callback):
    """Scores the dev data after every epoch and adds each number to the epoch's logs as `val_<name>`.

    Keras runs callbacks in list order, so the checkpoint and early-stopping callbacks
    placed after this one see the scores.
    """

    def __init__(self, task: FinetuneTask, data, batch_size: int):
        super().__init__()
        self.task, self.data, self.batch_size = task, data, batch_size
        self.epoch_scores: list[dict] = []

    def on_epoch_end(self, epoch, logs=None):
        scores = self.task.evaluate(self.model, self.data, self.batch_size)
        self.epoch_scores.append(scores)
        if logs is not None:
            logs.update({f"val_{name}": value for name, value in scores.items() if isinstance(value, (int, float))})


def existing_data(path, what: str) -> None:
    """FileNotFoundError in one line unless `path` is a file, or a folder that a task reads (a BEIR set: the embedding
    and rerank tasks' dev data); the task's reader judges the rest."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{what} not found: {path}")


def _check_output_dir(config: FinetuneConfig) -> Path:
    out = Path(config.output_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not config.overwrite:
        raise ValueError(f"{out} exists and is not empty; pass overwrite (--overwrite) to replace it.")
    return out


def _subset(task: FinetuneTask, examples, config: FinetuneConfig):
    if config.max_train_examples is None or config.max_train_examples >= len(examples):
        return examples
    rng = np.random.default_rng(config.seed)
    return task.subset(examples, np.sort(rng.choice(len(examples), config.max_train_examples, replace=False)))


@dataclasses.dataclass
class TrainingData:
    """What a fine-tuning run trains on: its task (labels learned), examples and batches."""

    task: FinetuneTask
    examples: object  # the training examples (a seeded subset with max_train_examples)
    data: object  # the examples as `task.prepare` made them
    batches: tf.data.Dataset  # one epoch of batches, shuffled (and bucketed) anew by each pass over it
    steps: int  # optimizer updates in the whole run (batches x epochs)


def training_data(config: FinetuneConfig, tokenizer: BertTokenizer, teacher=None, progress: bool = False) -> TrainingData:
    """The training data of `config`: the batches `finetune` fits on, epoch after epoch, in the same order
    wherever they are made after `keras.utils.set_random_seed(config.seed)` (a reference framework can
    train on exactly them: benchmarks/quality.py). With a `teacher` (`ModelDirectory`), its task and labels,
    and the unlabeled and augmented texts it labels."""
    task = task_from_spec(config.task_spec(), tokenizer) if teacher is None else task_from_directory(teacher)
    examples = _subset(task, task.read(config.train_file, fit_labels=teacher is None), config)
    for path in config.unlabeled_files:
        texts = [line.strip() for line in utf8_lines(existing_file(path, "Unlabeled file", "--unlabeled"))]
        texts = [text for text in texts if text]
        if texts:
            announce(f"Labelling the {len(texts):,} lines of {path} with the teacher", progress, logger)
            examples = task.joined(examples, task.labelled_by(teacher.model, texts, str(path), config.batch_size,
                                                              progress))
    if config.augment_copies:
        texts = augment_texts(task.texts(examples), _masked_lm(config, teacher), tokenizer, config.augment_copies,
                              seed=config.seed, max_length=task.seq_length, progress=progress)
        announce(f"Labelling {len(texts):,} augmented texts with the teacher", progress, logger)
        if texts:
            examples = task.joined(examples, task.labelled_by(teacher.model, texts, "augmented text", config.batch_size,
                                                              progress))
    data = task.prepare(examples, training=True)
    batches = task.training_batches(data, config.batch_size, config.bucketing, config.seed)
    return TrainingData(task, examples, data, batches, int(batches.cardinality()) * config.epochs)


def finetune(config: FinetuneConfig, progress: bool = True) -> FinetuneResult:
    """Fine-tunes `config.init` on `config.train_file` and writes the model to `config.output_dir`."""
    out = _check_output_dir(config)
    existing_file(config.train_file, "Training file", "--train")  # before the encoder loads
    if config.dev_file:
        existing_data(config.dev_file, "Dev file")
    for path in config.unlabeled_files:
        existing_file(path, "Unlabeled file", "--unlabeled")
    strategy = _strategy(config)
    progress = progress and is_chief(strategy)  # one worker shows it
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():  # every model's variables: the teacher's, the encoder's, the head's, the optimizer's
        teacher = _load_teacher(config) if config.teacher else None
        encoder, vocab_file, lower_case = load_encoder(config) if teacher is None else _student_encoder(config, teacher)
        tokenizer = BertTokenizer(vocab_file, lower_case)
        announce(f"Reading and tokenizing {config.train_file}" + (f" and {config.dev_file}" if config.dev_file else ""),
                 progress, logger)
        training = training_data(config, tokenizer, teacher, progress)
        task, train, steps = training.task, training.data, training.steps
        updates = _optimizer_updates(config, steps)
        dev = task.prepare(task.read(config.dev_file), training=False) if config.dev_file else None
        doing = "Fine-tuning" if teacher is None else (
            f"Distilling {config.teacher} into a student of {encoder.config.num_hidden_layers} layers, hidden "
            f"{encoder.config.hidden_size},")
        replicas = f" over {strategy.num_replicas_in_sync} replicas" if strategy.num_replicas_in_sync > 1 else ""
        announce(f"{doing} on {len(training.examples):,} examples: {config.epochs} epoch{'s' * (config.epochs != 1)} "
                 f"of {steps // config.epochs:,} batches of up to {config.batch_size}{replicas}", progress, logger)
        if task.training_summary(config, train):
            announce(task.training_summary(config, train), progress, logger)
        model = task.build_model(encoder, config.dropout)
        task.configure_training(model, config)
        with global_policy(config.mixed_precision):
            if config.mixed_precision:
                model = with_precision(model, config.mixed_precision)
            if teacher is not None:
                model = Distiller(model, teacher.model, config.temperature, config.soft_weight, config.hidden_weight,
                                  config.attention_weight, config.layer_map)
        learning_rate = config.peak_learning_rate(encoder.config, starts_from_random_weights(config))
        optimizer = create_optimizer(learning_rate, updates, int(updates * config.warmup_proportion),
                                     weight_decay=config.weight_decay,
                                     gradient_accumulation_steps=config.gradient_accumulation_steps)
        model.compile(optimizer=optimizer, loss=task.loss(config, train), jit_compile=config.jit_compile)

    out.parent.mkdir(parents=True, exist_ok=True)
    checkpoints = Path(tempfile.mkdtemp(prefix=f".{out.name}.checkpoints.", dir=out.parent))
    try:
        dev_scores = DevScores(task, dev, config.batch_size) if dev is not None else None
        started = time.perf_counter()
        history, stopped = _fit(model, training.batches, config, strategy, task.class_weight(config, train),
                                dev_scores, checkpoints / "best.weights.h5", progress)
        train_seconds = time.perf_counter() - started
        if stopped is not None and not (dev_scores and dev_scores.epoch_scores and config.select_best):
            raise stopped  # no epoch scored to keep: nothing is saved
        metrics, best_epoch = {}, None
        if dev_scores is not None:
            primary = [scores[config.primary_metric()] for scores in dev_scores.epoch_scores]
            best_epoch = int(np.argmax(primary)) if config.select_best else len(primary) - 1
            if config.select_best:
                model.load_weights(checkpoints / "best.weights.h5")
            metrics = dev_scores.epoch_scores[best_epoch]
            best_epoch += 1
        checked, checked_name = (dev, "dev") if dev is not None else (train, "training")
        _warn_if_collapsed(task, model, checked, checked_name, config, learning_rate)
        epochs_run = len(history.history.get("loss", []))
        epoch_logs = {name: [float(value) for value in values] for name, values in history.history.items()}
        if is_chief(strategy):  # the other workers of a multi-worker run hold the same weights
            bert_tf.save_pretrained(
                model if teacher is None else model.student, out, vocab_file=vocab_file,
                lower_case=tokenizer.lower_case, task=task.spec, dev_scores=metrics,
                training={"config": dataclasses.asdict(config), "train_examples": len(training.examples),
                          "train_steps": updates, "learning_rate": learning_rate, "epochs_run": epochs_run,
                          "best_epoch": best_epoch, "train_seconds": round(train_seconds, 1),
                          "history": epoch_logs},
            )
    finally:
        shutil.rmtree(checkpoints, ignore_errors=True)
    return FinetuneResult(out if is_chief(strategy) else None, metrics, best_epoch, epochs_run, epoch_logs,
                          len(training.examples), updates, train_seconds, model if teacher is None else model.student,
                          stopped)


def _strategy(config: FinetuneConfig) -> tf.distribute.Strategy:
    """`config.strategy`, refused in one line where the run's batches or XLA cannot train under it."""
    strategy = make_strategy(config.strategy)
    check_batches(strategy, config.batch_size, name="batch_size (--batch-size)")
    check_xla(strategy, config.jit_compile)
    return strategy


def _optimizer_updates(config: FinetuneConfig, batches: int) -> int:
    """The optimizer updates of a run of `batches` batches (one per `gradient_accumulation_steps` of them)."""
    updates = batches // config.gradient_accumulation_steps
    if updates < 1:
        raise ValueError(f"gradient_accumulation_steps (--gradient-accumulation-steps) "
                         f"{config.gradient_accumulation_steps} is more than the run's "
                         f"{batches} batches: no optimizer update would happen.")
    return updates


def _load_teacher(config: FinetuneConfig):
    """The teacher's `ModelDirectory`; its task must be the run's."""
    teacher = bert_tf.load_model_directory(teacher_directory(config.teacher))
    if teacher.task.task != config.task:
        raise ValueError(f"The teacher {config.teacher} is a {teacher.task.task!r} model, not a {config.task!r} one.")
    teacher.require_vocab_file()
    return teacher


def _masked_lm(config: FinetuneConfig, teacher):
    """The masked-LM that augments text: `augment_with`'s, or the teacher directory's; with the teacher's vocabulary."""
    source = config.augment_with or config.teacher
    model = load_inspection_model(source)
    if model.pretrainer is None:
        raise ValueError(f"{source} has no masked-LM head to augment text with; pass --augment-with a pre-training "
                         "checkpoint that has one (bert-tf pretrain's model/, Google's bert_model.ckpt, a Hugging Face "
                         "BertForPreTraining or BertForMaskedLM directory).")
    if list(model.tokenizer.vocabulary.tokens) != list(read_vocab_file(teacher.vocab_file)):
        raise ValueError(f"{source} has another vocabulary than the teacher {config.teacher}: augmentation reads "
                         "the teacher's token ids.")
    return model.pretrainer


def _student_encoder(config: FinetuneConfig, teacher):
    """The student's encoder, the teacher's vocab.txt and casing: `student_layers` of the teacher's layers, or
    `config.init` (a checkpoint with the teacher's vocabulary, or a random start from a preset or config file)."""
    if config.init == "teacher":
        encoder = student_from_teacher(teacher.encoder, config.student_layers)
    else:
        encoder, _, _ = load_encoder(dataclasses.replace(config, vocab_file=str(teacher.vocab_file),
                                                         lower_case=teacher.lower_case,
                                                         seq_length=teacher.task.seq_length))
        own = encoder.vocab_file
        if own is not None and read_vocab_file(own) != read_vocab_file(teacher.vocab_file):
            raise ValueError(f"The student {config.init} has another vocabulary ({own}) than the teacher "
                             f"{config.teacher}: the student must read the teacher's token ids.")
    teacher.task.check_fits(encoder.config)
    if encoder.count_params() > teacher.encoder.count_params():
        logger.warning("The student %s (%s parameters) is larger than its teacher %s (%s): distillation makes a model "
                       "smaller; pick a smaller --student.", config.init,
                       f"{encoder.count_params():,}", config.teacher, f"{teacher.encoder.count_params():,}")
    return encoder, teacher.vocab_file, teacher.lower_case


def _warn_if_collapsed(task: FinetuneTask, model, data, name: str, config: FinetuneConfig,
                       learning_rate: float) -> None:
    """Warns when the model predicts one class for every example of `data` (small models at too low a rate)."""
    prediction = task.only_prediction(model, data, config.batch_size)
    if prediction is not None:
        logger.warning("The model predicts %s for every %s example, though their labels differ: training collapsed to "
                       "one class. Try another --learning-rate (this run: %g): small models need a higher one, e.g. "
                       "1e-3 for tiny and 3e-4 for mini from random weights on SST-2 (benchmarks/RESULTS.md).",
                       prediction, name, learning_rate)


def _fit(model, batches, config: FinetuneConfig, strategy: tf.distribute.Strategy, class_weight,
         dev_scores: DevScores | None, best_weights: Path, progress: bool
         ) -> tuple[keras.callbacks.History, TrainingStopped | None]:
    """`model.fit` with the dev scoring, best-epoch checkpoint and early-stopping callbacks the config asks for; under
    a distribution strategy, `distributed_fit`, the pre-training loop's step (Keras 3's `fit` fails under
    MultiWorkerMirroredStrategy and, under MirroredStrategy, skips the data's first order). SIGTERM or SIGINT stops
    `fit` after its step (the epoch cut short is scored as the others): the history, and the stop (None if none)."""
    callbacks = []
    if dev_scores is not None:
        monitor = f"val_{config.primary_metric()}"
        callbacks.append(dev_scores)  # first: the callbacks after it read its scores from the logs
        if config.select_best:
            callbacks.append(keras.callbacks.ModelCheckpoint(
                str(best_weights), monitor=monitor, mode="max", save_best_only=True, save_weights_only=True))
        if config.early_stopping_patience:
            callbacks.append(keras.callbacks.EarlyStopping(
                monitor=monitor, mode="max", patience=config.early_stopping_patience, verbose=int(progress)))
    steps_per_epoch = int(batches.cardinality())
    verbose = 0
    if progress:  # a bar in a terminal; elsewhere plain lines at a steady pace and a line per epoch (not Keras')
        verbose = 1 if is_terminal() else 0
        if not is_terminal():
            callbacks.append(TextProgressCallback(config.epochs, steps_per_epoch, config.batch_size))
    with warnings.catch_warnings():
        # Token-level heads (NER, SQuAD) do not use the pooler, so it gets no gradient; that is expected.
        warnings.filterwarnings("ignore", message=r"Gradients do not exist for variables .*pooler")
        # `batches` shuffles itself (with bucketing); Keras cannot shuffle a tf.data.Dataset. Each pass over it
        # is the next epoch's order: with steps_per_epoch, Keras makes one pass per epoch (without, it opens
        # and drops a pass at every epoch's end, so its epochs would see every other order).
        if config.strategy != "default":
            return distributed_fit(model, batches, strategy, config.epochs, steps_per_epoch, callbacks, verbose,
                                   class_weight), None
        with StopSignals() as signals:
            stop = StopOnSignal(signals)
            history = model.fit(batches, epochs=config.epochs, steps_per_epoch=steps_per_epoch,
                                callbacks=[*callbacks, stop], verbose=verbose, class_weight=class_weight, shuffle=False)
        return history, stop.stopped


def evaluate(model_dir, data_file, batch_size: int = 32, progress: bool = True,
             columns: tuple[str | None, ...] = (None, None, None)) -> tuple[FinetuneTask, dict]:
    """Scores a fine-tuned model directory on a labelled data file: `(task, scores)`; `columns`: the file's text, text
    pair and label columns (classification; None: the model's own)."""
    existing_data(data_file, "Data file")  # before the model loads (seconds)
    directory = bert_tf.load_model_directory(model_dir)
    task = reading_columns(task_from_directory(directory), columns)
    data = task.prepare(task.read(data_file), training=False)
    return task, task.evaluate(directory.model, data, batch_size, progress=progress)


def reading_columns(task: FinetuneTask, columns: tuple[str | None, ...]) -> FinetuneTask:
    """`task`, reading the data files' `columns` (text, text pair, label) where given instead of its own; only tasks
    whose files have columns (classification) take them."""
    if not any(columns):
        return task
    if "columns" not in task.settings_class.names():
        raise ValueError(f"A {task.name} model reads its own file format: --text-column, --text-pair-column and "
                         "--label-column are for classification files.")
    spec = task.spec.replace(columns=tuple(given or own for given, own in zip(columns, task.spec.columns)))
    return task_from_spec(spec, task.tokenizer)
