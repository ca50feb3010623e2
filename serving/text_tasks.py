"""`TextSignatures`: the raw-text side of an exported SavedModel, per task, with bert_tf's exact tokenizer.

- classify, encoder/pretrainer: `BertPreprocessor` (round-robin truncation of pairs);
  classifiers pad each batch only to its longest text (their outputs do not depend on
  padding), the others to `seq_length`.
- ner: the text is split into words at whitespace (as Python's `str.split()` does, which
  `pipelines.prediction` uses), each word into pieces; a word's tag is its first piece's. Extra outputs: `words` and `word_tags`
  (string [batch, most words], "" after the last word and for words cut off by
  truncation or without pieces).
- squad: the question keeps its first `max_query_length` tokens, the context the rest
  (only its first window: answers beyond it are not found). Extra outputs:
  `answer_text` (string [batch], "" for no answer) and `answer_char_start`,
  `answer_char_end` (int32 [batch], code-point offsets into the context, end exclusive,
  as Python `str` indices).
`preprocess` gives the id tensors each task's text path feeds the model.

Example:
    >>> signatures = TextSignatures(spec)                    # doctest: +SKIP
    >>> signatures.outputs([tf.constant(["EU rejects German call"])])["word_tags"]  # doctest: +SKIP
    <tf.Tensor: shape=(1, 4), dtype=string, numpy=array([[b'B-ORG', b'O', b'B-MISC', b'O']], dtype=object)>
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tokenizer import BertTokenizer
from serving.dense_packing import pack_dense, question_first_counts
from serving.signatures import ServingSpec, task_outputs


class TextSignatures:
    """Text → ids → outputs for `spec`'s task; call `outputs` and `preprocess` inside a `tf.function`."""

    def __init__(self, spec: ServingSpec):
        self.spec = spec
        self.tokenizer = BertTokenizer(spec.vocabulary)
        self.fixed = BertPreprocessor(self.tokenizer, spec.seq_length, padding="max_length")
        self.longest = BertPreprocessor(self.tokenizer, spec.seq_length, padding="longest")
        # Python's str.split() whitespace: RE2's \s, \v, the separators U+001C..U+001F, U+0085, and Unicode
        # category Z. (tensorflow-text's WhitespaceTokenizer cut "\u00a0" in half: invalid UTF-8 words.)
        self.whitespace = r"[\s\x{0b}\x{1c}-\x{1f}\x{85}\p{Z}]+"

    def preprocess(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The three id tensors, int32 [batch, seq_length]."""
        if self.spec.task == "ner":
            return self._ner_ids(texts[0])[0]
        if self.spec.task == "squad":
            return self._squad_ids(*texts)[0]
        return self.fixed(texts)

    def outputs(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The task's outputs (`serving.signatures`) and the extras from text (module docstring)."""
        if self.spec.task == "classify":
            return task_outputs(self.spec, _at_least_two_columns(self.longest(texts), self.spec.vocabulary.pad_id))
        if self.spec.task == "ner":
            return self._ner_outputs(texts[0])
        if self.spec.task == "squad":
            return self._squad_outputs(*texts)
        return task_outputs(self.spec, self.fixed(texts))

    def _ner_ids(self, text):
        """(ids, words [batch, (words)], position of each word's first piece or -1 [batch, (words)])."""
        words = tf_text.regex_split(text, self.whitespace)
        pieces = self.tokenizer.tokenize(words)  # [batch, (words), (pieces)]
        tokens = pieces.merge_dims(1, 2)
        budget = self.spec.seq_length - 2
        kept = tf.minimum(tf.cast(tokens.row_lengths(), tf.int32), budget)
        ids = pack_dense([tokens.to_tensor(self.spec.vocabulary.pad_id, shape=[None, budget])], [kept],
                         self.spec.seq_length, self.spec.vocabulary)
        # Index of each word's first piece among its text's tokens (pieces.values: one row per word).
        first = tf.cast(pieces.values.row_starts() - tf.gather(tokens.row_starts(), words.value_rowids()), tf.int32)
        has_pieces = pieces.values.row_lengths() > 0
        in_window = first < tf.gather(kept, words.value_rowids())
        position = tf.where(tf.logical_and(has_pieces, in_window), first + 1, -1)  # + 1: after [CLS]
        return ids, words, words.with_flat_values(position)

    def _ner_outputs(self, text):
        ids, words, positions = self._ner_ids(text)
        outputs = task_outputs(self.spec, ids)
        position = positions.flat_values
        where = tf.stack([tf.cast(positions.value_rowids(), tf.int32), tf.maximum(position, 0)], axis=1)
        tags = tf.where(position >= 0, tf.gather_nd(outputs["tags"], where), "")
        return {**outputs, "words": words.to_tensor(""), "word_tags": positions.with_flat_values(tags).to_tensor("")}

    def _squad_ids(self, question, context):
        """(ids, per context token its code-point start and end [batch, budget], question tokens kept)."""
        question_ids = self.tokenizer.tokenize(question)
        context_ids, starts, ends = self.tokenizer.tokenize_with_offsets(context, unit="UTF8_CHAR")
        budget = self.spec.seq_length - 3
        kept = question_first_counts(
            [tf.cast(question_ids.row_lengths(), tf.int32), tf.cast(context_ids.row_lengths(), tf.int32)],
            budget, self.spec.squad["max_query_length"])
        pad = self.spec.vocabulary.pad_id
        question_width = min(budget, self.spec.squad["max_query_length"])
        ids = pack_dense([question_ids.to_tensor(pad, shape=[None, question_width]),
                          context_ids.to_tensor(pad, shape=[None, budget])], kept, self.spec.seq_length,
                         self.spec.vocabulary)
        offsets = [tf.cast(offset.to_tensor(0, shape=[None, budget]), tf.int32) for offset in (starts, ends)]
        return ids, *offsets, kept[0]

    def _squad_outputs(self, question, context):
        ids, starts, ends, question_kept = self._squad_ids(question, context)
        outputs = task_outputs(self.spec, ids)
        found = outputs["answer_start"] > 0
        first = tf.maximum(outputs["answer_start"] - question_kept - 2, 0)  # context token index: after [CLS] q [SEP]
        last = tf.maximum(outputs["answer_end"] - question_kept - 2, 0)
        char_start = tf.where(found, tf.gather(starts, first, batch_dims=1), 0)
        char_end = tf.where(found, tf.gather(ends, last, batch_dims=1), 0)
        text = tf.strings.substr(context, char_start, char_end - char_start, unit="UTF8_CHAR")
        return {**outputs, "answer_text": tf.where(found, text, ""), "answer_char_start": char_start,
                "answer_char_end": char_end}


def _at_least_two_columns(ids: dict[str, tf.Tensor], pad_id: int) -> dict[str, tf.Tensor]:
    """Pads ids to 2 columns where a batch is narrower: only an empty batch is ([batch 0, 0]);
    the encoder reads column 0 ([CLS]) and fails on a tensor without it."""
    missing = tf.maximum(0, 2 - tf.shape(ids["input_word_ids"])[1])
    return {
        name: tf.pad(value, [[0, 0], [0, missing]], constant_values=pad_id if name == "input_word_ids" else 0)
        for name, value in ids.items()
    }
