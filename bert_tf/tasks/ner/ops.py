"""Words → model windows for token classification (NER), in TensorFlow ops: one rule for training,
evaluation, prediction and the exported SavedModel.

A sentence longer than `seq_length - 2` pieces is cut into consecutive windows of whole words,
each `[CLS] pieces... [SEP]`: a word joins the current window unless its pieces would overflow
it; a word longer than a whole window is alone in its window and keeps its first pieces; a word
without pieces (e.g. only control characters) becomes `[UNK]`, so every word has a first piece
and a prediction. A sentence without words is one window `[CLS] [SEP]`.

Raw text is split into words as BERT's basic tokenizer splits it, at whitespace and around
punctuation ("Airbus." → "Airbus", "."; `BertTokenizer.words`), and the tagged words are grouped
into entities as Hugging Face's `aggregation_strategy="simple"` groups them (`word_entities`).

The rule is sequential, but each window's end follows from its start alone (the first word
whose pieces overflow it, by a search in the running piece counts), so a `tf.while_loop` walks
from window to window, all sentences at once: the work stays linear in the number of words.

Example:
    >>> # [CLS]=2 [SEP]=3 [UNK]=1; the words "a b##c d" as piece ids, windows of 3 pieces
    >>> pieces = tf.ragged.constant([[[5], [6, 7], [8]]])
    >>> windows = word_windows(pieces, seq_length=5, vocabulary=vocabulary)  # doctest: +SKIP
    >>> windows.input_word_ids.to_list(), windows.word_ids.to_list()  # doctest: +SKIP
    ([[[2, 5, 6, 7, 3], [2, 8, 3]]], [[[-1, 0, 1, 1, -1], [-1, 2, -1]]])
    >>> windows.word_window.to_list(), windows.word_position.to_list()  # doctest: +SKIP
    ([[0, 0, 1]], [[1, 2, 1]])
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import tensorflow as tf

from bert_tf.tasks.text_budget import cut_text
from bert_tf.tasks.text_serving import TextServing, per_example
from bert_tf.vocabulary import Vocabulary


class WordWindows(NamedTuple):
    """The windows of a batch of sentences; `input_word_ids.value_rowids()` is each window's sentence."""

    input_word_ids: tf.RaggedTensor  # int32 [batch, (windows), (tokens)]: [CLS] pieces... [SEP]
    word_ids: tf.RaggedTensor  # int32 [batch, (windows), (tokens)]: the sentence's word index, -1 on [CLS]/[SEP]
    word_window: tf.RaggedTensor  # int32 [batch, (words)]: the window (of its sentence) of the word's first piece
    word_position: tf.RaggedTensor  # int32 [batch, (words)]: that piece's position in its window


def word_windows(pieces: tf.RaggedTensor, seq_length: int, vocabulary: Vocabulary) -> WordWindows:
    """The windows of at most `seq_length` tokens of sentences given as piece ids [batch, (words), (pieces)].

    `pieces` is what `BertTokenizer.tokenize` gives for words [batch, (words)].
    """
    budget = seq_length - 2
    if budget < 1:
        raise ValueError(f"seq_length must leave room for [CLS], a piece and [SEP], got {seq_length}.")
    words = pieces.values  # [all words, (pieces)]
    no_pieces = tf.equal(words.row_lengths(), 0)
    unknown = tf.fill([tf.reduce_sum(tf.cast(no_pieces, tf.int32))], tf.cast(vocabulary.unk_id, words.dtype))
    words = tf.concat([words, tf.RaggedTensor.from_row_lengths(unknown, tf.cast(no_pieces, tf.int64))], axis=1)

    lengths = words.row_lengths()
    word = tf.range(tf.size(lengths, tf.int64))  # over the whole batch
    sentence = pieces.value_rowids()  # of each word
    sentence_end = tf.gather(pieces.row_limits(), sentence)  # the word after each word's sentence
    pieces_end = tf.cumsum(lengths)  # pieces up to and including each word, over the whole batch
    pieces_start = pieces_end - lengths
    # A window starting at a word ends before the first word that overflows it (one word at least).
    overflow = tf.searchsorted(pieces_end, pieces_start + budget, side="right", out_type=tf.int64)
    next_start = tf.minimum(tf.maximum(overflow, word + 1), sentence_end)

    def next_windows(starts, all_starts):
        following = tf.gather(next_start, starts)
        following = tf.boolean_mask(following, following < tf.gather(sentence_end, starts))
        return following, all_starts.write(all_starts.size(), following)

    first_words = tf.boolean_mask(pieces.row_starts(), pieces.row_lengths() > 0)
    all_starts = tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])
    _, all_starts = tf.while_loop(lambda starts, _: tf.size(starts) > 0, next_windows,
                                  (first_words, all_starts.write(0, first_words)))
    all_starts = all_starts.concat()
    is_start = tf.scatter_nd(all_starts[:, tf.newaxis], tf.ones_like(all_starts), tf.shape(lengths, tf.int64))
    starts = tf.where(is_start > 0)[:, 0]  # the first word of every window of a sentence with words
    start_index = tf.cumsum(is_start) - 1  # of each word: its window's index in `starts`
    offset = pieces_start - tf.gather(tf.gather(pieces_start, starts), start_index)  # pieces before it in its window
    kept = tf.minimum(lengths, budget - offset)

    started = tf.math.unsorted_segment_sum(is_start, sentence, pieces.nrows())  # windows of each sentence's words
    windows_per_sentence = tf.maximum(started, 1)
    local_window = start_index - tf.gather(tf.cumsum(started, exclusive=True), sentence)
    window = tf.gather(tf.cumsum(windows_per_sentence, exclusive=True), sentence) + local_window  # over the batch
    num_windows = tf.reduce_sum(windows_per_sentence)

    piece_word = words.value_rowids()
    piece_offset = tf.range(tf.size(piece_word, tf.int64)) - tf.gather(words.row_starts(), piece_word)
    keep = piece_offset < tf.gather(kept, piece_word)
    kept_word = tf.boolean_mask(piece_word, keep)

    def framed(values, first, last):
        """[batch, (windows), (tokens)]: each window's values of its kept pieces, between `first` and `last`."""
        inner = tf.RaggedTensor.from_value_rowids(tf.cast(values, tf.int32), tf.gather(window, kept_word),
                                                  nrows=num_windows)
        column = tf.ones([num_windows, 1], tf.int32)
        return tf.RaggedTensor.from_row_lengths(tf.concat([column * first, inner, column * last], axis=1),
                                                windows_per_sentence)

    word_in_sentence = word - tf.gather(pieces.row_starts(), sentence)
    return WordWindows(
        input_word_ids=framed(tf.boolean_mask(words.values, keep), vocabulary.cls_id, vocabulary.sep_id),
        word_ids=framed(tf.gather(word_in_sentence, kept_word), -1, -1),
        word_window=tf.RaggedTensor.from_row_splits(tf.cast(local_window, tf.int32), pieces.row_splits),
        word_position=tf.RaggedTensor.from_row_splits(tf.cast(offset + 1, tf.int32), pieces.row_splits),
    )


def window_inputs(windows: WordWindows, seq_length: int, pad_id: int) -> dict[str, tf.Tensor]:
    """The three id tensors of all windows of the batch, int32 [windows, seq_length]."""
    tokens = windows.input_word_ids.values
    shape = [None, seq_length]
    mask = tf.ones_like(tokens).to_tensor(0, shape=shape)
    return {"input_word_ids": tokens.to_tensor(pad_id, shape=shape), "input_mask": mask,
            "input_type_ids": tf.zeros_like(mask)}


def token_outputs(logits: tf.Tensor, input_mask: tf.Tensor, label_names: tuple[str, ...]) -> dict[str, tf.Tensor]:
    """Per-token `probabilities` [rows, s, k], `tag_ids` [rows, s] and `tags` [rows, s] ("" on padding)."""
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))
    tag_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    # "" on padding, by gathering from the names plus "" (a select of strings has no TFLite kernel).
    padded = tf.where(tf.cast(input_mask, tf.bool), tag_ids, len(label_names))
    tags = tf.gather(tf.constant(tuple(label_names) + ("",)), padded)
    return {"probabilities": probabilities, "tag_ids": tag_ids, "tags": tags}


def word_values(per_window: tf.Tensor, windows: WordWindows) -> tf.RaggedTensor:
    """Each word's value at its first piece, [batch, (words)], from per-token values [batch, windows, s, ...]."""
    window, position = windows.word_window, windows.word_position
    where = tf.stack([window.value_rowids(), tf.cast(window.flat_values, tf.int64),
                      tf.cast(position.flat_values, tf.int64)], axis=1)
    return window.with_flat_values(tf.gather_nd(per_window, where))


class Entities(NamedTuple):
    """The entities of a batch of texts, each [batch, (entities)]."""

    types: tf.RaggedTensor  # string: the tags' type ("PER" of "B-PER" and "I-PER")
    starts: tf.RaggedTensor  # int32: its first word's start (code points)
    ends: tf.RaggedTensor  # int32: its last word's end (exclusive)
    scores: tf.RaggedTensor  # float32: the mean over its words of their tag's probability


def word_entities(tag_ids: tf.RaggedTensor, scores: tf.RaggedTensor, starts: tf.RaggedTensor, ends: tf.RaggedTensor,
                  label_names: Sequence[str]) -> Entities:
    """Entities from tagged words [batch, (words)], as Hugging Face's `aggregation_strategy="simple"`.

    A word tagged "B-X", or "I-X" after a word not of type X, opens an entity of type X; "I-X"
    after a word of type X continues it; "O" closes it. (A tag without "B-"/"I-" is its own type.)

    Example:
        >>> # words "Mary lives in New York" tagged B-PER O O B-LOC I-LOC
        >>> entities = word_entities(tag_ids, scores, starts, ends, ["B-LOC", "B-PER", "I-LOC", "O"])  # doctest: +SKIP
        >>> entities.types.to_list(), entities.starts.to_list(), entities.ends.to_list()  # doctest: +SKIP
        ([[b'PER', b'LOC']], [[0, 14]], [[4, 22]])
    """
    kinds = [name[2:] if name[:2] in ("B-", "I-") else name for name in label_names]
    type_names = sorted({kind for kind in kinds if kind != "O"})
    tag = tag_ids.flat_values
    kind = tf.gather([type_names.index(kind) if kind != "O" else -1 for kind in kinds], tag)
    begins = tf.gather([name.startswith("B-") for name in label_names], tag)
    first_word = tf.equal(tf.range(tf.size(tag, tf.int64)), tf.gather(tag_ids.row_starts(), tag_ids.value_rowids()))
    previous = tf.where(first_word, -1, tf.concat([[-1], kind[:-1]], 0))
    in_entity = kind >= 0
    opens = in_entity & (begins | tf.not_equal(kind, previous))
    member = tf.boolean_mask(tf.cumsum(tf.cast(opens, tf.int32)) - 1, in_entity)  # each entity word's entity
    count = tf.reduce_sum(tf.cast(opens, tf.int32))

    def per_entity(values, reduce):
        return reduce(tf.boolean_mask(values.flat_values, in_entity), member, count)

    rows = tf.boolean_mask(tag_ids.value_rowids(), opens)
    return Entities(*(tf.RaggedTensor.from_value_rowids(values, rows, nrows=tag_ids.nrows()) for values in (
        tf.gather(tf.constant(type_names or [""], tf.string), tf.boolean_mask(kind, opens)),
        per_entity(starts, tf.math.unsorted_segment_min),
        per_entity(ends, tf.math.unsorted_segment_max),
        per_entity(tf.cast(scores, tf.float32), tf.math.unsorted_segment_mean))))


class NerTextServing(TextServing):
    """Raw text → windows of whole words → per-token outputs, and each word's tag and the entities.

    The text is cut to `max_text_bytes`, split into words as BERT's basic tokenizer splits it (at whitespace and
    around punctuation, `BertTokenizer.words`), each word into pieces, and the words into windows of
    `seq_length` tokens as `bert-tf predict` does (`word_windows`); a word's tag is its first piece's.
    Outputs: the per-token outputs per window, [batch, most windows, seq_length, ...] (zeros and "" for the
    windows a text does not have); `words` and `word_tags` (string [batch, most words], "" only after the last
    word); the entities (`word_entities`), [batch, most entities]: `entity_type`, `entity_text` (string, ""
    after the last), `entity_char_start`, `entity_char_end` (int32 code-point offsets, end exclusive) and
    `entity_score` (float32). `preprocess` gives the windows' ids, [batch, most windows, seq_length].
    """

    def _windows(self, text):
        """(ids [windows, seq_length] each, the `WordWindows` of the text's words, (the cut text, its words))."""
        text = cut_text(text, self.spec.max_text_bytes)
        words = self.tokenizer.words(text)
        vocabulary = self.tokenizer.vocabulary
        windows = word_windows(self.tokenizer.tokenize(words[0]), self.spec.seq_length, vocabulary)
        return window_inputs(windows, self.spec.seq_length, vocabulary.pad_id), windows, (text, *words)

    def preprocess(self, texts):
        ids, windows, _ = self._windows(texts[0])
        return per_example(ids, windows.input_word_ids.row_lengths())

    def outputs(self, texts):
        ids, windows, (text, words, starts, ends) = self._windows(texts[0])
        per_window = self.task.serving_outputs(self.model, self.spec, ids)
        outputs = per_example(per_window, windows.input_word_ids.row_lengths())
        tag_ids = word_values(outputs["tag_ids"], windows)
        scores = word_values(tf.reduce_max(outputs["probabilities"], axis=-1), windows)
        entities = word_entities(tag_ids, scores, starts, ends, self.spec.label_names)
        entity_text = tf.strings.substr(tf.gather(text, entities.types.value_rowids()), entities.starts.flat_values,
                                        entities.ends.flat_values - entities.starts.flat_values, unit="UTF8_CHAR")
        return {**outputs, "words": words.to_tensor(""),
                "word_tags": word_values(outputs["tags"], windows).to_tensor(""),
                "entity_type": entities.types.to_tensor(""),
                "entity_text": entities.types.with_flat_values(entity_text).to_tensor(""),
                "entity_char_start": entities.starts.to_tensor(0), "entity_char_end": entities.ends.to_tensor(0),
                "entity_score": entities.scores.to_tensor(0.0)}
