"""Reading published BERT weights into the encoder (Google, Hugging Face, KerasHub), and writing Hugging Face
directories; bert-tf's own model directory, which also builds heads, tokenizer and task, is read and written by
`bert_tf.model_directory`, which uses this package (never the reverse)."""

from bert_tf.checkpoints.contents import CheckpointContents, CheckpointMismatchError, assign_weights
from bert_tf.checkpoints.huggingface import write_hf_directory
from bert_tf.checkpoints.pretrained import check_vocabulary_fits, from_pretrained, read_checkpoint

__all__ = [
    "CheckpointContents",
    "CheckpointMismatchError",
    "assign_weights",
    "check_vocabulary_fits",
    "from_pretrained",
    "read_checkpoint",
    "write_hf_directory",
]
