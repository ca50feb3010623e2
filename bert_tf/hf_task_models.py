"""Fine-tuned BERT in Hugging Face's format, both ways: bert-tf's task models as transformers' task classes.

| bert-tf | transformers | head there |
|---|---|---|
| `BertClassifier` | `BertForSequenceClassification` (`id2label`, `problem_type`) | `classifier` |
| `BertTokenClassifier` | `BertForTokenClassification` (`id2label`) | `classifier` |
| `BertSpanLabeler` | `BertForQuestionAnswering` | `qa_outputs` |

The encoder is `bert.` in each (the last two without a pooler); the head is one dense layer, stored
[out, in] as every linear weight. transformers' config has no field for bert-tf's `TaskSpec` (text
pairs, seq_length, NER's scheme, ...): `write_hf_task_model` keeps it under `TASK_SPEC_KEY`, which
transformers leaves as it is, and `hf_task_spec` reads it back.

Example:
    >>> write_hf_task_model(classifier, "sst2_hf/", vocab_file="vocab.txt", lower_case=True)  # doctest: +SKIP
    >>> transformers.BertForSequenceClassification.from_pretrained("sst2_hf/")              # doctest: +SKIP
    >>> classifier = read_hf_task_model("sst2_hf/")                                          # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bert_tf.checkpoints.contents import assign_weights
from bert_tf.checkpoints.huggingface import hf_tensors, read_hf_directory_and_head, write_hf_files
from bert_tf.model import BertModel
from bert_tf.tasks.classification.model import BertClassifier
from bert_tf.tasks.ner.model import BertTokenClassifier
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.squad.model import BertSpanLabeler

TASK_SPEC_KEY = "bert_tf_task"  # a config.json entry transformers keeps as it is
HF_TASK_CLASSES = {BertClassifier: ("BertForSequenceClassification", "classifier"),
                   BertTokenClassifier: ("BertForTokenClassification", "classifier"),
                   BertSpanLabeler: ("BertForQuestionAnswering", "qa_outputs")}
PROBLEM_TYPES = {"single_label": "single_label_classification", "multi_label": "multi_label_classification",
                 "regression": "regression"}


def write_hf_task_model(model, out_dir: str | Path, vocab_file: str | Path | None = None,
                        lower_case: bool | None = None, task: TaskSpec | None = None) -> Path:
    """Writes a fine-tuned bert-tf model as the Hugging Face directory of its transformers class (module table),
    with its labels, and its `task` under `TASK_SPEC_KEY` if given; its files as the umask allows."""
    if type(model) not in HF_TASK_CLASSES:
        raise ValueError(f"write_hf_task_model writes {', '.join(cls.__name__ for cls in HF_TASK_CLASSES)}; "
                         f"a {type(model).__name__} is written with bert_tf.write_hf_directory.")
    architecture, head_name = HF_TASK_CLASSES[type(model)]
    weights = {name: variable for name, variable in model.encoder.google_weights().items()
               if isinstance(model, BertClassifier) or not name.startswith("pooler/")}
    head = _head(model)
    tensors = {**hf_tensors(weights, "bert."),
               f"{head_name}.weight": np.ascontiguousarray(np.asarray(head.kernel.numpy(), np.float32).T),
               f"{head_name}.bias": np.asarray(head.bias.numpy(), np.float32)}
    config = {**model.encoder.config.to_hf_dict(), "architectures": [architecture]}
    if not isinstance(model, BertSpanLabeler):
        labels = model.label_names or [f"LABEL_{index}" for index in range(head.units)]
        config.update(id2label=dict(enumerate(labels)), label2id={label: index for index, label in enumerate(labels)})
    if isinstance(model, BertClassifier):
        config["problem_type"] = PROBLEM_TYPES[model.mode]
    if task is not None:
        config[TASK_SPEC_KEY] = task.to_metadata()
    return write_hf_files(out_dir, tensors, config, vocab_file, lower_case)


def read_hf_task_model(path: str | Path):
    """The bert-tf task model of a transformers `BertForSequenceClassification`, `BertForTokenClassification` or
    `BertForQuestionAnswering` directory (`architectures` in its config.json), with its head, label names
    (`id2label`) and classification mode (`problem_type`, else regression for one label, as transformers);
    None for a directory of another class."""
    directory = Path(path)
    settings = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    classes = {architecture: (cls, head_name) for cls, (architecture, head_name) in HF_TASK_CLASSES.items()}
    cls, head_name = classes.get((settings.get("architectures") or [None])[0], (None, None))
    if cls is None:
        return None
    contents, head_tensors = read_hf_directory_and_head(directory, head_name)
    encoder = BertModel(contents.config)
    labels = [str(label) for _, label in sorted((int(index), label)
                                                 for index, label in settings.get("id2label", {}).items())]
    count = len(labels) or settings.get("num_labels", 2)
    if cls is BertClassifier:
        modes = {problem_type: mode for mode, problem_type in PROBLEM_TYPES.items()}
        mode = modes.get(settings.get("problem_type"), "regression" if count == 1 else "single_label")
        model = BertClassifier(encoder, num_classes=count, label_names=labels or None, mode=mode)
    elif cls is BertTokenClassifier:
        model = BertTokenClassifier(encoder, num_labels=count, label_names=labels or None)
    else:
        model = BertSpanLabeler(encoder)
    variables = {name: variable for name, variable in encoder.google_weights().items()
                 if cls is BertClassifier or not name.startswith("pooler/")}  # the other two have no pooler
    assign_weights(variables, contents, what=cls.__name__)
    head = _head(model)
    head.kernel.assign(head_tensors[f"{head_name}.weight"].T)
    head.bias.assign(head_tensors[f"{head_name}.bias"])
    encoder.vocab_file, encoder.lower_case = contents.vocab_file, contents.lower_case
    return model


def hf_task_spec(path: str | Path) -> TaskSpec | None:
    """The `TaskSpec` that `write_hf_task_model` recorded in a Hugging Face directory, else None."""
    recorded = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get(TASK_SPEC_KEY)
    return None if recorded is None else TaskSpec.from_metadata(recorded)


def _head(model):
    """The task model's dense head layer."""
    return model.span_logits if isinstance(model, BertSpanLabeler) else model.classifier
