"""Named-entity features: words → WordPiece tokens with word ids, word labels on first pieces, and back.

Each word is tokenized on its own (all words of a batch in one graph call of
`BertTokenizer`), which gives its pieces and so the word id of every token exactly; this is
the usual way for pre-split words (Hugging Face's `is_split_into_words`) and gives the same
pieces as tokenizing the sentence, because BERT's tokenizer never joins across whitespace.
The sequences are `bert_tf.tasks.ner.ops.word_windows`' windows, the ones the exported
SavedModel tags: a sentence longer than `seq_length - 2` pieces is split into consecutive
windows of whole words, each its own sequence, and the predictions of the windows are joined
again, so no word goes without a tag (a word without pieces is `[UNK]`).

Labels: a word's label on its first piece, `IGNORE_LABEL` (-100) elsewhere
(`bert_tf.tasks.ner.word_alignment`).

Example:
    >>> features = ner_features([["EU", "rejects", "German", "call"]], tokenizer, 128,  # doctest: +SKIP
    ...                         [[3, 0, 1, 0]])
    >>> features.word_ids[0]  # doctest: +SKIP
    array([-1,  0,  1,  2,  3, -1], dtype=int32)
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_tf.tasks.bucketing import rows_dataset
from bert_tf.tasks.ner.ops import word_windows
from bert_tf.tasks.ner.word_alignment import align_word_labels, first_piece_positions
from bert_tf.tokenizer import BertTokenizer

WORDS_PER_CALL = 16384  # words tokenized per graph call


@dataclasses.dataclass
class NerFeatures:
    """Model sequences made of sentences (a long sentence gives several sequences)."""

    input_word_ids: list[np.ndarray]  # per sequence, int32 [length] with [CLS] and [SEP]
    word_ids: list[np.ndarray]  # per sequence, the sentence's word index of each token, -1 on [CLS]/[SEP]
    sentence_index: np.ndarray  # per sequence, the sentence it comes from
    labels: list[np.ndarray] | None  # per sequence, int32 [length]: word labels on first pieces, -100 elsewhere

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(ids) for ids in self.input_word_ids], dtype=np.int64)

    def dataset(self) -> tf.data.Dataset:
        """One element per sequence: features ({name: int32 [length]}), and labels when known."""
        def ragged(rows):
            return tf.RaggedTensor.from_row_lengths(np.concatenate(rows).astype(np.int32), self.lengths)

        ids = ragged(self.input_word_ids)
        features = {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)}
        if self.labels is None:
            return rows_dataset(features)
        return rows_dataset((features, ragged(self.labels)))


def word_pieces(sentences: Sequence[Sequence[str]], tokenizer: BertTokenizer) -> tf.RaggedTensor:
    """The piece ids of every word of every sentence: int32 [sentences, (words), (pieces)]."""
    words = [word for sentence in sentences for word in sentence]
    calls = [words[start:start + WORDS_PER_CALL] for start in range(0, len(words), WORDS_PER_CALL)] or [[]]
    pieces = tf.concat([tokenizer.tokenize(tf.constant(call, tf.string)) for call in calls], axis=0)
    return tf.RaggedTensor.from_row_lengths(pieces, [len(sentence) for sentence in sentences])


def ner_features(
    sentences: Sequence[Sequence[str]],
    tokenizer: BertTokenizer,
    seq_length: int,
    word_labels: Sequence[Sequence[int]] | None = None,
) -> NerFeatures:
    """Sequences `[CLS] pieces... [SEP]` of at most `seq_length` tokens, with word ids and (given word labels) labels."""
    windows = word_windows(word_pieces(sentences, tokenizer), seq_length, tokenizer.vocabulary)
    ids, word_ids = (np.split(tokens.flat_values.numpy(), tokens.values.row_splits.numpy()[1:])[:-1]
                     for tokens in (windows.input_word_ids, windows.word_ids))
    sentence_index = windows.input_word_ids.value_rowids().numpy()
    labels = None
    if word_labels is not None:
        labels = [align_word_labels(word_id, word_labels[sentence]).astype(np.int32)
                  for word_id, sentence in zip(word_ids, sentence_index)]
    return NerFeatures(ids, word_ids, sentence_index, labels)


def sentence_word_logits(
    features: NerFeatures, logits: Sequence[np.ndarray], sentence_lengths: Sequence[int]
) -> list[np.ndarray]:
    """The logits [words, labels] of every word of every sentence (its first piece's), from each sequence's
    logits [length, labels]."""
    num_labels = np.shape(logits[0])[-1] if len(logits) else 0
    word_logits = [np.zeros([length, num_labels], np.float32) for length in sentence_lengths]
    for sequence_logits, word_ids, sentence in zip(logits, features.word_ids, features.sentence_index):
        positions = first_piece_positions(word_ids)
        word_logits[sentence][word_ids[positions]] = np.asarray(sequence_logits)[positions]
    return word_logits


def sentence_predictions(
    features: NerFeatures, logits: Sequence[np.ndarray], sentence_lengths: Sequence[int]
) -> list[np.ndarray]:
    """The predicted label id of every word of every sentence, from each sequence's logits [length, labels]."""
    return [word_logits.argmax(axis=-1) for word_logits in sentence_word_logits(features, logits, sentence_lengths)]
