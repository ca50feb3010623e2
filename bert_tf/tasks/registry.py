"""The tasks by name: the one module that imports the task folders, and where every other path looks a task up.

| name | task | model class |
|---|---|---|
| classify | `ClassificationTask` | `BertClassifier` |
| ner | `NerTask` | `BertTokenClassifier` |
| squad | `SquadTask` | `BertSpanLabeler` |
| embed | `EmbeddingTask` | `BertEmbedder` |
| encoder, pretrainer | `EncoderTask`, `PretrainerTask` | `BertModel`, `BertPretrainer` |

A new task is a folder under `bert_tf/tasks/` with a `Task` (`bert_tf.tasks.base`) and a line in `TASKS`.

Example:
    >>> task_named("ner").model_class.__name__
    'BertTokenClassifier'
    >>> sorted(FINETUNED_TASKS)
    ['classify', 'embed', 'ner', 'squad']
"""

from __future__ import annotations

from pathlib import Path

from bert_tf.tasks.base import FinetuneTask, Task
from bert_tf.tasks.classification.task import ClassificationTask
from bert_tf.tasks.embedding.task import EmbeddingTask
from bert_tf.tasks.encoder.task import EncoderTask, PretrainerTask
from bert_tf.tasks.ner.task import NerTask
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.squad.task import SquadTask
from bert_tf.tokenizer import BertTokenizer

TASKS: dict[str, type[Task]] = {task.name: task for task in (
    ClassificationTask, NerTask, SquadTask, EmbeddingTask, EncoderTask, PretrainerTask)}
FINETUNED_TASKS = tuple(name for name, task in TASKS.items() if issubclass(task, FinetuneTask))
# Other tools' model folders (`Task.folder_format`) by their name: what `bert-tf convert --format` also writes.
FOLDER_FORMATS = {task.folder_format.name: task for task in TASKS.values() if task.folder_format}


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
    return next((TASKS[name] for name in FINETUNED_TASKS if TASKS[name].hf_architecture == architecture), None)


def task_of_folder(path) -> type[Task] | None:
    """The task whose `folder_format` the folder `path` is in (e.g. a sentence-transformers model), else None."""
    return next((task for task in FOLDER_FORMATS.values() if task.folder_format.detects(Path(path))), None)


def task_from_directory(directory) -> FinetuneTask:
    """The task of a fine-tuned model directory (a `bert_tf.load_model_directory` result), with its saved settings."""
    if directory.task.task not in FINETUNED_TASKS:
        raise ValueError(f"{directory.path} holds a model without a task (an {directory.task.task}); fine-tune it "
                         f"first (bert-tf finetune --init {directory.path} ...).")
    return task_from_spec(directory.task, directory.tokenizer())


def task_from_spec(spec: TaskSpec, tokenizer: BertTokenizer) -> FinetuneTask:
    """The fine-tuning task that `spec` defines, reading text with `tokenizer`."""
    return task_named(spec.task)(tokenizer, spec)
