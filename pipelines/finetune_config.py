"""`FinetuneConfig`: every setting of a fine-tuning run, in one place (`pipelines.finetune.finetune` runs it).

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
"""

from __future__ import annotations

import dataclasses
import math

from bert_tf.tasks.registry import FINETUNED_TASKS as TASKS
from bert_tf.tasks.registry import task_named
from bert_tf.tasks.spec import DEFAULT_SEQ_LENGTH, TaskSpec
from bert_tf.training.mixed_precision import mixed_precision_error
from bert_tf.training.strategy import STRATEGY_NAMES

EMBEDDING_LOSSES = ("in_batch_negatives", "cosent", "cosine")  # bert_tf.tasks.embedding.losses
BASE_LEARNING_RATE = 5e-5  # BERT's fine-tuning recipe for base and large
SMALL_MODEL_LEARNING_RATE = 1e-4  # models under BERT-base's width from trained weights (benchmarks/RESULTS.md)
# From random weights they learn only at higher rates (1e-4 collapsed BERT-Tiny and BERT-Mini to one class):
RANDOM_START_LEARNING_RATE = 3e-4  # hidden size 256 (BERT-Mini) to 767
NARROW_RANDOM_START_LEARNING_RATE = 1e-3  # hidden size under 256 (BERT-Tiny)


@dataclasses.dataclass
class FinetuneConfig:
    """What to fine-tune, on which data, and how."""

    task: str  # "classify" (sentence or sentence pair), "ner" (CoNLL tags) or "squad" (extractive QA)
    train_file: str  # classify: .csv/.tsv/.jsonl; ner: CoNLL columns; squad: SQuAD v1.1/v2.0 JSON
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
    # Classification.
    text_column: str | None = None  # None: GLUE's and common column names (bert_tf.tasks.classification.data)
    text_pair_column: str | None = None
    label_column: str | None = None
    # The class names in id order (Hugging Face's id2label); the files' labels are these names or their ids
    # 0 .. n-1. Empty: the training file's labels, numerically or alphabetically sorted (bert_tf.tasks.labels).
    label_names: tuple[str, ...] = ()
    multi_label: bool = False  # each example has any number of labels (sigmoid per class)
    label_separator: str = TaskSpec.label_separator  # between the labels of a CSV/TSV cell (multi_label)
    class_weights: bool = False  # weight the loss by n / (k * count) per class, from the training labels
    focal_loss: bool = False  # focal loss instead of cross-entropy (with class_weights: as its alpha)
    focal_gamma: float = 2.0
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
    # TinyBERT's augmentation (pipelines.augmentation): this many copies of each training and unlabeled text, words
    # replaced by a masked-LM's guesses, labelled by the teacher; the masked-LM of `augment_with` (a pre-training
    # checkpoint with its head; None: the teacher directory's own, if it has one).
    augment_copies: int = 0
    augment_with: str | None = None
    # SQuAD (defaults and meaning: bert_tf.TaskSpec, where they are saved with the model).
    doc_stride: int = TaskSpec.doc_stride
    max_query_length: int = TaskSpec.max_query_length
    max_answer_length: int = TaskSpec.max_answer_length
    n_best_size: int = TaskSpec.n_best_size
    null_score_threshold: float = TaskSpec.null_score_threshold
    # Sentence embeddings (bert_tf.tasks.embedding; pooling and normalize are saved with the model in its TaskSpec).
    pooling: str = TaskSpec.pooling  # "mean", "cls" or "max" of the token vectors
    normalize: bool = TaskSpec.normalize  # vectors of length 1
    # The loss: "in_batch_negatives" (pairs, triples, sentences for SimCSE), "cosent" or "cosine" (scored pairs);
    # None: CoSENT for scored pairs, in-batch negatives for the rest.
    embedding_loss: str | None = None
    similarity_scale: float = 20.0  # cosine × this in the in-batch and CoSENT losses (1 / temperature)
    symmetric: bool = False  # in-batch negatives both ways: each positive also finds its anchor
    matryoshka_dims: tuple[int, ...] = ()  # nested sizes the vectors also train at (their first d values)
    score_range: tuple[float, float] = TaskSpec.score_range  # the scores of a scored-pair file (STS-B: 0 to 5)
    # Cached in-batch negatives (bert_tf.tasks.embedding.cached_step): each batch embedded this many examples at a
    # time, the loss and gradients of the whole batch; None: the batch at once.
    mini_batch_size: int | None = None

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"FinetuneConfig: unknown task {self.task!r}; use one of {list(TASKS)}.")
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"FinetuneConfig: {field.name} must be a finite number, got {value!r}.")
        for name in ("batch_size", "epochs", "gradient_accumulation_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"FinetuneConfig: {name} must be a positive integer, got {value!r}.")
        for name in ("seq_length", "max_train_examples", "early_stopping_patience", "student_layers", "mini_batch_size"):
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
        if self.focal_gamma < 0:
            raise ValueError(f"FinetuneConfig: focal_gamma must be >= 0, got {self.focal_gamma!r}.")
        if self.mini_batch_size is not None and (self.jit_compile or self.teacher is not None):
            raise ValueError("FinetuneConfig: mini_batch_size (cached in-batch negatives) trains without XLA "
                             "(jit_compile) and without a teacher.")
        if self.early_stopping_patience is not None and self.dev_file is None:
            raise ValueError("FinetuneConfig: early stopping needs a dev_file to score.")
        self.label_names = tuple(self.label_names)
        self.matryoshka_dims = tuple(self.matryoshka_dims)
        self.score_range = tuple(self.score_range)
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        for other in TASKS:
            others_only = [name for name in task_named(other).config_fields if getattr(self, name) != defaults[name]]
            if other != self.task and others_only:
                raise ValueError(f"FinetuneConfig: {others_only} apply to task {other!r} only.")
        self._check_embedding_settings()
        if len(set(self.label_names)) != len(self.label_names) or not all(self.label_names):
            raise ValueError(f"FinetuneConfig: label_names must be distinct and not empty, got {self.label_names!r}.")
        if self.multi_label and (self.class_weights or self.focal_loss):
            raise ValueError("FinetuneConfig: class_weights and focal_loss apply to single-label classification.")
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
        return self.seq_length or DEFAULT_SEQ_LENGTH[self.task]

    def task_spec(self) -> TaskSpec:
        """The task definition this run starts from (the labels, columns and SQuAD version come from the data)."""
        return TaskSpec(task=self.task, seq_length=self.sequence_length(), multi_label=self.multi_label,
                        columns=(self.text_column, self.text_pair_column, self.label_column),
                        label_names=self.label_names,
                        label_separator=self.label_separator, doc_stride=self.doc_stride,
                        max_query_length=self.max_query_length, max_answer_length=self.max_answer_length,
                        n_best_size=self.n_best_size, null_score_threshold=self.null_score_threshold,
                        pooling=self.pooling, normalize=self.normalize, score_range=self.score_range)

    def _check_embedding_settings(self) -> None:
        if self.embedding_loss not in (None, *EMBEDDING_LOSSES):
            raise ValueError(f"FinetuneConfig: unknown embedding_loss {self.embedding_loss!r}; use one of "
                             f"{list(EMBEDDING_LOSSES)}.")
        if not math.isfinite(self.similarity_scale) or self.similarity_scale <= 0:
            raise ValueError(f"FinetuneConfig: similarity_scale must be a positive number, got {self.similarity_scale!r}.")
        if any(isinstance(dim, bool) or not isinstance(dim, int) or dim < 1 for dim in self.matryoshka_dims):
            raise ValueError(f"FinetuneConfig: matryoshka_dims must be positive integers, got {self.matryoshka_dims!r}.")
        low, high = self.score_range if len(self.score_range) == 2 else (None, None)
        if low is None or not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"FinetuneConfig: score_range must be two finite numbers, the lower first; got "
                             f"{self.score_range!r}.")

    def primary_metric(self) -> str:
        """The dev score (a key of the evaluation results) that selects the best epoch and drives early stopping
        (higher is better)."""
        return "macro_f1" if self.multi_label else task_named(self.task).primary_metric
