"""Cheap checks of the command line's paths and names, made before TensorFlow is imported (seconds earlier).

Each is an argparse `type`: a missing file, a folder that holds no model or a misspelt preset is
refused as the arguments are parsed, in one line naming the flag ("bert-tf finetune: error: argument
--init: no preset 'bse'; did you mean 'base'?"), before the command imports anything heavy. They look
at file names only (and read no model): the library still checks what it loads.

Example:
    >>> preset_or_path("tiny")
    'tiny'
    >>> preset_or_path("bert_L4_H265")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: no file, folder or preset 'bert_L4_H265'; did you mean 'bert_L4_H256'?
    >>> preset_or_path("bert_bse")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: no file, folder or preset 'bert_bse'; did you mean 'base'?
"""

from __future__ import annotations

import argparse
import difflib
import functools
from pathlib import Path

from bert_tf_cli.config_defaults import module_constants

STDIN = "-"
# What a folder holding a model has (bert_tf.checkpoints, bert_tf.model_directory, serving.protocol): a file, or a
# pattern of one.
MODEL_FILES = ("model.keras", "model/model.keras", "bert_config.json", "config.json", "modules.json", "saved_model.pb",
               "*.index", "checkpoints/ckpt-*.index", "*/saved_model.pb", "*/model.tflite")
MODEL_KINDS = ("a bert-tf model directory (model.keras), a Google checkpoint (bert_config.json + *.ckpt.index), a "
               "Hugging Face or KerasHub directory (config.json), a sentence-transformers folder (modules.json) or an "
               "export (<version>/saved_model.pb)")
# What `predict` reads: a model directory (or `bert-tf pretrain`'s run folder) or an export.
# bert_tf.checkpoints.installed's names, which importing would import TensorFlow: models installed from the package
# index, named wherever a model is.
INSTALLED_MODELS = ("all-minilm-l6-v2",)
TASK_MODEL_FILES = ("modules.json", "model.keras", "model/model.keras", "saved_model.pb", "model.tflite", "*/saved_model.pb",
                    "*/model.tflite")


def did_you_mean(word: str, choices) -> str:
    """"; did you mean 'X'?" for the choice closest to `word`, or "" when none is close.

    Example:
        >>> did_you_mean("clasify", ["classify", "ner", "squad", "embed"])
        "; did you mean 'classify'?"
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


@functools.cache
def preset_names() -> tuple[str, ...]:
    """`bert_tf.BertConfig.preset_names()`, read from bert_tf/config.py (importing it imports TensorFlow)."""
    constants = module_constants("bert_tf/config.py")
    small = [f"bert_L{layers}_H{hidden}" for layers in constants["_SMALL_BERT_LAYERS"]
             for hidden in constants["_SMALL_BERT_HIDDEN"]]
    return (*small, "bert_L24_H1024", *constants["PRESET_ALIASES"])


def existing_file(text: str) -> str:
    """A file that exists (or - for stdin)."""
    path = Path(text)
    if text == STDIN or path.is_file():
        return text
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    raise argparse.ArgumentTypeError(f"no such file: {text}")


def existing_path(text: str) -> str:
    """A file or folder that exists."""
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {text}")
    return text


def _holds_any(folder: Path, names) -> bool:
    return any(any(folder.glob(name)) if "*" in name else (folder / name).is_file() for name in names)


def model_path(text: str) -> str:
    """A folder that holds a model of a kind bert-tf reads (`MODEL_FILES`), or a checkpoint prefix (X with X.index)."""
    return text if Path(f"{text}.index").is_file() else _folder_holding(text, MODEL_FILES, MODEL_KINDS)


def task_model_path(text: str) -> str:
    """A fine-tuned model: a bert-tf model directory or an export (`TASK_MODEL_FILES`)."""
    return _folder_holding(text, TASK_MODEL_FILES, "a model directory (model.keras, written by `bert-tf finetune`) or "
                                                   "an export (`bert-tf export`'s NAME/<version>/)")


def model_directory_path(text: str) -> str:
    """A bert-tf model directory (`bert_tf.save_pretrained`'s, or `bert-tf pretrain`'s run folder)."""
    return _folder_holding(text, ("model.keras", "model/model.keras", "modules.json"),
                           "a bert-tf model directory (model.keras) or a sentence-transformers folder (modules.json)")


def _folder_holding(text: str, files, expected: str) -> str:
    path = Path(text)
    if text in INSTALLED_MODELS and not path.exists():
        return text
    if path.is_dir() and _holds_any(path, files):
        return text
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such model folder: {text}")
    raise argparse.ArgumentTypeError(f"{text} holds no model: expected {expected}")


def preset_or_path(text: str) -> str:
    """A model (`model_path`), a bert_config.json, or a preset name (`preset_names`), with the closest preset to a
    misspelt name."""
    if text in preset_names() or text in INSTALLED_MODELS or (text.endswith(".json") and Path(text).is_file()):
        return text
    if Path(text).exists() or Path(f"{text}.index").is_file():
        return model_path(text)
    # "bert_bse" is closest to no name as a whole, but is "base" with BERT's name in front
    alias = text.lower().removeprefix("bert").lstrip("_-")
    suggestion = did_you_mean(text, (*preset_names(), *INSTALLED_MODELS)) or did_you_mean(alias, preset_names())
    raise argparse.ArgumentTypeError(f"no file, folder or preset {text!r}{suggestion}")


def student(text: str) -> str:
    """`distill --student`: `teacher`, or what `preset_or_path` takes."""
    return text if text == "teacher" else preset_or_path(text)


def check(flag: str, value, is_valid) -> None:
    """`is_valid(value)` for an argument checked only in some cases (`predict --model` without `--server`): its
    refusal as a ValueError naming `flag`, as argparse names it."""
    try:
        is_valid(value)
    except argparse.ArgumentTypeError as error:
        raise ValueError(f"argument {flag}: {error}") from None
