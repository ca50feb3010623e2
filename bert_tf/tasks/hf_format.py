"""A fine-tuned model as the Hugging Face directory of its task's transformers class, both ways, for a task given.

The task (a `FinetuneTask` class) says its transformers class (`hf_architecture`), head (`hf_head_name`, `hf_head`),
config entries (`hf_config`) and how a model is built from that config (`model_from_hf`); this module moves the
weights. `bert_tf.hf_task_models` finds the task of a model or a directory (through the task registry) and calls
these; a task's own folder format (a sentence-transformers CrossEncoder's) calls them with its task.

Example:
    >>> write_hf_model_as(classifier, ClassificationTask, "sst2_hf/", "vocab.txt", True)  # doctest: +SKIP
    >>> read_hf_model_as("sst2_hf/", ClassificationTask)                                  # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bert_tf.checkpoints.contents import assign_weights
from bert_tf.checkpoints.huggingface import hf_tensors, read_hf_directory_and_head, write_hf_files
from bert_tf.model import BertModel

TASK_SPEC_KEY = "bert_tf_task"  # a config.json entry transformers keeps as it is


def write_hf_model_as(model, model_task, out_dir: str | Path, vocab_file: str | Path | None = None,
                      lower_case: bool | None = None, spec_metadata: dict | None = None) -> Path:
    """Writes `model` as the Hugging Face directory of `model_task`'s transformers class, with `spec_metadata` (a
    `TaskSpec.to_metadata()`) under `TASK_SPEC_KEY` if given; its files as the umask allows."""
    head = model_task.hf_head(model)
    tensors = {**hf_tensors(_encoder_weights(model.encoder, model_task), "bert."),
               f"{model_task.hf_head_name}.weight": np.ascontiguousarray(np.asarray(head.kernel.numpy(), np.float32).T),
               f"{model_task.hf_head_name}.bias": np.asarray(head.bias.numpy(), np.float32)}
    config = {**model.encoder.config.to_hf_dict(), "architectures": [model_task.hf_architecture],
              **model_task.hf_config(model)}
    if spec_metadata is not None:
        config[TASK_SPEC_KEY] = spec_metadata
    return write_hf_files(out_dir, tensors, config, vocab_file, lower_case)


def read_hf_model_as(path: str | Path, model_task):
    """`model_task`'s model from a Hugging Face directory of its transformers class: encoder, head and what
    `model_task.model_from_hf` reads of config.json (labels, ...); what disagrees is one line naming the file."""
    directory = Path(path)
    settings = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    contents, head_tensors = read_hf_directory_and_head(directory, model_task.hf_head_name)
    encoder = BertModel(contents.config)
    try:
        model = model_task.model_from_hf(encoder, settings)
    except ValueError as error:
        raise ValueError(f"{directory / 'config.json'}: {error}") from None
    assign_weights(_encoder_weights(encoder, model_task), contents, what=model_task.model_class.__name__)
    head = model_task.hf_head(model)
    kernel, bias = _head_tensors(head_tensors, model_task, head, model, directory)
    head.kernel.assign(kernel.T)
    head.bias.assign(bias)
    encoder.vocab_file, encoder.lower_case = contents.vocab_file, contents.lower_case
    return model


def _head_tensors(tensors: dict, model_task, head, model, directory: Path) -> tuple[np.ndarray, np.ndarray]:
    """The head's weight ([out, in], as transformers stores it) and bias, checked against the head that config.json
    describes; what disagrees is one line naming it."""
    name = model_task.hf_head_name
    missing = [f"{name}.{leaf}" for leaf in ("weight", "bias") if f"{name}.{leaf}" not in tensors]
    if missing:
        raise ValueError(f"{directory} has no {' or '.join(missing)}: not a complete {model_task.hf_architecture}.")
    weight, bias = tensors[f"{name}.weight"], tensors[f"{name}.bias"]
    rows, columns = head.kernel.shape[1], head.kernel.shape[0]
    described = (f"id2label has {rows} labels" if getattr(model, "label_names", None)
                 else f"config.json describes {rows} outputs")
    if weight.shape[0] != rows or bias.shape != (rows,):
        raise ValueError(f"{directory / 'config.json'}: {described}, the {name} {weight.shape[0]} rows.")
    if weight.shape[1] != columns:
        raise ValueError(f"{directory}: the {name} takes {weight.shape[1]} inputs, the encoder gives {columns}.")
    return weight, bias


def _encoder_weights(encoder: BertModel, model_task) -> dict:
    """The encoder's weights by Google's names that the task's transformers class stores (its pooler only where the
    head reads `pooled_output`)."""
    return {name: variable for name, variable in encoder.google_weights().items()
            if model_task.model_class.encoder_output == "pooled_output" or not name.startswith("pooler/")}
