"""Word ↔ WordPiece alignment for token classification (NER), as plain numpy on one example.

A tokenizer splits each word into one or more pieces and adds special tokens. It
describes the result by the word index of every token (`word_ids_per_token`), with -1
for special and padding tokens. A word's label goes on its first piece; every other
position gets `IGNORE_LABEL`, which the token classifier's loss and metric skip.

Example:
    >>> # [CLS] hug ##ging face [SEP] [PAD]  for the words "hugging face"
    >>> word_ids = [-1, 0, 0, 1, -1, -1]
    >>> align_word_labels(word_ids, [3, 4]).tolist()
    [-100, 3, -100, 4, -100, -100]
    >>> first_piece_positions(word_ids).tolist()
    [1, 3]
"""

from __future__ import annotations

import numpy as np

from bert_tf.metrics.masked_accuracy import IGNORE_LABEL  # later pieces of a word, special and padding tokens


def _word_ids(word_ids_per_token) -> np.ndarray:
    word_ids = np.asarray(word_ids_per_token)
    if word_ids.ndim != 1 or (word_ids.size and not np.issubdtype(word_ids.dtype, np.integer)):
        raise ValueError(
            "word_ids_per_token must be a 1-D integer array (one example, -1 for special and padding tokens), "
            f"got shape {word_ids.shape} and dtype {word_ids.dtype}."
        )
    return word_ids.astype(np.int64)


def first_piece_mask(word_ids_per_token) -> np.ndarray:
    """True at the first token of each word: a word id >= 0 that differs from the previous token's."""
    word_ids = _word_ids(word_ids_per_token)
    previous = np.concatenate([[-1], word_ids[:-1]])
    return (word_ids >= 0) & (word_ids != previous)


def first_piece_positions(word_ids_per_token) -> np.ndarray:
    """Token positions of the first piece of each word, in token order [num_words_kept].

    Words cut off by truncation have no position.
    """
    return np.flatnonzero(first_piece_mask(word_ids_per_token))


def align_word_labels(word_ids_per_token, word_labels) -> np.ndarray:
    """Per-token labels [seq]: a word's label on its first piece, `IGNORE_LABEL` everywhere else."""
    word_ids = _word_ids(word_ids_per_token)
    labels = np.asarray(word_labels, dtype=np.int64)
    if labels.ndim != 1:
        raise ValueError(f"word_labels must be 1-D (one label per word), got shape {labels.shape}.")
    if word_ids.size and word_ids.max() >= len(labels):
        raise ValueError(f"word_ids_per_token refers to word {word_ids.max()}, but there are only {len(labels)} word_labels.")
    first = first_piece_mask(word_ids)
    token_labels = np.full(word_ids.shape, IGNORE_LABEL, dtype=np.int64)
    token_labels[first] = labels[word_ids[first]]
    return token_labels


def word_predictions(token_logits, first_piece_positions, label_names=None):
    """The predicted label of each word: the argmax of the logits [seq, num_labels] at its first piece.

    Returns label ids [num_words], or their names when `label_names` is given.

    Example:
        >>> logits = np.array([[0, 0], [0.1, 2], [3, 0], [5, 1]])
        >>> word_predictions(logits, [1, 3], label_names=["O", "B-PER"])
        ['B-PER', 'O']
    """
    logits = np.asarray(token_logits)
    positions = np.asarray(first_piece_positions, dtype=np.int64)
    if logits.ndim != 2:
        raise ValueError(f"token_logits must be [seq, num_labels] (one example), got shape {logits.shape}.")
    if positions.size and (positions.min() < 0 or positions.max() >= len(logits)):
        raise ValueError(f"first_piece_positions must be in [0, {len(logits)}), got {positions.tolist()}.")
    predicted = logits[positions].argmax(axis=-1)
    if label_names is None:
        return predicted
    return [label_names[index] for index in predicted]
