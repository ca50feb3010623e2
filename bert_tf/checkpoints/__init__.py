"""Reading and writing published BERT weights: Google, Hugging Face, KerasHub, and our own directories."""

from bert_tf.checkpoints.contents import CheckpointContents, CheckpointMismatchError, assign_weights
from bert_tf.checkpoints.huggingface import write_hf_directory
from bert_tf.checkpoints.pretrained import (
    ModelDirectory,
    check_vocabulary_fits,
    from_pretrained,
    load_model_directory,
    read_checkpoint,
    resolve_model_directory,
    save_pretrained,
)

__all__ = [
    "CheckpointContents",
    "CheckpointMismatchError",
    "ModelDirectory",
    "assign_weights",
    "check_vocabulary_fits",
    "from_pretrained",
    "load_model_directory",
    "read_checkpoint",
    "resolve_model_directory",
    "save_pretrained",
    "write_hf_directory",
]
