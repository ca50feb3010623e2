"""`from_pretrained`: one entry point for every checkpoint format, into a `BertModel`; `read_checkpoint`:
any of them into memory.

The formats: Google's checkpoints, Hugging Face and KerasHub directories (the readers of this
package), presets named with local weights (`presets_home`), and bert-tf's own model directory,
whose reader `bert_tf.model_directory` registers here (`register_format`) when it is imported (as
`import bert_tf` does): reading a model directory builds heads and tokenizers, which this package
never imports.

Example:
    >>> model = from_pretrained("uncased_L-2_H-128_A-2/")   # doctest: +SKIP
    >>> model.config.hidden_size, model.vocab_file            # doctest: +SKIP
    (128, PosixPath('uncased_L-2_H-128_A-2/vocab.txt'))
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

from bert_tf.checkpoints.contents import CheckpointContents, assign_weights
from bert_tf.checkpoints.google import is_google_checkpoint, read_google_checkpoint
from bert_tf.checkpoints.huggingface import is_hf_directory, read_hf_directory
from bert_tf.checkpoints.installed import close_installed_names, installed_model_folder
from bert_tf.checkpoints.keras_hub import is_keras_hub_preset, read_keras_hub_backbone, read_keras_hub_preset
from bert_tf.config import BertConfig

logger = logging.getLogger(__name__)

# Formats defined above this package, tried before its own: bert-tf's model directory
# (`bert_tf.model_directory`). Each: (whether a path is one, its reader).
_FORMATS_ABOVE: list[tuple[Callable[[Path], bool], Callable[[Path], CheckpointContents]]] = []


def register_format(is_format: Callable[[Path], bool], reader: Callable[[Path], CheckpointContents]) -> None:
    """Makes `read_checkpoint` read the paths that `is_format` accepts with `reader`, before its own formats."""
    _FORMATS_ABOVE.append((is_format, reader))


def presets_home() -> Path:
    """Where named presets are looked up: `$BERT_TF_HOME/presets` (default `~/.cache/bert_tf/presets`)."""
    return Path(os.environ.get("BERT_TF_HOME", Path.home() / ".cache" / "bert_tf")) / "presets"


def read_checkpoint(path_or_preset) -> CheckpointContents:
    """Reads any supported checkpoint into memory, detecting its format.

    Accepts: a Google checkpoint directory (or prefix), a Hugging Face BERT directory,
    a KerasHub preset directory or a live `keras_hub.models.BertBackbone`, a directory
    written by `save_pretrained`, a preset name found under `presets_home()`, or the name of a model installed
    from the package index (`bert_tf.checkpoints.installed`: its encoder).
    """
    if hasattr(path_or_preset, "get_config") and hasattr(path_or_preset, "weights"):
        return read_keras_hub_backbone(path_or_preset)
    path = Path(path_or_preset)
    installed = None if path.exists() else installed_model_folder(path_or_preset)
    if installed is not None:
        return read_checkpoint(installed)
    if not path.exists():
        if str(path_or_preset) in BertConfig.preset_names():
            local = presets_home() / str(path_or_preset)
            if local.exists():
                return read_checkpoint(local)
            raise FileNotFoundError(
                f"No local weights for preset {path_or_preset!r} (looked in {local}). bert-tf never downloads: "
                f"put a checkpoint directory there or pass its path. For a randomly initialised model use "
                f"BertModel(BertConfig.preset({str(path_or_preset)!r}))."
            )
        if Path(f"{path}.index").is_file():  # a checkpoint prefix such as .../bert_model.ckpt
            return read_google_checkpoint(path)
        raise FileNotFoundError(f"Checkpoint not found: {path}{close_installed_names(path)}")
    for is_format, reader in (
        *_FORMATS_ABOVE,
        (is_google_checkpoint, read_google_checkpoint),
        (is_hf_directory, read_hf_directory),
        (is_keras_hub_preset, read_keras_hub_preset),
    ):
        if is_format(path):
            return reader(path)
    raise ValueError(
        f"{path} is not a BERT checkpoint this package knows: expected a Google checkpoint (bert_config.json + "
        "*.ckpt.index), a Hugging Face directory (config.json with model_type 'bert' + model.safetensors), a "
        "KerasHub BertBackbone preset, or a bert-tf directory (model.keras)."
    )


def from_pretrained(path_or_preset, config: BertConfig | None = None):
    """A `BertModel` with the weights of any supported checkpoint (see `read_checkpoint`).

    The model also gets `vocab_file` and `lower_case` attributes (None when the checkpoint
    has no vocabulary or does not record its casing). `config`, if given, must agree with
    the weights; any disagreement is an error, never a partial load.
    """
    from bert_tf.layers.initializer import weights_loaded_next
    from bert_tf.model import BertModel

    contents = read_checkpoint(path_or_preset)
    with weights_loaded_next():
        model = BertModel(config or contents.config)
    unused = assign_weights(model.google_weights(), contents, what="BertModel")
    heads = [name for name in unused if name.startswith("cls/")]
    if heads:
        logger.info("%s: %d pre-training head variables (cls/*) not used by the encoder.", contents.source, len(heads))
    for name in sorted(set(unused) - set(heads)):
        logger.warning("%s: variable %r was not used.", contents.source, name)
    model.vocab_file = contents.vocab_file
    model.lower_case = contents.lower_case
    return model


def check_vocabulary_fits(vocab_tokens: int, model_vocab_size: int, vocab_file) -> None:
    """Raises if the vocabulary has more tokens than the model has embedding rows (ids would be out of range)."""
    if vocab_tokens > model_vocab_size:
        raise ValueError(f"{vocab_file} has {vocab_tokens:,} tokens, more than the model's vocab_size "
                         f"{model_vocab_size:,}: they do not belong together.")
