"""Fine-tuned BERT in Hugging Face's format, both ways: bert-tf's task models as transformers' task classes.

| bert-tf | transformers | head there |
|---|---|---|
| `BertClassifier` | `BertForSequenceClassification` (`id2label`, `problem_type`) | `classifier` |
| `BertTokenClassifier` | `BertForTokenClassification` (`id2label`) | `classifier` |
| `BertSpanLabeler` | `BertForQuestionAnswering` | `qa_outputs` |

The encoder is `bert.` in each (the last two without a pooler); the head is one dense layer, stored
[out, in] as every linear weight. transformers' config has no field for bert-tf's `TaskSpec` (text
pairs, seq_length, NER's scheme, ...): `write_hf_task_model` keeps it under `TASK_SPEC_KEY`, which
transformers leaves as it is, and `hf_task_spec` reads it back. Each task's transformers class, head and
config entries are its own (`FinetuneTask.hf_architecture`, `hf_head`, `hf_config`, `model_from_hf`).

Example:
    >>> write_hf_task_model(classifier, "sst2_hf/", vocab_file="vocab.txt", lower_case=True)  # doctest: +SKIP
    >>> transformers.BertForSequenceClassification.from_pretrained("sst2_hf/")              # doctest: +SKIP
    >>> classifier = read_hf_task_model("sst2_hf/")                                          # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path

from bert_tf.tasks.hf_format import TASK_SPEC_KEY, read_hf_model_as, write_hf_model_as
from bert_tf.tasks.registry import (finetuned_tasks, task_named, task_of_folder, task_of_hf_architecture,
                                    task_of_model)
from bert_tf.tasks.spec import TaskSpec


def write_hf_task_model(model, out_dir: str | Path, vocab_file: str | Path | None = None,
                        lower_case: bool | None = None, task: TaskSpec | None = None) -> Path:
    """Writes a fine-tuned bert-tf model as the Hugging Face directory of its transformers class (module table),
    with its labels, and its `task` under `TASK_SPEC_KEY` if given; its files as the umask allows."""
    model_task = task_of_model(model)
    if not model_task.hf_architecture:
        task_models = ", ".join(task_named(name).model_class.__name__ for name in finetuned_tasks())
        raise ValueError(f"write_hf_task_model writes {task_models}; a {type(model).__name__} is written with "
                         "bert_tf.write_hf_directory.")
    return write_hf_model_as(model, model_task, out_dir, vocab_file, lower_case,
                             None if task is None else task.to_metadata())


def read_hf_task_model(path: str | Path, task=None):
    """The bert-tf task model of a transformers `BertForSequenceClassification`, `BertForTokenClassification` or
    `BertForQuestionAnswering` directory (`architectures` in its config.json), with its head, label names
    (`id2label`) and classification mode (`problem_type`, else regression for one label, as transformers);
    None for a directory of another class. `task`: the fine-tuning task to read it as, where several share its
    class (a one-label `BertForSequenceClassification` is a classifier, or a reranker); None: the task recorded under
    `TASK_SPEC_KEY`, else the one whose folder format the directory is in (`task_of_folder`: a sentence-transformers
    CrossEncoder's), else the first task of its class (`task_of_hf_architecture`)."""
    directory = Path(path)
    settings = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    architecture = (settings.get("architectures") or [None])[0]
    recorded = settings.get(TASK_SPEC_KEY)
    if task is None and isinstance(recorded, dict) and recorded.get("task") in finetuned_tasks():
        task = task_named(recorded["task"])
    folder_task = task_of_folder(directory) if task is None else None
    if folder_task is not None and folder_task.hf_architecture == architecture:
        task = folder_task
    model_task = task_of_hf_architecture(architecture) if task is None else task
    if model_task is None or model_task.hf_architecture != architecture:
        return None
    return read_hf_model_as(directory, model_task)


def hf_task_spec(path: str | Path) -> TaskSpec | None:
    """The `TaskSpec` that `write_hf_task_model` recorded in a Hugging Face directory, else None."""
    recorded = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get(TASK_SPEC_KEY)
    return None if recorded is None else TaskSpec.from_metadata(recorded)
