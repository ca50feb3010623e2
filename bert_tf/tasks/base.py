"""`Task` and `FinetuneTask`: what every path asks of a task, in one interface, so that none branches on its name.

`Task` (every model directory's task, the encoder's too) answers what exports, conversion and loading ask:
its Keras model class, the outputs a SavedModel or TFLite model computes from token ids
(`serving_outputs`), the raw-text signature's preprocessing and outputs (`text_serving`), and the
settings a loaded model fixes in its `TaskSpec` (`spec_for_model`). Its methods are class methods:
they need no tokenizer or data.

`FinetuneTask` adds what fine-tuning, evaluation, prediction and distillation need: a task reads
its files, learns its labels from the training data, turns examples into model inputs, builds its
Keras head, turns outputs into plain Python predictions (and prints them), scores predictions
against the labels (and prints the scores: a model's, through its predictions, or a served model's,
whose answers are the same values), gives its soft-target loss, and names its Hugging Face class.
`bert_tf.training.finetune` and `bert_tf.prediction` only call these methods. The tasks are looked up in
`bert_tf.tasks.registry`, never compared by name.

Flow:
    task = task_from_spec(config.task_spec(), tokenizer)    # bert_tf.tasks.registry
    train = task.prepare(task.read(train_file, fit_labels=True), training=True)
    dev = task.prepare(task.read(dev_file), training=False)
    model = task.build_model(encoder, dropout)
    model.fit(task.training_batches(train, batch_size, ...))
    task.evaluate(model, dev, batch_size)        # {"accuracy": ..., ...}
    task.spec                                    # the bert_tf.TaskSpec saved with the model (labels learned)
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from bert_tf.tasks.bucketing import batch_examples
from bert_tf.tasks.model_outputs import predict_examples
from bert_tf.tasks.settings import TaskSettings
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.text_serving import PackedTextServing, TextServing
from bert_tf.tokenizer import BertTokenizer


def hf_label_names(settings: dict) -> list[str]:
    """The label names of a transformers config (`id2label`, in id order); [] without them. Ids other than 0 to n - 1
    each once, or a name given twice, are an error naming `id2label`.

    Example:
        >>> hf_label_names({"id2label": {"1": "positive", "0": "negative"}})
        ['negative', 'positive']
        >>> hf_label_names({"id2label": {"0": "negative", "7": "positive"}})
        Traceback (most recent call last):
        ...
        ValueError: id2label has ids 0, 7; they must be 0 to 1, each once.
    """
    try:
        by_id = sorted((int(index), str(label)) for index, label in settings.get("id2label", {}).items())
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"id2label must map ids 0, 1, ... to names, not {settings['id2label']!r}.") from None
    ids, names = [index for index, _ in by_id], [name for _, name in by_id]
    if ids != list(range(len(ids))):
        raise ValueError(f"id2label has ids {', '.join(map(str, ids))}; they must be 0 to {len(ids) - 1}, each once.")
    twice = next((name for index, name in enumerate(names) if name in names[:index]), None)
    if twice is not None:
        raise ValueError(f"id2label names {twice!r} twice; each label needs a name of its own.")
    return names


def served_text(value) -> str:
    """A string a server answered (bytes, UTF-8; a broken byte replaced) as str."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


@dataclasses.dataclass(frozen=True)
class FolderFormat:
    """Another tool's model folder that a task's models are read from and written to (`bert-tf convert`)."""

    name: str  # `bert-tf convert --format NAME`
    detects: Callable[[Path], bool]  # whether a folder is in this format
    read: Callable[[Path], tuple[keras.Model, int | None]]  # the task model and the longest input it reads, if said
    write: Callable[..., Path]  # (model, out_dir, vocab_file, lower_case, seq_length) → out_dir


class Task(abc.ABC):
    """A model directory's task: its model class, its exported outputs and its raw-text signature."""

    name = ""  # the task's name in a TaskSpec and on the command line
    model_class: type = None  # the Keras model class of the task
    settings_class: type[TaskSettings] = TaskSettings  # the task's own settings (`TaskSpec.settings`)
    default_seq_length = 128  # tokens per model input unless given
    windowed = False  # a raw text may need several model windows (no raw-text TFLite model: it has no ragged ops)
    text_padding = "max_length"  # how the raw-text signature pads a batch: "max_length" or "longest"
    reads_text_pairs = False  # the model may read two texts per example (`TaskSpec.text_pair`)
    text_serving_class: type[TextServing] = PackedTextServing  # the raw-text signature (`text_serving`)
    folder_format: FolderFormat | None = None  # another tool's folder of the task's models, read and written
    served_outputs: tuple[str, ...] = ()  # the raw-text signature's outputs `served_predictions` reads (): all)

    @classmethod
    def served_model(cls, model: keras.Model) -> keras.Model:
        """The Keras model the exported signatures call (a pretrainer's encoder)."""
        return model

    @classmethod
    @abc.abstractmethod
    def serving_outputs(cls, model: keras.Model, spec: TaskSpec, ids: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """The exported outputs for the id tensors `ids` (BERT's three names), each row one model input."""

    @classmethod
    def serving_info(cls, model: keras.Model, spec: TaskSpec) -> dict[str, tf.Tensor]:
        """The task's own settings in an export's `model_info` (scalars or vectors)."""
        return {"label_names": tf.constant(spec.label_names)} if spec.label_names else {}

    @classmethod
    def text_serving(cls, model: keras.Model, spec: TaskSpec, tokenizer: BertTokenizer) -> TextServing:
        """The raw-text signature's preprocessing and outputs (`bert_tf.tasks.text_serving`)."""
        return cls.text_serving_class(cls, model, spec, tokenizer)

    @classmethod
    def served_predictions(cls, outputs: dict, info: dict) -> list:
        """Plain predictions, one per example, from a served raw-text signature's `outputs` (numpy arrays, those of
        `served_outputs`) for a batch, as `FinetuneTask.predictions` gives them for the same examples; `info`: the
        export's `model_info` as plain values (`serving.client.server_prediction.ServerPredictor`). By default each
        example's outputs as lists."""
        rows = len(next(iter(outputs.values())))
        return [{name: np.asarray(values[row]).tolist() for name, values in outputs.items()} for row in range(rows)]

    @classmethod
    def sentence_vectors(cls, spec: TaskSpec) -> dict:
        """How the model makes sentence vectors, where it was trained to (`pooling`, `normalize`); {} for models that
        leave it to the caller."""
        return {}

    @classmethod
    def spec_for_model(cls, model: keras.Model, spec: TaskSpec) -> TaskSpec:
        """`spec` completed with what the loaded `model` fixes (its label names, its classification mode)."""
        return spec


class FinetuneTask(Task):
    """A task that fine-tunes: the shared batching and evaluation; subclasses fill in the task-specific parts."""

    primary_metric = ""  # the score that picks the best epoch (`primary_metric_for`)
    hf_architecture = ""  # the transformers class of the fine-tuned model (`bert_tf.hf_task_models`)
    hf_head_name = ""  # its head's weight names there
    learns_from_unlabeled_text = False  # a teacher can label raw text for its students (`labelled_by`)
    distils_layers = True  # a student can also match the teacher's hidden states and attention (`Distiller`)
    input_fields: tuple[tuple[str, ...], tuple[str, ...]] = (("text",), ())  # an example's fields: required, optional
    per_position = False  # the model's outputs are per token ([batch, length, ...])
    label_padding = 0  # the label of padding positions (per-token labels only)

    @classmethod
    def primary_metric_for(cls, settings) -> str:
        """The dev score that picks the best epoch of a run with the task's `settings`: `primary_metric`."""
        return cls.primary_metric

    def __init__(self, tokenizer: BertTokenizer, spec: TaskSpec):
        if spec.task != self.name:
            raise ValueError(f"{type(self).__name__} runs task {self.name!r}, not {spec.task!r}.")
        self.tokenizer = tokenizer
        self.spec = spec  # replaced (it is frozen) when the training data teaches the labels

    @property
    def seq_length(self) -> int:
        return self.spec.seq_length

    # ----- the task's own parts ------------------------------------------------------------

    @abc.abstractmethod
    def read(self, path, fit_labels: bool = False, need_labels: bool = True):
        """The examples of a data file; `fit_labels`: learn the label names from them (the training file)."""

    def subset(self, examples, indices):
        """The examples at `indices` (a random part of the training file)."""
        return [examples[index] for index in indices]

    @abc.abstractmethod
    def prepare(self, examples, training: bool):
        """Examples → a data object holding what `batches` and `scores` need (labels checked against the model's)."""

    @abc.abstractmethod
    def dataset(self, data) -> tuple[tf.data.Dataset, list[int]]:
        """One element per model input sequence (unpadded), and the sequences' lengths."""

    @abc.abstractmethod
    def build_model(self, encoder, dropout: float) -> keras.Model:
        """The task's model (encoder + head) with `dropout` before the head."""

    def configure_training(self, model: keras.Model, config) -> None:
        """Sets what the run's settings (`config`, a FinetuneConfig) change in how `model` trains; nothing by default."""

    def loss(self, config, data):
        """The loss to compile with ("auto": the head's default)."""
        return "auto"

    def class_weight(self, config, data) -> dict | None:
        """`fit(class_weight=...)`, or None."""
        return None

    def training_summary(self, config, data) -> str:
        """What the run inferred from the training data `data` (`prepare`'s) that `config` did not say, in a line
        printed as training starts; "" where nothing was."""
        return ""

    def scores(self, data, outputs: list) -> dict:
        """Evaluation scores from the model outputs of every sequence: those of its predictions."""
        return self.prediction_scores(data.examples, self.predictions(data, outputs))

    @abc.abstractmethod
    def prediction_scores(self, examples, predictions: list) -> dict:
        """Evaluation scores of plain predictions, one per example of `examples` (as `read` gives them): `predictions`'s,
        or a served model's (`serving.client.server_prediction.ServerPredictor` answers with the same values)."""

    @abc.abstractmethod
    def predictions(self, data, outputs: list) -> list:
        """Plain Python predictions, one per example."""

    @abc.abstractmethod
    def inputs_of(self, examples) -> list[dict]:
        """Each example's input fields (`TaskSpec.text_inputs`): what `examples_from_inputs` reads, and a server."""

    @classmethod
    @abc.abstractmethod
    def format_scores(cls, scores: dict) -> str:
        """The report of `scores` (as `evaluate` returns them), as `bert-tf evaluate` and `finetune` print it."""

    @classmethod
    @abc.abstractmethod
    def prediction_lines(cls, inputs: list[dict], predictions: list) -> list[str]:
        """How `bert-tf predict` prints `predictions`, one per example of `inputs` (the task's input fields)."""

    @classmethod
    @abc.abstractmethod
    def soft_target_loss(cls, student: keras.Model, teacher_outputs, student_outputs, labels,
                         temperature: float) -> tf.Tensor:
        """The distillation term of `student` matching the teacher's outputs (`bert_tf.distillation`), float32."""

    @classmethod
    def hf_head(cls, model: keras.Model) -> keras.layers.Dense:
        """The task model's dense head, stored as transformers' `hf_head_name` layer."""
        return model.classifier

    @classmethod
    def hf_config(cls, model: keras.Model) -> dict:
        """The entries of transformers' config.json that describe the head (`id2label`, `problem_type`)."""
        labels = model.label_names or [f"LABEL_{index}" for index in range(cls.hf_head(model).units)]
        return {"id2label": dict(enumerate(labels)), "label2id": {label: index for index, label in enumerate(labels)}}

    @classmethod
    @abc.abstractmethod
    def model_from_hf(cls, encoder, settings: dict) -> keras.Model:
        """The task model of a transformers config (`settings`, config.json) around `encoder`, head not yet loaded."""

    def examples_from_inputs(self, inputs: list[dict]):
        """Examples to predict from input fields, one dict per example (`input_fields`: `text` and, for pair
        classifiers, `text_b`; `question` and `context`)."""
        required, optional = self.input_fields
        given = {name for example in inputs for name in example}
        extra, missing = sorted(given - set(required + optional)), [name for name in required if name not in given]
        if extra or missing:
            raise ValueError(f"This {self.name} model reads {' and '.join(required)} per example; "
                             + (f"it takes no {', '.join(extra)}." if extra else f"{missing[0]} is missing."))
        columns = [[example.get(name) for example in inputs] for name in self.spec.text_inputs]
        return self.examples_from_texts(*(None if all(value is None for value in column) else column
                                          for column in columns))

    def labelled_by(self, model: keras.Model, texts: list[str], source: str, batch_size: int, progress: bool = False):
        """Examples of raw `texts` (one per line of an unlabeled file), labelled with `model`'s predictions (a
        teacher's, `bert-tf distill --unlabeled`; `progress`: a bar, or lines in a file). The tasks that have it (classification, NER) also have
        `joined(examples, more)`: `examples` followed by `more`, and `texts(examples)`: the examples as such
        lines (to augment them, `bert_tf.training.augmentation`)."""
        raise ValueError(f"Unlabeled text teaches classification and NER students, not {self.name!r} ones.")

    def only_prediction(self, model: keras.Model, data, batch_size: int) -> str | None:
        """The one prediction `model` makes for every example of `data` though their labels differ (training
        collapsed to one class), as text; else None. Tasks without classes return None without predicting."""
        return None

    # ----- shared ------------------------------------------------------------------------

    def training_batches(self, data, batch_size: int, bucketing: bool, seed: int | None) -> tf.data.Dataset:
        dataset, lengths = self.dataset(data)
        return batch_examples(dataset, lengths, batch_size, self.seq_length, training=True, bucketing=bucketing,
                              seed=seed, pad_id=self.tokenizer.vocabulary.pad_id, label_padding=self.label_padding)

    def prediction_batches(self, data, batch_size: int) -> tf.data.Dataset:
        """The model inputs of every sequence of `data`, in order, `batch_size` at a time: what `outputs` runs."""
        dataset, lengths = self.dataset(data)
        return batch_examples(dataset, lengths, batch_size, self.seq_length, training=False,
                              pad_id=self.tokenizer.vocabulary.pad_id, label_padding=self.label_padding)

    def outputs(self, model: keras.Model, data, batch_size: int, progress: bool = False) -> list:
        """The model's outputs for every sequence of `data`, in order."""
        return predict_examples(model, self.prediction_batches(data, batch_size), per_position=self.per_position,
                                progress=progress)

    def evaluate(self, model: keras.Model, data, batch_size: int, progress: bool = False) -> dict:
        return self.scores(data, self.outputs(model, data, batch_size, progress))

    def predict(self, model: keras.Model, data, batch_size: int, progress: bool = False) -> list:
        return self.predictions(data, self.outputs(model, data, batch_size, progress))
