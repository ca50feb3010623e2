"""`load_embedder`: a sentence-embedding model, ready to `encode` raw texts, from a bert-tf model directory or a
sentence-transformers folder (as `SentenceTransformer(path)` loads one).

Example:
    >>> model = load_embedder("models/sts")  # doctest: +SKIP
    >>> model.encode(["a man is dancing"]).shape  # doctest: +SKIP
    (1, 256)
"""

from __future__ import annotations

from bert_tf.model_directory import load_model_directory
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tasks.embedding.model import BertEmbedder
from bert_tf.tasks.embedding.sentence_transformers_folder import (is_sentence_transformers_folder,
                                                                  read_sentence_transformers_folder)
from bert_tf.tokenizer import BertTokenizer


def load_embedder(path) -> BertEmbedder:
    """The `BertEmbedder` of a model directory (`bert_tf.load_model_directory`: its vocabulary, length and casing as it
    was trained) or of a sentence-transformers folder (its length: the folder's `max_seq_length`); a model of another
    task is an error in one line."""
    if is_sentence_transformers_folder(path):
        model, seq_length = read_sentence_transformers_folder(path)
        max_length = model.encoder.config.max_position_embeddings
        tokenizer = BertTokenizer(model.encoder.vocab_file, model.encoder.lower_case)
        model.set_preprocessor(BertPreprocessor(tokenizer, min(seq_length or max_length, max_length),
                                                padding=BertEmbedder.text_padding))
        return model
    loaded = load_model_directory(path)
    if not isinstance(loaded.model, BertEmbedder):
        raise ValueError(f"{path} holds a {type(loaded.model).__name__} (task {loaded.task.task!r}), not a sentence "
                         "embedding model (task 'embed').")
    return loaded.model
