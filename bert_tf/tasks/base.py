"""`FinetuneTask`: what fine-tuning, evaluation and prediction need from a task, in one interface.

A task reads its files, learns its labels from the training data, turns examples into
model inputs, builds its Keras head, scores model outputs, and turns outputs into plain
Python predictions. `pipelines.finetune` and `pipelines.prediction` only call these
methods; the three tasks are `ClassificationTask`, `NerTask` and `SquadTask`.

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

import keras
import tensorflow as tf

from bert_tf.tasks.bucketing import batch_examples
from bert_tf.tasks.model_outputs import predict_examples
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tokenizer import BertTokenizer


class FinetuneTask(abc.ABC):
    """Base class: the shared batching and evaluation; subclasses fill in the task-specific parts."""

    name = ""
    per_position = False  # the model's outputs are per token ([batch, length, ...])
    label_padding = 0  # the label of padding positions (per-token labels only)

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

    def loss(self, config, data):
        """The loss to compile with ("auto": the head's default)."""
        return "auto"

    def class_weight(self, config, data) -> dict | None:
        """`fit(class_weight=...)`, or None."""
        return None

    @abc.abstractmethod
    def scores(self, data, outputs: list) -> dict:
        """Evaluation scores from the model outputs of every sequence."""

    @abc.abstractmethod
    def predictions(self, data, outputs: list) -> list:
        """Plain Python predictions, one per example."""

    def labelled_by(self, model: keras.Model, texts: list[str], source: str, batch_size: int):
        """Examples of raw `texts` (one per line of an unlabeled file), labelled with `model`'s predictions (a
        teacher's, `bert-tf distill --unlabeled`). The tasks that have it (classification, NER) also have
        `joined(examples, more)`: `examples` followed by `more`, and `texts(examples)`: the examples as such
        lines (to augment them, `pipelines.augmentation`)."""
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

    def outputs(self, model: keras.Model, data, batch_size: int, progress: bool = False) -> list:
        """The model's outputs for every sequence of `data`, in order."""
        dataset, lengths = self.dataset(data)
        batches = batch_examples(dataset, lengths, batch_size, self.seq_length, training=False,
                                 pad_id=self.tokenizer.vocabulary.pad_id, label_padding=self.label_padding)
        return predict_examples(model, batches, per_position=self.per_position, progress=progress)

    def evaluate(self, model: keras.Model, data, batch_size: int, progress: bool = False) -> dict:
        return self.scores(data, self.outputs(model, data, batch_size, progress))

    def predict(self, model: keras.Model, data, batch_size: int, progress: bool = False) -> list:
        return self.predictions(data, self.outputs(model, data, batch_size, progress))
