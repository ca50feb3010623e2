"""bert-tf: BERT as TensorFlow/Keras layers, with in-graph tokenization, pre-training,
fine-tuning, checkpoint import and export for TF Serving and TFLite.

Example:
    >>> import bert_tf
    >>> model = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny"))
    >>> model.config.num_hidden_layers
    2
"""

import os
import sys

from bert_tf.native_stderr import quiet_tensorflow_start_up

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet_tensorflow_start_up()  # TensorFlow's native start-up lines are noise in a user's script; errors still show
# No info lines later either (XLA's "I0000 ... XLA service ... initialized" at a script's first fit or predict):
# TensorFlow reads the level as it loads; warnings and errors still show, and a level the user set stays.
if "tensorflow" not in sys.modules:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"bert_tf needs Keras' TensorFlow backend, but KERAS_BACKEND is {keras.backend.backend()!r}; "
        "set KERAS_BACKEND=tensorflow."
    )

# Registers the text ops (FastBertNormalize, FastWordpieceTokenize, ...) so that any
# SavedModel holding a tokenizer loads without "Op type not registered".
import tensorflow_text  # noqa: E402,F401

from bert_tf import metrics  # noqa: E402
from bert_tf.checkpoints import from_pretrained, read_checkpoint, write_hf_directory  # noqa: E402
from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.distillation import Distiller, student_from_teacher  # noqa: E402
from bert_tf.hf_task_models import read_hf_task_model, write_hf_task_model  # noqa: E402
from bert_tf.inference import TextPredictor, inference_function  # noqa: E402
from bert_tf.model import BertModel  # noqa: E402
from bert_tf.model_directory import load_model_directory, save_pretrained  # noqa: E402
from bert_tf.optimization import OptimizerConfig, WarmupLinearDecay, create_optimizer  # noqa: E402
from bert_tf.precision import with_precision  # noqa: E402
from bert_tf.preprocessor import BertPreprocessor  # noqa: E402
from bert_tf.pretrainer import BertPretrainer  # noqa: E402
from bert_tf.tasks.classification.model import BertClassifier  # noqa: E402
from bert_tf.tasks.embedding.embedding_files import embed_file  # noqa: E402
from bert_tf.tasks.embedding.loading import load_embedder  # noqa: E402
from bert_tf.retrieval.ranking_metrics import format_retrieval, retrieval_scores  # noqa: E402
from bert_tf.tasks.embedding.model import BertEmbedder  # noqa: E402
from bert_tf.retrieval.retrieval_set import read_retrieval_set  # noqa: E402
from bert_tf.tasks.embedding.similarity import cos_sim, semantic_search  # noqa: E402
from bert_tf.tasks.embedding.text_embedder import TextEmbedder  # noqa: E402
from bert_tf.tasks.ner.model import BertTokenClassifier  # noqa: E402
from bert_tf.tasks.ner.word_alignment import IGNORE_LABEL, align_word_labels, first_piece_positions, word_predictions  # noqa: E402
from bert_tf.tasks.spec import TaskSpec  # noqa: E402
from bert_tf.tasks.squad.model import BertSpanLabeler  # noqa: E402
from bert_tf.tokenizer import BertTokenizer  # noqa: E402
from bert_tf.vocabulary import Vocabulary, check_casing, learn_vocabulary  # noqa: E402

from bert_tf._version import __version__  # noqa: E402

__all__ = [
    "IGNORE_LABEL",
    "BertClassifier",
    "BertConfig",
    "BertEmbedder",
    "BertModel",
    "BertPreprocessor",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "BertTokenizer",
    "OptimizerConfig",
    "TaskSpec",
    "TextEmbedder",
    "TextPredictor",
    "Vocabulary",
    "WarmupLinearDecay",
    "__version__",
    "align_word_labels",
    "check_casing",
    "cos_sim",
    "create_optimizer",
    "first_piece_positions",
    "embed_file",
    "format_retrieval",
    "from_pretrained",
    "inference_function",
    "learn_vocabulary",
    "load_embedder",
    "load_model_directory",
    "metrics",
    "read_checkpoint",
    "read_retrieval_set",
    "read_hf_task_model",
    "retrieval_scores",
    "save_pretrained",
    "semantic_search",
    "with_precision",
    "word_predictions",
    "write_hf_directory",
    "write_hf_task_model",
]
