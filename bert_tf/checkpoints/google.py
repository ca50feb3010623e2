"""Google's original TF checkpoints (google-research/bert): `bert_model.ckpt.*`, `bert_config.json`, `vocab.txt`.

Variable names are already this package's reference names, after the `bert/` prefix.
"""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from bert_tf.checkpoints.contents import CheckpointContents
from bert_tf.config import BertConfig

# Trainer state that sits next to the weights in Google's checkpoints.
_TRAINER_SUFFIXES = ("/adam_m", "/adam_v")
_TRAINER_NAMES = ("global_step",)


def find_checkpoint_prefix(directory: Path) -> str:
    """The checkpoint prefix (`.../bert_model.ckpt`) inside a directory."""
    prefix = tf.train.latest_checkpoint(str(directory))
    if prefix:
        return prefix
    indexes = sorted(directory.glob("*.ckpt*.index")) or sorted(directory.glob("*.index"))
    if not indexes:
        raise FileNotFoundError(f"No TF checkpoint (*.ckpt.index) found in {directory}.")
    if len(indexes) > 1:
        raise ValueError(f"Several checkpoints in {directory}: {[p.name for p in indexes]}; pass the prefix of one.")
    return str(indexes[0])[: -len(".index")]


def is_google_checkpoint(path: Path) -> bool:
    return path.is_dir() and (path / "bert_config.json").is_file() and bool(list(path.glob("*.index")))


def read_google_checkpoint(path: str | Path) -> CheckpointContents:
    """Reads a Google BERT checkpoint directory (or a checkpoint prefix next to `bert_config.json`)."""
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    config_file = directory / "bert_config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"Google BERT checkpoint: {config_file} is missing.")
    prefix = find_checkpoint_prefix(directory) if path.is_dir() else str(path)
    reader = tf.train.load_checkpoint(prefix)
    weights, ignored, unrecognized = {}, [], []
    for name in sorted(reader.get_variable_to_shape_map()):
        if name in _TRAINER_NAMES or name.endswith(_TRAINER_SUFFIXES):
            ignored.append(name)
        elif name.startswith("bert/"):
            weights[name[len("bert/"):]] = reader.get_tensor(name)
        elif name.startswith("cls/"):
            weights[name] = reader.get_tensor(name)
        else:
            unrecognized.append(name)
    vocab = directory / "vocab.txt"
    return CheckpointContents(
        config=BertConfig.from_json_file(config_file, style="google"),
        weights=weights,
        source=prefix,
        format="google",
        vocab_file=vocab if vocab.is_file() else None,
        ignored=ignored,
        unrecognized=unrecognized,
    )
