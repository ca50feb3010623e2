"""`from_pretrained`: one entry point for every checkpoint format, and `save_pretrained` for ours.

Example:
    >>> model = from_pretrained("uncased_L-2_H-128_A-2/")   # doctest: +SKIP
    >>> model.config.hidden_size, model.vocab_file            # doctest: +SKIP
    (128, PosixPath('uncased_L-2_H-128_A-2/vocab.txt'))
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
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


@dataclasses.dataclass
class ModelDirectory:
    """A directory written by `save_pretrained`, loaded: the Keras model and what was saved with it."""

    model: object  # the saved keras.Model: a BertModel, BertPretrainer or task model
    vocab_file: Path | None
    lower_case: bool | None
    metadata: dict  # everything else passed to save_pretrained (seq_length, task, ...)


def load_model_directory(path: str | Path) -> ModelDirectory:
    """Loads a directory written by `save_pretrained` (Keras safe mode: no code runs from the files)."""
    import keras

    directory = Path(path)
    if not is_bert_tf_directory(directory):
        raise FileNotFoundError(f"{directory} is not a bert-tf model directory (no {MODEL_FILE}).")
    model = keras.saving.load_model(directory / MODEL_FILE, safe_mode=True)
    metadata_file = directory / METADATA_FILE
    metadata = json.loads(metadata_file.read_text()) if metadata_file.is_file() else {}
    vocab = directory / "vocab.txt"
    return ModelDirectory(model, vocab if vocab.is_file() else None, metadata.pop("lower_case", None), metadata)


def read_bert_tf_directory(path: str | Path) -> CheckpointContents:
    """Reads a directory written by `save_pretrained`: the encoder's weights, and the heads of a pretrainer."""
    loaded = load_model_directory(path)
    model = loaded.model
    with_names = model if hasattr(model, "google_weights") else model.encoder  # task models: their encoder
    return CheckpointContents(
        config=getattr(model, "encoder", model).config,
        weights={name: variable.numpy() for name, variable in with_names.google_weights().items()},
        source=str(path),
        format="bert_tf",
        vocab_file=loaded.vocab_file,
        lower_case=loaded.lower_case,
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


def save_pretrained(model, out_dir: str | Path, vocab_file=None, lower_case: bool | None = None,
                    **metadata) -> Path:
    """Writes `model` (an encoder, a pretrainer or a task model) as a bert-tf directory.

    The directory holds `model.keras`, `vocab.txt` and `bert_tf.json` (the casing and any
    other `metadata`, e.g. `seq_length=128`, JSON-serializable). It is written next to
    `out_dir` first and moved into place at the end, so a failure never leaves a
    half-written directory, and an existing one is replaced whole.
    """
    out = Path(out_dir)
    vocab_file = vocab_file or getattr(getattr(model, "encoder", model), "vocab_file", None)
    if lower_case is None:
        lower_case = getattr(getattr(model, "encoder", model), "lower_case", None)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # mkdtemp makes the directory private (0700); give it the permissions of a plain mkdir, so that
        # a server running as another user (TF Serving in Docker) can read the model.
        staging.chmod(0o777 & ~file_creation_mask())
        model.save(staging / MODEL_FILE)
        if vocab_file is not None:
            shutil.copyfile(vocab_file, staging / "vocab.txt")
        (staging / METADATA_FILE).write_text(json.dumps({"lower_case": lower_case, **metadata}, indent=2) + "\n")
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(retired / out.name)
            shutil.rmtree(retired)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def file_creation_mask() -> int:
    """This process's file-creation mask (reading it means setting it, so it is set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
