"""Named-entity features: words → WordPiece tokens with word ids, word labels on first pieces, and back.

Each word is tokenized on its own (all words of a batch in one graph call of
`BertTokenizer`), which gives its pieces and so the word id of every token exactly; this is
the usual way for pre-split words (Hugging Face's `is_split_into_words`) and gives the same
pieces as tokenizing the sentence, because BERT's tokenizer never joins across whitespace.
A word with no pieces (e.g. only control characters) becomes `[UNK]`, so every word gets a
prediction. The assembly into sequences is plain Python per sentence (documented choice:
it needs the word boundaries, and it runs once per data set, in seconds for CoNLL-2003).

Labels: a word's label on its first piece, `IGNORE_LABEL` (-100) elsewhere
(`bert_tf.word_alignment`). A sentence longer than `seq_length - 2` pieces is split into
consecutive chunks of whole words, each its own sequence, and the predictions of the
chunks are joined again, so no word goes without a tag.

Example:
    >>> features = ner_features([["EU", "rejects", "German", "call"]], tokenizer, 128,  # doctest: +SKIP
    ...                         [[3, 0, 1, 0]])
    >>> features.word_ids[0]  # doctest: +SKIP
    array([-1,  0,  1,  2,  3, -1])
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_tf.tokenizer import BertTokenizer
from pipelines.bucketing import rows_dataset
from bert_tf.word_alignment import align_word_labels, first_piece_positions, word_predictions

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


def word_pieces(sentences: Sequence[Sequence[str]], tokenizer: BertTokenizer) -> list[list[list[int]]]:
    """The piece ids of every word of every sentence; a word without pieces gets `[UNK]`."""
    words = [word for sentence in sentences for word in sentence]
    pieces = []
    for start in range(0, len(words), WORDS_PER_CALL):
        pieces.extend(tokenizer.tokenize(tf.constant(words[start:start + WORDS_PER_CALL], tf.string)).to_list())
    unk = tokenizer.vocabulary.unk_id
    pieces = [word or [unk] for word in pieces]
    result, position = [], 0
    for sentence in sentences:
        result.append(pieces[position:position + len(sentence)])
        position += len(sentence)
    return result


def _chunks(pieces: list[list[int]], budget: int) -> list[tuple[int, int]]:
    """Word ranges [first, end) whose pieces fit in `budget` tokens; a longer word alone keeps its first pieces."""
    chunks, first, used = [], 0, 0
    for index, word in enumerate(pieces):
        if used and used + len(word) > budget:
            chunks.append((first, index))
            first, used = index, 0
        used += len(word)
    chunks.append((first, len(pieces)))
    return chunks


def ner_features(
    sentences: Sequence[Sequence[str]],
    tokenizer: BertTokenizer,
    seq_length: int,
    word_labels: Sequence[Sequence[int]] | None = None,
) -> NerFeatures:
    """Sequences `[CLS] pieces... [SEP]` of at most `seq_length` tokens, with word ids and (given word labels) labels."""
    vocabulary = tokenizer.vocabulary
    budget = seq_length - 2
    ids_rows, word_id_rows, sentence_rows, label_rows = [], [], [], []
    for index, pieces in enumerate(word_pieces(sentences, tokenizer)):
        for first, end in _chunks(pieces, budget):
            ids = [vocabulary.cls_id]
            word_ids = [-1]
            for word in range(first, end):
                ids.extend(pieces[word])
                word_ids.extend([word] * len(pieces[word]))
            ids, word_ids = ids[: budget + 1] + [vocabulary.sep_id], word_ids[: budget + 1] + [-1]
            ids_rows.append(np.array(ids, np.int32))
            word_id_rows.append(np.array(word_ids, np.int64))
            sentence_rows.append(index)
            if word_labels is not None:
                label_rows.append(align_word_labels(word_ids, word_labels[index]).astype(np.int32))
    return NerFeatures(ids_rows, word_id_rows, np.array(sentence_rows, np.int64),
                       label_rows if word_labels is not None else None)


def sentence_predictions(
    features: NerFeatures, logits: Sequence[np.ndarray], sentence_lengths: Sequence[int]
) -> list[np.ndarray]:
    """The predicted label id of every word of every sentence, from each sequence's logits [length, labels]."""
    predictions = [np.zeros(length, np.int64) for length in sentence_lengths]
    for sequence_logits, word_ids, sentence in zip(logits, features.word_ids, features.sentence_index):
        positions = first_piece_positions(word_ids)
        predictions[sentence][word_ids[positions]] = word_predictions(sequence_logits, positions)
    return predictions
