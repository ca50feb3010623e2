"""`FinetuneConfig`: the settings of a fine-tuning run (`bert_tf.training.finetune.finetune` runs it): those every task
shares here, and the task's own in `settings` (its settings class, `bert_tf/tasks/<task>/settings.py`, or a dict of
them by name).

Defaults follow BERT's fine-tuning recipe: AdamW, the peak learning rate reached after 10% of
the steps, then linear decay to 0; 3 epochs; batch 32. The peak rate follows the model's size
and start unless given (`peak_learning_rate`): 5e-5 for BERT-base and larger (BERT's recipe: 2e-5
to 5e-5); for smaller models 1e-4 from trained weights (BERT-Mini from the team's checkpoint), from
random ones 3e-4 (hidden size 256 up) or 1e-3 (benchmarks/RESULTS.md, "Learning rates for a trained
start" and "Learning rates by model size"). Every number must be finite.

Example:
    >>> config = FinetuneConfig(task="classify", train_file="sst2/train.tsv", dev_file="sst2/dev.tsv",
    ...                         init="uncased_L-4_H-256_A-4/", output_dir="sst2_model/")
    >>> config.sequence_length(), config.primary_metric()
    (128, 'accuracy')
    >>> FinetuneConfig(task="squad", train_file="train-v1.1.json", init="tiny", output_dir="qa/",
    ...                settings={"doc_stride": 64}).task_spec().doc_stride
    64
"""

from __future__ import annotations

import dataclasses
import math

from bert_tf.tasks.registry import finetuned_tasks, task_named
from bert_tf.tasks.settings import TaskSettings
from bert_tf.tasks.spec import TaskSpec
from bert_tf.training.mixed_precision import mixed_precision_error
from bert_tf.training.strategy import STRATEGY_NAMES

BASE_LEARNING_RATE = 5e-5  # BERT's fine-tuning recipe for base and large
SMALL_MODEL_LEARNING_RATE = 1e-4  # models under BERT-base's width from trained weights (benchmarks/RESULTS.md)
# From random weights they learn only at higher rates (1e-4 collapsed BERT-Tiny and BERT-Mini to one class):
RANDOM_START_LEARNING_RATE = 3e-4  # hidden size 256 (BERT-Mini) to 767
NARROW_RANDOM_START_LEARNING_RATE = 1e-3  # hidden size under 256 (BERT-Tiny)


@dataclasses.dataclass
class FinetuneConfig:
    """What to fine-tune, on which data, and how."""

    task: str  # a fine-tuning task of bert_tf.tasks.registry: "classify", "ner", "squad", "embed", ...
    train_file: str  # in the task's format: classify .csv/.tsv/.jsonl; ner CoNLL columns; squad SQuAD JSON; ...
    output_dir: str  # the fine-tuned model directory (bert_tf.save_pretrained), written at the end only
    # A checkpoint (any format bert_tf.from_pretrained reads, e.g. `bert-tf pretrain`'s OUT/model), or a
    # random start: a preset name (BertConfig.preset_names()) or a bert_config.json / config.json file.
    init: str
    dev_file: str | None = None  # scored after every epoch; without it, no best-epoch selection or early stopping
    vocab_file: str | None = None  # required for a random start; else overrides the checkpoint's vocab.txt
    lower_case: bool | None = None  # None: the checkpoint's casing, else the vocabulary's (bert_tf.vocabulary)
    seq_length: int | None = None  # tokens per example; None: 128 (classify, ner) or 384 (squad)
    # Optimization (bert_tf.optimization: AdamW, warm-up, linear decay, global-norm clipping at 1).
    batch_size: int = 32
    epochs: int = 3
    learning_rate: float | None = None  # peak rate; None: by the model's size (`peak_learning_rate`)
    warmup_proportion: float = 0.1  # share of the steps spent warming up
    weight_decay: float = 0.01
    dropout: float = 0.1  # of the classification or NER head (the encoder keeps its own config's dropout)
    seed: int = 42  # weights of the head, data order, dropout
    select_best: bool = True  # keep the weights of the epoch with the best dev score (needs dev_file)
    early_stopping_patience: int | None = None  # stop after this many epochs without a better dev score
    bucketing: bool = True  # batch examples of similar length together (each batch padded to its longest)
    max_train_examples: int | None = None  # a seeded random subset of the training file (quick runs)
    overwrite: bool = False  # replace an existing non-empty output_dir
    gradient_accumulation_steps: int = 1  # batches per optimizer update (batch_size x this examples each)
    # Hardware, as in pre-training (bert_tf.training): batch_size is the global batch, split over the replicas, and
    # only the chief of a multi-worker run writes output_dir.
    strategy: str = "default"  # "default" (one device), "mirrored" (local GPUs, else CPUs) or "multi_worker" (TF_CONFIG)
    mixed_precision: str | None = None  # None, "mixed_float16" (GPUs, with loss scaling) or "mixed_bfloat16"
    jit_compile: bool = False  # compile the training step with XLA
    # The label names in id order (Hugging Face's id2label); the files' labels are these names or their ids
    # 0 .. n-1. Empty: the training file's labels, numerically or alphabetically sorted (bert_tf.tasks.labels).
    label_names: tuple[str, ...] = ()
    # The task's own settings: its settings class (`task_named(task).settings_class`), a dict of them by name, or
    # None: their defaults. Always the settings object after construction.
    settings: TaskSettings | dict | None = None
    # Distillation (`bert-tf distill`, bert_tf.distillation): with a teacher (a fine-tuned model directory), the
    # task, its labels and settings are the teacher's; `init` is the student's start, or "teacher": `student_layers`
    # of the teacher's layers (every k-th); the loss mixes the teacher's soft targets at `temperature`.
    teacher: str | None = None
    student_layers: int | None = None
    temperature: float = 2.0
    soft_weight: float = 0.5  # the soft-target loss's share (the rest: the labels' loss)
    # Intermediate layers (TinyBERT): the weights of the hidden-state and attention losses (0: off), and the teacher
    # layer (1-based) each student layer learns from (empty: uniform, the last to the last).
    hidden_weight: float = 0.0
    attention_weight: float = 0.0
    layer_map: tuple[int, ...] = ()
    # Text files, a sentence per line (pairs: a tab between the texts), that the teacher labels and the student
    # learns from besides the training file (classification and NER).
    unlabeled_files: tuple[str, ...] = ()
    # TinyBERT's augmentation (bert_tf.training.augmentation): this many copies of each training and unlabeled text, words
    # replaced by a masked-LM's guesses, labelled by the teacher; the masked-LM of `augment_with` (a pre-training
    # checkpoint with its head; None: the teacher directory's own, if it has one).
    augment_copies: int = 0
    augment_with: str | None = None

    def __post_init__(self):
        if self.task not in finetuned_tasks():
            raise ValueError(f"FinetuneConfig: unknown task {self.task!r}; use one of {list(finetuned_tasks())}.")
        self.settings = self._task_settings()
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"FinetuneConfig: {field.name} must be a finite number, got {value!r}.")
        for name in ("batch_size", "epochs", "gradient_accumulation_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"FinetuneConfig: {name} must be a positive integer, got {value!r}.")
        for name in ("seq_length", "max_train_examples", "early_stopping_patience", "student_layers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"FinetuneConfig: {name} must be a positive integer or None, got {value!r}.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise ValueError(f"FinetuneConfig: seed must be an integer from 0 to 2**32 - 1, got {self.seed!r}.")
        if self.strategy not in STRATEGY_NAMES:
            raise ValueError(f"FinetuneConfig: unknown strategy {self.strategy!r}; use one of {list(STRATEGY_NAMES)}.")
        if mixed_precision_error(self.mixed_precision):
            raise ValueError(f"FinetuneConfig: {mixed_precision_error(self.mixed_precision)}")
        if self.learning_rate is not None and self.learning_rate <= 0:
            raise ValueError(f"FinetuneConfig: learning_rate must be positive, got {self.learning_rate!r}.")
        if not 0 <= self.warmup_proportion < 1:
            raise ValueError(f"FinetuneConfig: warmup_proportion must be in [0, 1), got {self.warmup_proportion!r}.")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"FinetuneConfig: dropout must be in [0, 1), got {self.dropout!r}.")
        if self.weight_decay < 0:
            raise ValueError(f"FinetuneConfig: weight_decay must be >= 0, got {self.weight_decay!r}.")
        if self.early_stopping_patience is not None and self.dev_file is None:
            raise ValueError("FinetuneConfig: early stopping needs a dev_file to score.")
        self.label_names = tuple(self.label_names)
        if len(set(self.label_names)) != len(self.label_names) or not all(self.label_names):
            raise ValueError(f"FinetuneConfig: label_names must be distinct and not empty, got {self.label_names!r}.")
        self.unlabeled_files = tuple(self.unlabeled_files)
        self.layer_map = tuple(self.layer_map)
        if isinstance(self.augment_copies, bool) or not isinstance(self.augment_copies, int) or self.augment_copies < 0:
            raise ValueError(f"FinetuneConfig: augment_copies must be an integer >= 0, got {self.augment_copies!r}.")
        if self.teacher is None and (self.init == "teacher" or self.student_layers is not None or self.unlabeled_files
                                     or self.hidden_weight or self.attention_weight or self.layer_map
                                     or self.augment_copies or self.augment_with):
            raise ValueError("FinetuneConfig: a start from the teacher's layers, unlabeled text, augmentation or layer "
                             "losses need a teacher.")
        if (self.unlabeled_files or self.augment_copies) and not task_named(self.task).learns_from_unlabeled_text:
            raise ValueError("FinetuneConfig: unlabeled and augmented text teach classification and NER students, not "
                             f"{self.task} ones.")
        if (self.hidden_weight or self.attention_weight) and not task_named(self.task).distils_layers:
            raise ValueError("FinetuneConfig: hidden_weight and attention_weight match the layers of classification, "
                             f"NER and SQuAD students, not {self.task} ones.")
        if self.teacher is not None:
            if self.init == "teacher" and self.student_layers is None:
                raise ValueError("FinetuneConfig: init='teacher' needs student_layers: how many of the teacher's "
                                 "layers the student keeps.")
            if self.init != "teacher" and self.student_layers is not None:
                raise ValueError("FinetuneConfig: student_layers goes with init='teacher' only (a student of the "
                                 "teacher's own layers).")
            if self.temperature <= 0:
                raise ValueError(f"FinetuneConfig: temperature must be > 0, got {self.temperature!r}.")
            if not 0 <= self.soft_weight <= 1:
                raise ValueError(f"FinetuneConfig: soft_weight must be in [0, 1], got {self.soft_weight!r}.")
            for name in ("hidden_weight", "attention_weight"):
                if getattr(self, name) < 0:
                    raise ValueError(f"FinetuneConfig: {name} must be >= 0, got {getattr(self, name)!r}.")
        self.task_spec()  # the task's own checks (seq_length against the question, ...)

    def peak_learning_rate(self, model_config, random_start: bool = False) -> float:
        """`learning_rate`, or the default for a model of `model_config` (a `BertConfig`) starting from trained weights
        or, `random_start`, from random ones: 5e-5 from hidden size 768 (BERT-base) up; under it 1e-4 from trained
        weights, from random ones 3e-4 from hidden size 256 (BERT-Mini) up, else 1e-3."""
        if self.learning_rate is not None:
            return self.learning_rate
        if model_config.hidden_size >= 768:
            return BASE_LEARNING_RATE
        if not random_start:
            return SMALL_MODEL_LEARNING_RATE
        return RANDOM_START_LEARNING_RATE if model_config.hidden_size >= 256 else NARROW_RANDOM_START_LEARNING_RATE

    def sequence_length(self) -> int:
        """`seq_length`, or the task's default."""
        return self.seq_length or task_named(self.task).default_seq_length

    def task_spec(self) -> TaskSpec:
        """The task definition this run starts from (the task learns its labels, and more, from the data)."""
        return TaskSpec(task=self.task, seq_length=self.sequence_length(), label_names=self.label_names,
                        settings=self.settings)

    def _task_settings(self) -> TaskSettings:
        """`settings` as the task's settings class (checked by it)."""
        kind = task_named(self.task).settings_class
        if isinstance(self.settings, kind):
            return self.settings
        if self.settings is not None and not isinstance(self.settings, dict):
            raise ValueError(f"FinetuneConfig: task {self.task!r} takes {kind.__name__} settings (or a dict of them), "
                             f"not a {type(self.settings).__name__}.")
        given = dict(self.settings or {})
        unknown = sorted(set(given) - set(kind.names()))
        if unknown:
            raise ValueError(f"FinetuneConfig: {unknown} are not settings of task {self.task!r}"
                             + (f" (its own: {kind.names()})." if kind.names() else " (it has none of its own)."))
        try:
            return kind(**given)
        except ValueError as error:
            raise ValueError(f"FinetuneConfig: {error}") from None

    def primary_metric(self) -> str:
        """The dev score (a key of the evaluation results) that selects the best epoch and drives early stopping
        (higher is better)."""
        return task_named(self.task).primary_metric_for(self.settings)
