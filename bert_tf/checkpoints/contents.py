"""What every checkpoint reader returns, and the one routine that copies it into variables.

All readers translate their source's variable names into Google's original BERT names
(without the `bert/` prefix, e.g. `encoder/layer_0/attention/self/query/kernel`, and
`cls/predictions/...` for the pre-training heads), with Google's layouts (dense kernels
[in, out]). Loading a model is then a lookup in one table.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np

from bert_tf.config import BertConfig

logger = logging.getLogger(__name__)


class CheckpointMismatchError(ValueError):
    """The checkpoint does not fit the model: missing variables or wrong shapes. Nothing was loaded."""


@dataclasses.dataclass
class CheckpointContents:
    """A checkpoint read into memory, whatever its original format."""

    config: BertConfig
    weights: dict[str, np.ndarray]  # Google names (no "bert/" prefix) → values
    source: str  # where it was read from, for messages
    format: str  # "google", "hf", "keras_hub" or "bert_tf"
    vocab_file: Path | None = None
    lower_case: bool | None = None  # None: the checkpoint does not say
    ignored: list[str] = dataclasses.field(default_factory=list)  # source names skipped by design (optimizer slots, ...)
    unrecognized: list[str] = dataclasses.field(default_factory=list)  # source names no table knows

    def head_weights(self, prefix: str = "cls/") -> dict[str, np.ndarray]:
        """The pre-training head weights (`cls/predictions/*`, `cls/seq_relationship/*`), if any."""
        return {name: value for name, value in self.weights.items() if name.startswith(prefix)}


def assign_weights(variables: dict, contents: CheckpointContents, what: str) -> list[str]:
    """Copies `contents.weights` into `variables` (name → Keras variable), all or nothing.

    Raises `CheckpointMismatchError` naming every missing variable and every shape
    mismatch before anything is assigned. Returns the checkpoint names left unused.
    """
    missing = sorted(set(variables) - set(contents.weights))
    wrong_shapes = [
        f"{name}: checkpoint {tuple(contents.weights[name].shape)} vs {what} {tuple(var.shape)}"
        for name, var in variables.items()
        if name in contents.weights and tuple(contents.weights[name].shape) != tuple(var.shape)
    ]
    if missing or wrong_shapes:
        problems = []
        if missing:
            problems.append(f"{len(missing)} variable(s) missing from the checkpoint: {', '.join(missing[:10])}"
                            + (" ..." if len(missing) > 10 else ""))
        if wrong_shapes:
            problems.append(f"{len(wrong_shapes)} shape mismatch(es) (does the config match the weights?): "
                            + "; ".join(wrong_shapes[:10]) + (" ..." if len(wrong_shapes) > 10 else ""))
        raise CheckpointMismatchError(f"Cannot load {contents.source} into the {what}: " + ". ".join(problems) + ".")
    for name, var in variables.items():
        var.assign(contents.weights[name].astype(var.dtype))
    unused = sorted(set(contents.weights) - set(variables))
    for name in contents.unrecognized:
        logger.warning("%s: variable %r is not part of BERT and was not loaded.", contents.source, name)
    logger.info("Loaded %d variables from %s into the %s.", len(variables), contents.source, what)
    return unused
