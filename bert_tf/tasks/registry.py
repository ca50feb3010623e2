"""The fine-tuning tasks by name, and the task of a `TaskSpec` or a model directory.

Example:
    >>> directory = bert_tf.load_model_directory("sst2_model")  # doctest: +SKIP
    >>> task_from_directory(directory).name, directory.task.label_names  # doctest: +SKIP
    ('classify', ('negative', 'positive'))
"""

from __future__ import annotations

from bert_tf.model_directory import ModelDirectory
from bert_tf.tasks.base import FinetuneTask
from bert_tf.tasks.classification.task import ClassificationTask
from bert_tf.tasks.ner.task import NerTask
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.squad.task import SquadTask
from bert_tf.tokenizer import BertTokenizer

TASK_CLASSES = {task.name: task for task in (ClassificationTask, NerTask, SquadTask)}


def task_from_directory(directory: ModelDirectory) -> FinetuneTask:
    """The task of a fine-tuned model directory (`bert_tf.load_model_directory`), with its saved settings."""
    if directory.task.task not in TASK_CLASSES:
        raise ValueError(f"{directory.path} holds a model without a task (an {directory.task.task}); fine-tune it "
                         f"first (bert-tf finetune --init {directory.path} ...).")
    return task_from_spec(directory.task, directory.tokenizer())


def task_from_spec(spec: TaskSpec, tokenizer: BertTokenizer) -> FinetuneTask:
    """The task that `spec` defines."""
    return TASK_CLASSES[spec.task](tokenizer, spec)


