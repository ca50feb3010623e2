"""`BertPreprocessor`: text segments → the id tensors `BertModel` takes, in the graph.

One or more segments (A, B, ...) are tokenized, truncated to fit `seq_length`, packed as
`[CLS] A [SEP] B [SEP] ...` with `input_type_ids` 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 2 for a
third segment, and so on, then padded with `[PAD]`.

Truncation, compared with the reference (`tokenizers`/`transformers` `truncation=` for pairs):
- "longest_first": exactly the reference's `longest_first`. When both segments exceed half the
  budget, each gets half; an odd leftover token goes to the longer segment, to B on a tie.
- "round_robin" (tensorflow-text `RoundRobinTrimmer`): the same except that the odd leftover
  token always goes to A; so it differs from the reference only when the budget is odd, both
  segments exceed half of it and A is not longer than B.
- "waterfall" (tensorflow-text `WaterfallTrimmer`): the last segment is cut first. Like the
  reference's `only_second` whenever B keeps at least one token; otherwise A is cut and B dropped
  (the reference raises an error).
A single segment is cut to `seq_length - 2` by all three, as the reference does.

Example:
    >>> preprocessor = BertPreprocessor(tokenizer, seq_length=8)  # doctest: +SKIP
    >>> preprocessor((tf.constant(["Is it?"]), tf.constant(["Yes."])))["input_word_ids"]  # doctest: +SKIP
    <tf.Tensor: shape=(1, 8), dtype=int32, numpy=array([[ 101, 2003, 2009, 1029,  102, 2748, 1012,  102]], ...)>
"""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.tokenizer import BertTokenizer

TRUNCATIONS = ("longest_first", "round_robin", "waterfall")
PADDINGS = ("max_length", "longest")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPreprocessor(keras.layers.Layer):
    """Packs text segments for BERT: `{"input_word_ids", "input_mask", "input_type_ids"}`, int32 [batch, seq].

    Args:
        tokenizer: the `BertTokenizer` of the model's vocabulary.
        seq_length: most tokens per example, `[CLS]` and `[SEP]`s included.
        truncation: "longest_first" (the default, as fine-tuning and every export use), "round_robin" or
            "waterfall" (see the module docstring).
        padding: "max_length" pads every example to `seq_length`; "longest" pads a batch only to
            its longest example (faster when texts are short).

    Call it on one string tensor [batch] (or a scalar) or on a tuple/list of them, one per segment.
    """

    def __init__(
        self,
        tokenizer: BertTokenizer,
        seq_length: int = 128,
        truncation: str = "longest_first",
        padding: str = "max_length",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(f"tokenizer must be a bert_tf.BertTokenizer, got {type(tokenizer).__name__}.")
        if truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}.")
        if padding not in PADDINGS:
            raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}.")
        if isinstance(seq_length, bool) or not isinstance(seq_length, int) or seq_length < 2:
            raise ValueError(f"seq_length must be an integer of at least 2 ([CLS] and [SEP]), got {seq_length!r}.")
        self.tokenizer = tokenizer
        self.seq_length = seq_length
        self.truncation = truncation
        self.padding = padding
        self.built = True

    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not segments:
            raise ValueError("BertPreprocessor needs at least one text segment.")
        segments = [tf.convert_to_tensor(segment, tf.string) for segment in segments]
        ranks = {segment.shape.rank for segment in segments}
        if len(ranks) != 1 or ranks - {0, 1}:
            raise ValueError(
                f"Segments must all be scalars or all 1-D string tensors, got ranks {[s.shape.rank for s in segments]}."
            )
        scalar = ranks == {0}
        if scalar:
            segments = [segment[tf.newaxis] for segment in segments]
        outputs = self._pack([self.tokenizer.tokenize(segment) for segment in segments])
        return {name: value[0] for name, value in outputs.items()} if scalar else outputs

    def _pack(self, segments):
        budget = self.seq_length - len(segments) - 1  # room left by [CLS] and one [SEP] per segment
        if budget < 0:
            raise ValueError(f"seq_length={self.seq_length} is too short for [CLS] and {len(segments)} [SEP].")
        segments = self._truncate(segments, budget)
        vocabulary = self.tokenizer.vocabulary
        word_ids, type_ids = tf_text.combine_segments(segments, vocabulary.cls_id, vocabulary.sep_id)
        if self.padding == "max_length":
            word_ids, mask = tf_text.pad_model_inputs(word_ids, self.seq_length, pad_value=vocabulary.pad_id)
            type_ids, _ = tf_text.pad_model_inputs(type_ids, self.seq_length)
        else:
            lengths = word_ids.row_lengths()
            word_ids = word_ids.to_tensor(vocabulary.pad_id)
            type_ids = type_ids.to_tensor(0)
            mask = tf.sequence_mask(lengths, tf.shape(word_ids, tf.int64)[1])
        return {
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(type_ids, tf.int32),
        }

    def _truncate(self, segments, budget):
        if self.truncation == "round_robin":
            return tf_text.RoundRobinTrimmer(budget).trim(segments)
        if self.truncation == "waterfall":
            return tf_text.WaterfallTrimmer(budget).trim(segments)
        return _longest_first(segments, budget)

    def get_config(self):
        config = super().get_config()
        config.update(
            tokenizer=keras.saving.serialize_keras_object(self.tokenizer),
            seq_length=self.seq_length,
            truncation=self.truncation,
            padding=self.padding,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config, tokenizer=keras.saving.deserialize_keras_object(config["tokenizer"]))
        return cls(**config)


def _longest_first(segments, budget):
    """The reference's `longest_first` truncation of one or two segments.

    Written out because no tensorflow-text trimmer breaks ties as the reference does
    (`ShrinkLongestTrimmer` gives the odd token to A, `RoundRobinTrimmer` too).
    """
    if len(segments) == 1:
        return [segments[0][:, :budget]]
    if len(segments) != 2:
        raise ValueError(f"truncation='longest_first' takes one or two segments, got {len(segments)}; pass "
                         "truncation='round_robin' or 'waterfall' for more.")
    first, second = segments
    n_first, n_second = first.row_lengths(), second.row_lengths()
    shorter = tf.minimum(n_first, n_second)
    half = tf.constant(budget // 2, shorter.dtype)  # a Python int would be int32 in a graph (tf.data)
    # Both longer than half: halves, the odd token to the longer (to B on a tie); else the
    # shorter one is kept whole and the other gets the rest.
    keep_shorter = tf.where(shorter > half, half, shorter)
    keep_longer = tf.where(shorter > half, half + budget % 2, budget - shorter)
    first_is_longer = n_first > n_second
    fits = n_first + n_second <= budget
    keep_first = tf.where(fits, n_first, tf.where(first_is_longer, keep_longer, keep_shorter))
    keep_second = tf.where(fits, n_second, tf.where(first_is_longer, keep_shorter, keep_longer))
    return [_keep_first_tokens(first, keep_first), _keep_first_tokens(second, keep_second)]


def _keep_first_tokens(tokens: tf.RaggedTensor, counts) -> tf.RaggedTensor:
    """The first `counts[i]` tokens of each row i."""
    positions = tf.ragged.range(tokens.row_lengths())
    return tf.ragged.boolean_mask(tokens, positions < tf.expand_dims(counts, 1))
