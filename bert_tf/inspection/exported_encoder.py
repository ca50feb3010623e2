"""`ExportedEncoder`: an exported encoder SavedModel, called like a `BertModel` (its last layer and pooler).

`serving.export.saved_model.export_saved_model` writes, for an encoder or a pretrainer, a `serve_ids`
signature (int32 ids [batch, seq_length] → `sequence_output`, `pooled_output`) and a
`model_info` signature (seq_length, casing, the vocabulary asset). That is all of the model a
SavedModel keeps: the last layer and the pooler, no other layer, no attention, no masked-LM head.
So sentence vectors from it (`bert_tf.tasks.embedding.exported_embedder`) read the last layer only; attention and
fill-mask need the model directory.

Example:
    >>> encoder = ExportedEncoder("/models/encoder/1")                                      # doctest: +SKIP
    >>> encoder({"input_word_ids": tf.constant([[2, 7, 3]])})["pooled_output"].shape         # doctest: +SKIP
    TensorShape([1, 256])
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import tensorflow as tf

ENCODER_TASKS = ("encoder", "pretrainer")


def is_saved_model(path) -> bool:
    return Path(path).is_dir() and (Path(path) / "saved_model.pb").is_file()


@dataclasses.dataclass(frozen=True)
class LoadedExport:
    """A SavedModel that `bert-tf export` wrote, loaded, with what its `model_info` signature says."""

    path: Path
    loaded: object  # keeps the variables the signatures read alive
    info: dict  # model_info's outputs, one value each (tensors)

    @property
    def task(self) -> str:
        return self.info["task"].numpy().decode()

    @property
    def seq_length(self) -> int:
        return int(self.info["seq_length"].numpy())

    @property
    def vocab_file(self) -> Path:
        return Path(self.info["vocab_file"].numpy().decode())

    @property
    def lower_case(self) -> bool:
        return bool(self.info["lower_case"].numpy())

    @property
    def serve_ids(self):
        return self.loaded.signatures["serve_ids"]


def load_export(path) -> LoadedExport:
    """The SavedModel at `path`; FileNotFoundError or ValueError (one line) for one that bert-tf did not export."""
    path = Path(path)
    if not is_saved_model(path):
        raise FileNotFoundError(f"{path} is not a SavedModel directory (no saved_model.pb).")
    loaded = tf.saved_model.load(str(path))
    if not {"serve_ids", "model_info"} <= set(loaded.signatures):
        raise ValueError(f"{path} was not exported by bert-tf (no serve_ids/model_info signatures); "
                         f"it has {sorted(loaded.signatures)}.")
    # One row per request (model_info is batch-major for TF Serving's batching): send one.
    info = {name: value[0] for name, value in loaded.signatures["model_info"](request=tf.constant([""])).items()}
    return LoadedExport(path, loaded, info)


@dataclasses.dataclass(frozen=True)
class ExportedEncoderConfig:
    """What the loaders read of a config; the SavedModel exposes one layer, the last."""

    hidden_size: int
    max_position_embeddings: int  # the export's seq_length


class ExportedEncoder:
    """Runs the `serve_ids` signature of an exported encoder; outputs as `BertModel`'s (last layer only).
    `path`: the version folder, or its `load_export`."""

    def __init__(self, path):
        export = path if isinstance(path, LoadedExport) else load_export(path)
        if export.task not in ENCODER_TASKS:
            raise ValueError(f"{export.path} is an exported {export.task!r} model; embeddings need an exported encoder "
                             "or pretrainer (its serve_ids gives sequence_output and pooled_output), or a "
                             "sentence-embedding model.")
        self._export = export
        self._serve_ids = export.serve_ids
        self.seq_length, self.vocab_file, self.lower_case = export.seq_length, export.vocab_file, export.lower_case
        hidden_size = int(self._serve_ids.structured_outputs["pooled_output"].shape[-1])
        self.config = ExportedEncoderConfig(hidden_size=hidden_size, max_position_embeddings=self.seq_length)

    def __call__(self, inputs, training=False):
        """`inputs` as for `BertModel` (any width up to seq_length) → `sequence_output`, `pooled_output`,
        and `encoder_outputs` holding the last layer alone."""
        width = tf.shape(inputs["input_word_ids"])[1]
        outputs = self._serve_ids(**padded_ids(inputs, self.seq_length))
        sequence_output = outputs["sequence_output"][:, :width]
        return {"sequence_output": sequence_output, "pooled_output": outputs["pooled_output"],
                "encoder_outputs": [sequence_output]}


def padded_ids(inputs, seq_length: int) -> dict:
    """`BertModel` inputs of any width up to `seq_length`, as int32 of exactly `seq_length` columns (what an
    export's `serve_ids` takes)."""
    width = tf.shape(inputs["input_word_ids"])[1]
    return {name: tf.pad(tf.cast(value, tf.int32), [[0, 0], [0, seq_length - width]]) for name, value in inputs.items()}
