"""What a pre-training run keeps on disk across kills: its checkpoints, the model they were made with, and leftovers.

The `ckpt-N` files found on disk are the truth, not TensorFlow's `checkpoint` state file (which
a killed run may never have updated, or which may be gone): the newest checkpoint whose every
tensor reads back is the one to resume from.

Example:
    >>> folder = CheckpointFolder("runs/mini/checkpoints")  # doctest: +SKIP
    >>> folder.check_model_config(bert_config)  # ValueError: the checkpoints belong to another model  # doctest: +SKIP
    >>> folder.restore_newest_intact(checkpoint)  # a warning names each damaged one passed over  # doctest: +SKIP
    300
    >>> folder.save(checkpoint, step=310, keep=3)  # doctest: +SKIP
    PosixPath('runs/mini/checkpoints/ckpt-310')
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil
from pathlib import Path

import tensorflow as tf

from bert_tf.config import BertConfig

logger = logging.getLogger(__name__)
CHECKPOINT_FILE = re.compile(r"ckpt-(\d+)\.(index|data-\d+-of-\d+)")
MODEL_CONFIG_FILE = "model_config.json"  # the BertConfig the checkpoints were made with
STATE_FILE = "checkpoint"  # TensorFlow's record of the newest checkpoint, for tf.train.latest_checkpoint


class CheckpointFolder:
    """The `ckpt-N` checkpoints of one folder, N being the step."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def prefix(self, step: int) -> Path:
        return self.directory / f"ckpt-{step}"

    def steps(self) -> list[int]:
        """The steps of the checkpoints on disk, oldest first, whole or damaged."""
        if not self.directory.is_dir():
            return []
        matches = (CHECKPOINT_FILE.fullmatch(path.name) for path in self.directory.iterdir())
        return sorted({int(match[1]) for match in matches if match})

    def damage(self, step: int) -> str | None:
        """Why checkpoint `step` cannot be restored (a missing, truncated or corrupt file), or None when it can.

        Reads every tensor back, each checked against the checksum in the index.
        """
        try:
            reader = tf.train.load_checkpoint(str(self.prefix(step)))
            for name in reader.get_variable_to_dtype_map():
                reader.get_tensor(name)
        except (tf.errors.OpError, IndexError) as error:  # IndexError: a data file shorter than the index says
            return str(getattr(error, "message", error)).strip().splitlines()[0]
        return None

    def restore_newest_intact(self, checkpoint: tf.train.Checkpoint) -> int | None:
        """Restores the newest intact checkpoint into `checkpoint` and returns its step (None: there is none).

        Each damaged one newer than it gets a warning.
        """
        for step in reversed(self.steps()):
            problem = self.damage(step)
            if problem is None:
                checkpoint.restore(str(self.prefix(step)))
                return step
            logger.warning("Checkpoint %s is damaged (%s); falling back to the one before it.",
                           self.prefix(step), problem)
        return None

    def save(self, checkpoint: tf.train.Checkpoint, step: int, keep: int) -> Path:
        """Writes `ckpt-{step}` and deletes the older checkpoints beyond the `keep` newest.

        Newer ones (damaged ones that `restore_newest_intact` passed over) stay until overwritten or outgrown.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        checkpoint.write(str(self.prefix(step)))
        kept = [s for s in self.steps() if s <= step][-keep:]
        for old in (s for s in self.steps() if s < kept[0]):
            for path in self.directory.glob(f"ckpt-{old}.*"):
                path.unlink()
        state = [f'model_checkpoint_path: "ckpt-{step}"', *(f'all_model_checkpoint_paths: "ckpt-{s}"' for s in kept)]
        _write_atomically(self.directory / STATE_FILE, "\n".join(state) + "\n")
        return self.prefix(step)

    def check_model_config(self, config: BertConfig) -> None:
        """A one-line ValueError if the checkpoints here were made with another model config than `config`."""
        recorded = self.directory / MODEL_CONFIG_FILE
        if not self.steps() or not recorded.is_file():
            return
        theirs, ours = json.loads(recorded.read_text(encoding="utf-8")), dataclasses.asdict(config)
        differences = [f"{name} {theirs.get(name)!r} there, {ours.get(name)!r} now"
                       for name in sorted(theirs.keys() | ours.keys()) if theirs.get(name) != ours.get(name)]
        if differences:
            raise ValueError(f"{self.directory} holds checkpoints of another model ({'; '.join(differences)}): resume "
                             "with the config they were made with (--config), or start afresh in a new --out.")

    def record_model_config(self, config: BertConfig) -> None:
        """Writes `config` beside the checkpoints, for `check_model_config` when the run resumes."""
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.directory / MODEL_CONFIG_FILE,
                          json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True) + "\n")


def remove_interrupted_writes(output_dir: str | Path) -> list[Path]:
    """Deletes what writes killed halfway left in a run's `output_dir`, and returns it.

    That is `checkpoints/ckpt-N_temp/` (TensorFlow writes a checkpoint there, then renames it),
    `checkpoints/*.tmp*` and `*.tempstate*` (files written under a temporary name, then renamed)
    and `.model.*` (`save_pretrained` stages `model/` there).
    """
    output_dir = Path(output_dir)
    checkpoints = output_dir / "checkpoints"
    patterns = {checkpoints: ("ckpt-*_temp*", "*.tmp*", "*.tempstate*"), output_dir: (".model.*",)}
    leftovers = sorted(path for folder, globs in patterns.items() for pattern in globs for path in folder.glob(pattern))
    for path in leftovers:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    if leftovers:
        logger.info("Removed the leftovers of interrupted writes: %s.", ", ".join(str(p) for p in leftovers))
    return leftovers


def _write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of it."""
    partial = path.with_name(f"{path.name}.tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
