"""Dynamic masked-LM masking of token-id batches, with tensorflow-text's masking ops.

Every call draws new masks, so every epoch sees different ones: of the tokens (never
`[CLS]`, `[SEP]` or `[PAD]`), `masked_lm_prob` are selected, at most
`max_predictions_per_seq` per sequence; of those 80% become `[MASK]`, 10% a random
token and 10% stay unchanged. With whole-word masking, all pieces of a word (a token
and the `##` pieces after it) are selected together.

Example:
    >>> masker = MlmMasker(vocabulary, max_predictions_per_seq=20)            # doctest: +SKIP
    >>> masked_ids, positions, labels = masker(ragged_token_ids)               # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.vocabulary import SUFFIX_INDICATOR, Vocabulary


class MlmMasker:
    """Masks a ragged [batch, (tokens)] int32 batch; returns (masked ids, positions, original ids), ragged."""

    def __init__(self, vocabulary: Vocabulary, max_predictions_per_seq: int, masked_lm_prob: float = 0.15,
                 mask_token_rate: float = 0.8, random_token_rate: float = 0.1, whole_word_masking: bool = False):
        if not 0.0 < masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob!r}.")
        self.max_predictions_per_seq = max_predictions_per_seq
        self.whole_word_masking = whole_word_masking
        self.selector = tf_text.RandomItemSelector(
            max_selections_per_batch=max_predictions_per_seq,
            selection_rate=masked_lm_prob,
            unselectable_ids=[vocabulary.cls_id, vocabulary.sep_id, vocabulary.pad_id],
        )
        self.chooser = tf_text.MaskValuesChooser(
            len(vocabulary), vocabulary.mask_id, mask_token_rate=mask_token_rate, random_token_rate=random_token_rate
        )
        self.is_continuation = tf.constant(np.array([t.startswith(SUFFIX_INDICATOR) for t in vocabulary.tokens]))
        self.special_ids = tf.constant([vocabulary.cls_id, vocabulary.sep_id], tf.int32)

    def __call__(self, token_ids: tf.RaggedTensor):
        if not self.whole_word_masking:
            return tf_text.mask_language_model(token_ids, self.selector, self.chooser)
        words, word_of_token = self._group_words(token_ids)
        # Given words, it selects whole words and returns flat [batch, (tokens)] results, positions sorted.
        masked, positions, labels = tf_text.mask_language_model(words, self.selector, self.chooser)
        # Whole words can exceed the prediction budget: drop the word that straddles it (as
        # google-research/bert skips it), and put back the original tokens of what is dropped.
        limit = self.max_predictions_per_seq
        row_starts = tf.gather(token_ids.row_starts(), positions.value_rowids())
        position_words = positions.with_flat_values(tf.gather(word_of_token, row_starts + positions.flat_values))
        dense_words = position_words.to_tensor(default_value=-1, shape=[None, limit + 1])
        straddling = tf.where(dense_words[:, limit] == dense_words[:, limit - 1], dense_words[:, limit], -1)
        index = tf.ragged.range(positions.row_lengths())
        keep = tf.logical_and(index < limit, tf.not_equal(position_words, straddling[:, tf.newaxis]))
        kept_positions, kept_labels = tf.ragged.boolean_mask(positions, keep), tf.ragged.boolean_mask(labels, keep)
        is_kept = tf.reduce_any(
            tf.equal(tf.ragged.range(masked.row_lengths())[:, :, tf.newaxis], kept_positions[:, tf.newaxis, :]),
            axis=-1,
        )
        restored = tf.ragged.map_flat_values(tf.where, is_kept, masked, token_ids)
        return restored, kept_positions, kept_labels

    def _group_words(self, token_ids: tf.RaggedTensor):
        """[batch, (tokens)] → [batch, (words), (pieces)] (a word is a token and the `##` pieces after it),
        and the flat word index of every token."""
        flat = token_ids.flat_values
        starts_word = tf.logical_not(tf.gather(self.is_continuation, flat))
        first_in_row = tf.equal(tf.ragged.range(token_ids.row_lengths()).flat_values, 0)
        # A segment trimmed at its front can begin with a "##" piece: it starts a word of its own.
        after_special = tf.reduce_any(tf.equal(tf.concat([[-1], flat[:-1]], 0)[:, tf.newaxis], self.special_ids), -1)
        starts_word = starts_word | first_in_row | after_special
        word_of_token = tf.cumsum(tf.cast(starts_word, tf.int64)) - 1
        pieces = tf.RaggedTensor.from_value_rowids(token_ids.flat_values, word_of_token)
        words_per_row = tf.math.segment_sum(tf.cast(starts_word, tf.int64), token_ids.value_rowids())
        words_per_row = tf.concat(
            [words_per_row, tf.zeros([token_ids.nrows() - tf.shape(words_per_row, out_type=tf.int64)[0]], tf.int64)], 0
        )
        return tf.RaggedTensor.from_row_lengths(pieces, words_per_row), word_of_token
