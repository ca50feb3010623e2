"""`BertTokenizer`: BERT's WordPiece tokenization inside the TensorFlow graph, id-exact to the reference.

Text → BERT normalization and word splitting (`bert_tf.text_normalization`, exact to Hugging Face's
`BertWordPieceTokenizer`) → tensorflow-text's `FastWordpieceTokenizer` (greedy longest-match-first,
`##` continuations) → ragged int32 ids. A word of more than `max_chars_per_word` characters
becomes one `[UNK]`, counted in characters as the reference does (FastWordpiece counts bytes).

Differences from the reference, by design: text that spells a special token ("[MASK]", "[SEP]")
is tokenized as text, as google-research/bert does (the Hugging Face tokenizer turns it into the
special id, so user text could forge segment boundaries); and a few hundred rare code points that
Unicode assigned or re-categorized after version 9 (see `bert_tf.text_normalization`).

Behaviour on bad input: an empty batch gives an empty result; empty or whitespace-only strings
give no tokens; bytes that are not UTF-8 are dropped (the reference drops U+FFFD); a 1 MB string is
tokenized like any other (a word longer than `max_chars_per_word` is one `[UNK]`).

TFLite: the table lookups are plain Gather/Cumsum ops, but UnicodeDecodeWithOffsets,
UnicodeEncode and the ragged ops (RaggedRange, RaggedGather) have no TFLite builtin kernels, and
the pip interpreters have no Flex delegate. A raw-text TFLite model can use tensorflow-text's
FastBertNormalize + FastWordpieceTokenize kernels instead, which are not id-exact (see
`bert_tf.text_normalization`); keep this exact tokenizer in tf.data or in a SavedModel.

Example:
    >>> tokenizer = BertTokenizer("vocab/bert-base-uncased-vocab.txt")  # doctest: +SKIP
    >>> tokenizer(tf.constant(["Hello, World!"])).to_list()  # doctest: +SKIP
    [[7592, 1010, 2088, 999]]
    >>> tokenizer.tokenize_to_strings(tf.constant(["Héllo"])).to_list()  # doctest: +SKIP
    [[b'hello']]
"""

from __future__ import annotations

import os
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.text_normalization import character_table, split_words
from bert_tf.vocabulary import SUFFIX_INDICATOR, Vocabulary, check_casing

OFFSET_UNITS = ("BYTE", "UTF8_CHAR")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizer(keras.layers.Layer):
    """BERT WordPiece tokenizer as a Keras layer: string tensor of any shape → ragged int32 ids.

    Args:
        vocabulary: path of a `vocab.txt`, a list of tokens, or a `Vocabulary`.
        lower_case: lower-case the text (uncased BERT). None: the vocabulary's casing (a
            `Vocabulary`'s own, else inferred from the tokens; see `bert_tf.vocabulary`).
        strip_accents: remove accents; None follows `lower_case`, as in BERT.
        max_chars_per_word: longer words become `[UNK]` (BERT: 100).
    """

    def __init__(
        self,
        vocabulary: str | os.PathLike | Sequence[str] | Vocabulary,
        lower_case: bool | None = None,
        strip_accents: bool | None = None,
        max_chars_per_word: int = 100,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._convert_input_args = False  # strings stay TensorFlow tensors
        self._allow_non_tensor_positional_args = True  # accept Python strings and lists
        if isinstance(vocabulary, Vocabulary):
            if lower_case is not None:
                check_casing(lower_case, vocabulary.lower_case)
        elif isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = Vocabulary.from_file(vocabulary, lower_case)
        else:
            vocabulary = Vocabulary(tuple(vocabulary), lower_case)
        if max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be positive, got {max_chars_per_word}.")
        self.vocabulary = vocabulary
        self.strip_accents = vocabulary.lower_case if strip_accents is None else bool(strip_accents)
        self.max_chars_per_word = int(max_chars_per_word)
        self._table = character_table(vocabulary.lower_case, self.strip_accents)
        self._tokens = np.array(vocabulary.tokens, dtype=object)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            list(vocabulary.tokens),
            suffix_indicator=SUFFIX_INDICATOR,
            # Never reached below max_chars_per_word (4 bytes per character at most): the
            # character limit is applied in `_tokenize`, as the reference counts characters.
            max_bytes_per_word=4 * self.max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
            no_pretokenization=True,
            support_detokenization=True,
        )
        self.built = True

    @property
    def lower_case(self) -> bool:
        return self.vocabulary.lower_case

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary)

    def call(self, text):
        return self.tokenize(text)

    def tokenize(self, text):
        """Token ids: int32, the shape of `text` plus one ragged dimension."""
        flat, restore = _flatten(text)
        return restore(self._tokenize(flat, unit=None)[0])

    def tokenize_with_offsets(self, text, unit: str = "BYTE"):
        """`(ids, starts, ends)`: each token's span in its original string, end exclusive.

        `unit="BYTE"` gives UTF-8 byte offsets (for `tf.strings.substr`); `"UTF8_CHAR"` gives
        code point offsets, i.e. Python `str` indices, as the reference's `Encoding.offsets`.
        """
        if unit not in OFFSET_UNITS:
            raise ValueError(f"unit must be one of {OFFSET_UNITS}, got {unit!r}.")
        flat, restore = _flatten(text)
        return tuple(restore(part) for part in self._tokenize(flat, unit=unit))

    def words(self, text):
        """`(words, starts, ends)` of a 1-D string tensor, each [len(text), (words)]: BERT's words (split at
        whitespace and around punctuation, as the reference's basic tokenizer), each as written in the text
        (not lower-cased), with its code-point span (Python `str` indices, end exclusive).

        Example:
            >>> words, starts, ends = tokenizer.words(tf.constant(["Airbus, in Toulouse."]))  # doctest: +SKIP
            >>> words.to_list(), starts.to_list()  # doctest: +SKIP
            ([[b'Airbus', b',', b'in', b'Toulouse', b'.']], [[0, 6, 8, 11, 19]])
        """
        text = tf.convert_to_tensor(text, tf.string)
        split = split_words(text, self._table)
        first = tf.gather(split.sources.flat_values, split.chars.row_starts())
        last = tf.gather(split.sources.flat_values, split.chars.row_limits() - 1)
        byte_start, byte_end = _source_span(split, first, last, "BYTE")
        starts, ends = _source_span(split, first, last, "UTF8_CHAR")
        written = tf.strings.substr(tf.gather(text, split.rows), byte_start, byte_end - byte_start)
        return tuple(tf.RaggedTensor.from_value_rowids(values, split.rows, nrows=tf.shape(text, tf.int64)[0])
                     for values in (written, tf.cast(starts, tf.int32), tf.cast(ends, tf.int32)))

    def tokenize_to_strings(self, text):
        """The token strings (`b"hello"`, `b"##s"`), shaped as `tokenize`."""
        return self.id_to_token(self.tokenize(text))

    def id_to_token(self, ids):
        """Token strings of a dense or ragged int tensor of ids."""
        return tf.ragged.map_flat_values(tf.gather, tf.constant(self._tokens, tf.string), ids)

    def token_to_id(self, token: str) -> int:
        return self.vocabulary.token_id(token)

    def detokenize(self, ids, skip_special_tokens: bool = True):
        """Text from ids [batch, (seq)] (ragged or dense) or [seq]: words joined by one space, `##` pieces glued.

        Lower-casing, accents and spacing around punctuation are not undone (" , " stays).
        `skip_special_tokens` drops `[PAD] [UNK] [CLS] [SEP] [MASK]`, as the reference's `decode`.
        """
        ids = ids if isinstance(ids, tf.RaggedTensor) else tf.convert_to_tensor(ids)
        if ids.shape.rank not in (1, 2):
            raise ValueError(f"detokenize takes ids of shape [seq] or [batch, seq], got rank {ids.shape.rank}.")
        single = ids.shape.rank == 1
        if single:
            ids = ids[tf.newaxis]
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        ids = tf.cast(ids, tf.int32)
        if skip_special_tokens:
            special = tf.constant(self.vocabulary.special_ids, tf.int32)
            is_special = tf.reduce_any(tf.equal(ids.flat_values[:, tf.newaxis], special), axis=1)
            ids = tf.ragged.boolean_mask(ids, ids.with_flat_values(tf.logical_not(is_special)))
        text = self._wordpiece.detokenize(ids)
        return text[0] if single else text

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary=list(self.vocabulary.tokens),
            lower_case=self.lower_case,
            strip_accents=self.strip_accents,
            max_chars_per_word=self.max_chars_per_word,
        )
        return config

    def _tokenize(self, text, unit):
        """Ids (and, for a unit, start and end offsets) as RaggedTensors [len(text), (tokens)]."""
        split = split_words(text, self._table)
        words = tf.strings.unicode_encode(split.chars, "UTF-8")
        too_long = split.chars.row_lengths() > self.max_chars_per_word
        if unit is None:
            pieces = _replace_rows(self._wordpiece.tokenize(words), too_long, self.vocabulary.unk_id)
            return (_group_by_string(pieces, split.rows, tf.shape(text, tf.int64)[0]),)

        pieces, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(words)
        # FastWordpiece gives byte offsets within the normalized word: map them to the word's
        # characters, then to the input characters those came from.
        chars = split.chars.flat_values
        char_bytes = 1 + sum(tf.cast(chars >= limit, tf.int64) for limit in (0x80, 0x800, 0x10000))
        char_of_byte = tf.repeat(tf.range(tf.size(chars, out_type=tf.int64)), char_bytes)
        word_first_byte = tf.gather(tf.cumsum(char_bytes, exclusive=True), split.chars.row_starts())
        piece_first_byte = tf.gather(word_first_byte, pieces.value_rowids())
        sources = split.sources.flat_values
        starts, ends = _source_span(
            split,
            tf.gather(sources, tf.gather(char_of_byte, piece_first_byte + piece_starts.flat_values)),
            tf.gather(sources, tf.gather(char_of_byte, piece_first_byte + piece_ends.flat_values - 1)),
            unit,
        )
        # A too-long word's single [UNK] spans the whole word.
        word_start, word_end = _source_span(
            split, tf.gather(sources, split.chars.row_starts()), tf.gather(sources, split.chars.row_limits() - 1), unit
        )
        num_strings = tf.shape(text, tf.int64)[0]
        return tuple(
            _group_by_string(
                _replace_rows(pieces.with_flat_values(values), too_long, replacement), split.rows, num_strings
            )
            for values, replacement in (
                (pieces.flat_values, self.vocabulary.unk_id),
                (starts, word_start),
                (ends, word_end),
            )
        )


def _source_span(split, first_source, last_source, unit):
    """Start and end offsets, in `unit`, from the first to the last of some input characters."""
    if unit == "BYTE":
        return tf.gather(split.source_starts, first_source), tf.gather(split.source_ends, last_source)
    return tf.gather(split.source_positions, first_source), tf.gather(split.source_positions, last_source) + 1


def _replace_rows(rows: tf.RaggedTensor, mask, replacement) -> tf.RaggedTensor:
    """`rows` with every masked row replaced by the single value `replacement` (scalar or one per row)."""
    lengths = tf.where(mask, tf.ones_like(rows.row_lengths()), rows.row_lengths())
    sources = tf.ragged.range(rows.row_starts(), rows.row_starts() + lengths).flat_values
    replacement = tf.broadcast_to(tf.cast(replacement, rows.dtype), tf.shape(mask))
    values = tf.where(
        tf.repeat(mask, lengths),
        tf.repeat(replacement, lengths),
        tf.gather(rows.flat_values, sources),  # every row has a value: a word has at least one piece
    )
    return tf.RaggedTensor.from_row_lengths(values, lengths)


def _group_by_string(pieces: tf.RaggedTensor, word_rows, num_strings) -> tf.RaggedTensor:
    """Per-word pieces [words, (pieces)] → per-string tokens [strings, (tokens)]."""
    rows = tf.repeat(word_rows, pieces.row_lengths())
    return tf.RaggedTensor.from_value_rowids(pieces.flat_values, rows, nrows=num_strings)


def _flatten(text):
    """A 1-D string tensor of all of `text`'s strings, and the function that gives results `text`'s shape."""
    if isinstance(text, tf.RaggedTensor):
        return text.flat_values, text.with_flat_values
    text = tf.convert_to_tensor(text, tf.string)
    rank = text.shape.rank
    if rank is None:
        raise ValueError("BertTokenizer needs input of known rank.")
    if rank == 0:
        return text[tf.newaxis], lambda tokens: tokens[0]
    if rank == 1:
        return text, lambda tokens: tokens
    shaped = tf.RaggedTensor.from_tensor(text, ragged_rank=rank - 1)
    return shaped.flat_values, shaped.with_flat_values
