"""bert-tf: BERT as TensorFlow/Keras layers, with in-graph tokenization, pre-training,
fine-tuning, checkpoint import and export for TF Serving and TFLite.

Example:
    >>> import bert_tf
    >>> model = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny"))
    >>> model.config.num_hidden_layers
    2
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"bert_tf needs Keras' TensorFlow backend, but KERAS_BACKEND is {keras.backend.backend()!r}; "
        "set KERAS_BACKEND=tensorflow."
    )

# Registers the text ops (FastBertNormalize, FastWordpieceTokenize, ...) so that any
# SavedModel holding a tokenizer loads without "Op type not registered".
import tensorflow_text  # noqa: E402,F401

from bert_tf.checkpoints import from_pretrained, read_checkpoint, save_pretrained, write_hf_directory  # noqa: E402
from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.model import BertModel  # noqa: E402
from bert_tf.pretrainer import BertPretrainer  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BertConfig",
    "BertModel",
    "BertPretrainer",
    "__version__",
    "from_pretrained",
    "read_checkpoint",
    "save_pretrained",
    "write_hf_directory",
]
