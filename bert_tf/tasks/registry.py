"""The tasks by name: the one module that imports the task folders, and where every other path looks a task up.

| name | task | model class |
|---|---|---|
| classify | `ClassificationTask` | `BertClassifier` |
| ner | `NerTask` | `BertTokenClassifier` |
| squad | `SquadTask` | `BertSpanLabeler` |
| embed | `EmbeddingTask` | `BertEmbedder` |
| rerank | `RerankTask` | `BertReranker` |
| encoder, pretrainer | `EncoderTask`, `PretrainerTask` | `BertModel`, `BertPretrainer` |

A new task is a folder under `bert_tf/tasks/` with its `Task` (`bert_tf.tasks.base`), its settings
(`bert_tf.tasks.settings.TaskSettings`), model and metrics, and a line in `BUILT_IN_TASKS`; a task defined
elsewhere (a user's, a test's) is added with `register_task`.

Example:
    >>> task_named("ner").model_class.__name__
    'BertTokenClassifier'
    >>> sorted(finetuned_tasks())
    ['classify', 'embed', 'ner', 'rerank', 'squad']
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bert_tf.tasks.base import FinetuneTask, Task
from bert_tf.tasks.classification.task import ClassificationTask
from bert_tf.tasks.embedding.task import EmbeddingTask
from bert_tf.tasks.encoder.task import EncoderTask, PretrainerTask
from bert_tf.tasks.ner.task import NerTask
from bert_tf.tasks.rerank.task import RerankTask
from bert_tf.tasks.settings import SETTINGS_CLASSES
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.squad.task import SquadTask
from bert_tf.tokenizer import BertTokenizer

BUILT_IN_TASKS = (ClassificationTask, NerTask, SquadTask, EmbeddingTask, RerankTask, EncoderTask, PretrainerTask)
TASKS: dict[str, type[Task]] = {}  # every registered task by its name
# Other tools' model folders (`Task.folder_format`) by their name: what `bert-tf convert --format` also writes.
FOLDER_FORMATS: dict[str, type[Task]] = {}


def register_task(task: type[Task]) -> type[Task]:
    """Adds `task` (a `Task` subclass with its `name`, `model_class` and `settings_class`) to the tasks every path
    looks up: fine-tuning, loading, prediction, the exports and the server then take it like the built-in ones.
    Registering the same class again does nothing; another class under a taken name is an error."""
    if not task.name:
        raise ValueError(f"{task.__name__} has no name.")
    if TASKS.get(task.name, task) is not task:
        raise ValueError(f"The task name {task.name!r} is taken by {TASKS[task.name].__name__}.")
    shared = sorted({field.name for field in dataclasses.fields(TaskSpec)} & set(task.settings_class.names()))
    if shared:
        raise ValueError(f"{task.settings_class.__name__} names {shared}, which every task's TaskSpec has already.")
    TASKS[task.name] = task
    SETTINGS_CLASSES[task.name] = task.settings_class
    if task.folder_format:
        FOLDER_FORMATS[task.folder_format.name] = task
    return task


for built_in in BUILT_IN_TASKS:
    register_task(built_in)


def finetuned_tasks() -> tuple[str, ...]:
    """The names of the registered tasks that fine-tune (all but the encoder's and the pretrainer's)."""
    return tuple(name for name, task in TASKS.items() if issubclass(task, FinetuneTask))


def task_named(name: str) -> type[Task]:
    """The task called `name` ("classify", "ner", ...)."""
    if name not in TASKS:
        raise ValueError(f"Unknown task {name!r}; use one of {list(TASKS)}.")
    return TASKS[name]


def task_of_model(model) -> type[Task]:
    """The task whose model class `model` is an instance of."""
    for task in TASKS.values():
        if type(model) is task.model_class:
            return task
    for task in TASKS.values():
        if isinstance(model, task.model_class):
            return task
    raise ValueError(f"a {type(model).__name__} is not a bert-tf model "
                     f"({', '.join(task.model_class.__name__ for task in TASKS.values())}).")


def task_of_hf_architecture(architecture: str | None) -> type[FinetuneTask] | None:
    """The fine-tuning task whose Hugging Face class is `architecture` (e.g. "BertForTokenClassification"), or None."""
    return next((TASKS[name] for name in finetuned_tasks() if TASKS[name].hf_architecture == architecture), None)


def task_of_folder(path) -> type[Task] | None:
    """The task whose `folder_format` the folder `path` is in (e.g. a sentence-transformers model), else None."""
    return next((task for task in FOLDER_FORMATS.values() if task.folder_format.detects(Path(path))), None)


def task_from_directory(directory) -> FinetuneTask:
    """The task of a fine-tuned model directory (a `bert_tf.load_model_directory` result), with its saved settings."""
    if directory.task.task not in finetuned_tasks():
        raise ValueError(f"{directory.path} holds a model without a task (an {directory.task.task}); fine-tune it "
                         f"first (bert-tf finetune --init {directory.path} ...).")
    return task_from_spec(directory.task, directory.tokenizer())


def task_from_spec(spec: TaskSpec, tokenizer: BertTokenizer) -> FinetuneTask:
    """The fine-tuning task that `spec` defines, reading text with `tokenizer`."""
    return task_named(spec.task)(tokenizer, spec)
