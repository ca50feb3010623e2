"""One loader for the inspection tools: any model path → encoder, masked-LM head (when it has one) and tokenizer.

Accepted paths: a bert-tf directory (`save_pretrained`; an encoder, a `BertPretrainer` or a task
model), the output folder of `bert-tf pretrain` (its `model/` is used), a Google checkpoint
directory or prefix, a Hugging Face BERT directory, a KerasHub preset directory, a preset name
with local weights (see `bert_tf.read_checkpoint`), a sentence-transformers folder or an installed model's name
(`bert_tf.checkpoints.installed`), or an encoder SavedModel exported by
`serving.export.saved_model` (its last layer only: see `ExportedEncoder`).

Example:
    >>> model = load_inspection_model("uncased_L-4_H-256_A-4/")   # doctest: +SKIP
    >>> model.pretrainer is not None, model.max_length             # doctest: +SKIP
    (True, 512)
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import keras

from bert_tf.checkpoints import assign_weights, check_vocabulary_fits, read_checkpoint
from bert_tf.config import check_sequence_length
from bert_tf.inspection.exported_encoder import ExportedEncoder, is_saved_model, load_export
from bert_tf.layers.initializer import weights_loaded_next
from bert_tf.model import BertModel
from bert_tf.model_directory import folder_model_source, is_bert_tf_directory, load_model_directory
from bert_tf.pretrainer import BertPretrainer
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tokenizer import BertTokenizer

logger = logging.getLogger(__name__)

MLM_HEAD_PREFIX = "cls/predictions/"
NSP_HEAD_PREFIX = "cls/seq_relationship/"
POOLER_PREFIX = "pooler/"


@dataclasses.dataclass
class InspectionModel:
    """A trained BERT ready to be looked at."""

    encoder: BertModel | ExportedEncoder
    tokenizer: BertTokenizer
    pretrainer: BertPretrainer | None  # None when the checkpoint has no masked-LM head weights
    max_length: int  # most tokens per input, [CLS] and [SEP] included
    source: str
    has_pooler: bool = True  # False for checkpoints without pooler weights (Hugging Face BertForMaskedLM)
    task: TaskSpec | None = None  # a bert-tf model directory's task (`load_model_directory`); None for other formats
    model: keras.Model | None = None  # a bert-tf model directory's whole model; None for other formats

    def require_pretrainer(self) -> BertPretrainer:
        """The pretrainer, or a clear error when the checkpoint has no masked-LM head."""
        if self.pretrainer is None:
            raise ValueError(
                f"{self.source} has no masked-LM head weights ({MLM_HEAD_PREFIX}*): fill-mask needs a pre-training "
                "checkpoint, e.g. the model/ folder of `bert-tf pretrain`, Google's bert_model.ckpt, or a Hugging "
                "Face BertForPreTraining / BertForMaskedLM directory. Encoders, fine-tuned models and exported "
                "SavedModels lack it."
            )
        return self.pretrainer


def load_inspection_model(path, vocab_file=None, lower_case: bool | None = None,
                          max_length: int | None = None) -> InspectionModel:
    """Loads `path` (see the module docstring) with its vocabulary.

    `vocab_file` replaces (or supplies, when the checkpoint has none) the checkpoint's
    `vocab.txt`; `lower_case` overrides the recorded casing. The masked-LM head is loaded
    when the checkpoint has one. `max_length` None: the `seq_length` recorded with the
    model (bert-tf directories, SavedModels), else `max_position_embeddings`.
    """
    directory = Path(path)
    has_pooler, task, whole = True, None, None
    if is_bert_tf_directory(directory / "model"):
        directory = directory / "model"  # the output folder of `bert-tf pretrain`
    if is_saved_model(directory):
        export = load_export(directory)
        encoder = ExportedEncoder(export)
        pretrainer, checkpoint_vocab, checkpoint_lower_case = None, encoder.vocab_file, encoder.lower_case
        seq_length = encoder.seq_length
    elif is_bert_tf_directory(directory) or folder_model_source(path) is not None:
        loaded = load_model_directory(directory)
        whole = loaded.model
        pretrainer = whole if isinstance(whole, BertPretrainer) else None
        encoder = whole if isinstance(whole, BertModel) else whole.encoder
        checkpoint_vocab, checkpoint_lower_case = loaded.vocab_file, loaded.lower_case
        seq_length, task = loaded.task.seq_length, loaded.task
    else:
        encoder, pretrainer, checkpoint_vocab, checkpoint_lower_case, has_pooler = _read_any_checkpoint(path)
        seq_length = None
    vocab_file = vocab_file or checkpoint_vocab
    if vocab_file is None:
        raise FileNotFoundError(f"{path} has no vocab.txt: pass the model's vocabulary file (--vocab).")
    tokenizer = BertTokenizer(vocab_file, lower_case=checkpoint_lower_case if lower_case is None else lower_case)
    if isinstance(encoder, BertModel):
        check_vocabulary_fits(tokenizer.vocab_size, encoder.config.vocab_size, vocab_file)
    limit = encoder.config.max_position_embeddings
    if max_length is not None:
        check_sequence_length(max_length, limit, "max_length")
    max_length = max_length or min(int(seq_length or limit), limit)
    return InspectionModel(encoder, tokenizer, pretrainer, max_length, str(path), has_pooler, task, whole)


def _read_any_checkpoint(path):
    """(encoder, pretrainer or None, vocab_file, lower_case, has_pooler) of a Google/Hugging Face/KerasHub checkpoint.

    The next-sentence head is optional, and so is the pooler (Hugging Face's BertForMaskedLM has
    neither): what is absent keeps its random initial values, with a warning for the pooler.
    """
    contents = read_checkpoint(path)
    has_heads = bool(contents.head_weights(MLM_HEAD_PREFIX))
    optional = [NSP_HEAD_PREFIX, POOLER_PREFIX] if has_heads else [POOLER_PREFIX]
    absent = [prefix for prefix in optional if not contents.head_weights(prefix)]
    with weights_loaded_next(every_weight=not absent):  # what is absent keeps its random values
        encoder = BertModel(contents.config)
        pretrainer = BertPretrainer(encoder) if has_heads else None
    variables = (pretrainer or encoder).google_weights()
    variables = {name: variable for name, variable in variables.items() if not name.startswith(tuple(absent))}
    if POOLER_PREFIX in absent:
        logger.warning("%s has no pooler weights: the pooled output is random; use another pooling than 'pooled'.",
                       contents.source)
    assign_weights(variables, contents, what=type(pretrainer or encoder).__name__)
    return encoder, pretrainer, contents.vocab_file, contents.lower_case, POOLER_PREFIX not in absent
