"""`from_pretrained`: one entry point for every checkpoint format, and `save_pretrained` for ours.

Example:
    >>> model = from_pretrained("uncased_L-2_H-128_A-2/")   # doctest: +SKIP
    >>> model.config.hidden_size, model.vocab_file            # doctest: +SKIP
    (128, PosixPath('uncased_L-2_H-128_A-2/vocab.txt'))
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from bert_tf.checkpoints.contents import CheckpointContents, assign_weights, logger
from bert_tf.checkpoints.google import is_google_checkpoint, read_google_checkpoint
from bert_tf.checkpoints.huggingface import is_hf_directory, read_hf_directory
from bert_tf.checkpoints.keras_hub import is_keras_hub_preset, read_keras_hub_backbone, read_keras_hub_preset
from bert_tf.config import BertConfig

MODEL_FILE = "model.keras"
METADATA_FILE = "bert_tf.json"


def presets_home() -> Path:
    """Where named presets are looked up: `$BERT_TF_HOME/presets` (default `~/.cache/bert_tf/presets`)."""
    return Path(os.environ.get("BERT_TF_HOME", Path.home() / ".cache" / "bert_tf")) / "presets"


def is_bert_tf_directory(path: Path) -> bool:
    return path.is_dir() and (path / MODEL_FILE).is_file()


def read_bert_tf_directory(path: str | Path) -> CheckpointContents:
    """Reads a directory written by `save_pretrained` (the encoder of a task model too)."""
    import keras

    directory = Path(path)
    model = keras.saving.load_model(directory / MODEL_FILE, safe_mode=True)
    encoder = getattr(model, "encoder", model)
    metadata_file = directory / METADATA_FILE
    metadata = json.loads(metadata_file.read_text()) if metadata_file.is_file() else {}
    vocab = directory / "vocab.txt"
    return CheckpointContents(
        config=encoder.config,
        weights={name: variable.numpy() for name, variable in encoder.google_weights().items()},
        source=str(directory),
        format="bert_tf",
        vocab_file=vocab if vocab.is_file() else None,
        lower_case=metadata.get("lower_case"),
    )


def read_checkpoint(path_or_preset) -> CheckpointContents:
    """Reads any supported checkpoint into memory, detecting its format.

    Accepts: a Google checkpoint directory (or prefix), a Hugging Face BERT directory,
    a KerasHub preset directory or a live `keras_hub.models.BertBackbone`, a directory
    written by `save_pretrained`, or a preset name found under `presets_home()`.
    """
    if hasattr(path_or_preset, "get_config") and hasattr(path_or_preset, "weights"):
        return read_keras_hub_backbone(path_or_preset)
    path = Path(path_or_preset)
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
        raise FileNotFoundError(f"Checkpoint not found: {path}")
    for is_format, reader in (
        (is_bert_tf_directory, read_bert_tf_directory),
        (is_google_checkpoint, read_google_checkpoint),
        (is_hf_directory, read_hf_directory),
        (is_keras_hub_preset, read_keras_hub_preset),
    ):
        if is_format(path):
            return reader(path)
    raise ValueError(
        f"{path} is not a BERT checkpoint this package knows: expected a Google checkpoint (bert_config.json + "
        "*.ckpt.index), a Hugging Face directory (config.json with model_type 'bert' + model.safetensors), a "
        f"KerasHub BertBackbone preset, or a bert-tf directory ({MODEL_FILE})."
    )


def from_pretrained(path_or_preset, config: BertConfig | None = None):
    """A `BertModel` with the weights of any supported checkpoint (see `read_checkpoint`).

    The model also gets `vocab_file` and `lower_case` attributes (None when the checkpoint
    has no vocabulary or does not record its casing). `config`, if given, must agree with
    the weights; any disagreement is an error, never a partial load.
    """
    from bert_tf.model import BertModel

    contents = read_checkpoint(path_or_preset)
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


def save_pretrained(model, out_dir: str | Path, vocab_file=None, lower_case: bool | None = None) -> Path:
    """Writes `model` (an encoder or a task model) as a bert-tf directory that `from_pretrained` reads."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / MODEL_FILE)
    vocab_file = vocab_file or getattr(model, "vocab_file", None)
    if vocab_file is not None and Path(vocab_file).resolve() != (out / "vocab.txt").resolve():
        shutil.copyfile(vocab_file, out / "vocab.txt")
    if lower_case is None:
        lower_case = getattr(model, "lower_case", None)
    (out / METADATA_FILE).write_text(json.dumps({"lower_case": lower_case}, indent=2) + "\n")
    return out
