"""SQuAD in TensorFlow ops: a question and a long context as doc-stride windows, and the best answer over them.

One implementation for every path (evaluation, `bert-tf predict`, the SavedModel), after
google-research/bert's `run_squad.py`:
- `squad_windows`: each window is `[CLS] question [SEP] context window [SEP]` (type ids 0,
  then 1 from the window on). The question keeps its first `max_query_length` tokens; the
  context is cut into windows of `seq_length - 3 - question tokens` tokens whose starts are
  `doc_stride` tokens apart (or a window's length, if that is shorter); an empty context
  is one window without context tokens.
- `best_answers`: per window, the `n_best_size` highest start logits are paired with the
  `n_best_size` highest end logits (over the window's tokens up to its last `[SEP]`). A
  pair is a candidate if both tokens are context tokens of the window, the end is not
  before the start, the span has at most `max_answer_length` tokens, and the window is the
  start token's max-context window (of the windows holding it, the one where it has the
  most context on its shorter side, + 0.01 × the window's length; the first wins ties:
  `_check_is_max_context`, computed in closed form from the stride). A candidate scores
  start logit + end logit; the answer is the best of an example's candidates, and its
  probability the softmax over the `n_best_size` best (and, for SQuAD 2.0, the null
  answer). SQuAD 2.0: the null answer scores the lowest `[CLS]` start + end logit over the
  example's windows; there is no answer when null - best > `null_score_threshold`.

Memory is linear in the number of windows (n_best_size² candidates per window): nothing
is quadratic in the context's length.

Example:
    >>> windows = squad_windows(tokenizer(questions), tokenizer(contexts), seq_length=384,  # doctest: +SKIP
    ...                         max_query_length=64, doc_stride=128, vocabulary=tokenizer.vocabulary)
    >>> logits = model(windows.model_inputs(384, tokenizer.vocabulary.pad_id))  # doctest: +SKIP
    >>> answers = best_answers(logits["start_logits"], logits["end_logits"], windows.layout,  # doctest: +SKIP
    ...                        max_answer_length=30, n_best_size=20, version_2=False)
    >>> answers.first_token.numpy(), answers.last_token.numpy()  # doctest: +SKIP
    (array([112,  -1], dtype=int32), array([114,  -1], dtype=int32))
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from bert_tf.tasks.text_budget import cut_text
from bert_tf.tasks.text_serving import TextServing, per_example
from bert_tf.vocabulary import Vocabulary

NEGATIVE_INFINITY = float("-inf")


class WindowLayout(NamedTuple):
    """Where each window's context tokens come from (as `squad_windows` makes them: an example's windows
    consecutive, the first at context token 0, every one but the last of the same length)."""

    example_index: tf.Tensor  # int32 [windows]: the window's example
    doc_start: tf.Tensor  # int32 [windows]: index of its first context token
    doc_length: tf.Tensor  # int32 [windows]: its context tokens
    context_offset: tf.Tensor  # int32 [windows]: position of its first context token ([CLS] question [SEP] before)
    num_windows: tf.Tensor  # int32 [examples]: windows per example (at least 1)


class SquadWindows(NamedTuple):
    input_word_ids: tf.RaggedTensor  # int32 [windows, (length)]: [CLS] question [SEP] window [SEP]
    input_type_ids: tf.RaggedTensor  # int32 [windows, (length)]: 0 to the first [SEP], then 1
    layout: WindowLayout

    def model_inputs(self, seq_length: int, pad_id: int) -> dict[str, tf.Tensor]:
        """The three id tensors of the windows, int32 [windows, seq_length]."""
        shape = [None, seq_length]
        return {"input_word_ids": self.input_word_ids.to_tensor(pad_id, shape=shape),
                "input_mask": tf.ones_like(self.input_word_ids).to_tensor(0, shape=shape),
                "input_type_ids": self.input_type_ids.to_tensor(0, shape=shape)}


class SquadAnswers(NamedTuple):
    """The best answer of each example."""

    first_token: tf.Tensor  # int32 [examples]: its first context token (index in the context), -1 for no answer
    last_token: tf.Tensor  # int32 [examples]: its last context token, -1 for no answer
    score: tf.Tensor  # float32 [examples]: start + end logit; no answer: the null score (SQuAD 2.0), else 0
    probability: tf.Tensor  # float32 [examples]: softmax over the n best candidates (and the null answer), or 0


def squad_windows(question_ids: tf.RaggedTensor, context_ids: tf.RaggedTensor, seq_length: int, max_query_length: int,
                  doc_stride: int, vocabulary: Vocabulary) -> SquadWindows:
    """The windows of a batch of questions and their contexts (token ids [examples, (tokens)] each)."""
    if seq_length - max_query_length - 3 < 1:
        raise ValueError(f"seq_length {seq_length} leaves no room for context tokens after max_query_length "
                         f"{max_query_length} question tokens and 3 special tokens.")
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}.")
    question_ids = tf.cast(question_ids, tf.int32)[:, :max_query_length]
    context_ids = tf.cast(context_ids, tf.int32)
    question_length = tf.cast(question_ids.row_lengths(), tf.int32)
    context_length = tf.cast(context_ids.row_lengths(), tf.int32)
    max_tokens = seq_length - 3 - question_length
    stride = tf.minimum(max_tokens, doc_stride)
    num_windows = 1 + _ceil_div(tf.maximum(context_length - max_tokens, 0), stride)

    example_index = tf.repeat(tf.range(tf.size(num_windows)), num_windows)
    doc_start = tf.ragged.range(num_windows).flat_values * tf.gather(stride, example_index)
    doc_length = tf.minimum(tf.gather(context_length, example_index) - doc_start, tf.gather(max_tokens, example_index))
    context_offset = tf.gather(question_length, example_index) + 2

    first_token = tf.gather(tf.cast(context_ids.row_starts(), tf.int32), example_index) + doc_start
    window = tf.gather(context_ids.values, tf.ragged.range(first_token, first_token + doc_length))
    question = tf.gather(question_ids, example_index)
    one = tf.RaggedTensor.from_tensor(tf.ones_like(example_index)[:, tf.newaxis])
    word_ids = tf.concat([one * vocabulary.cls_id, question, one * vocabulary.sep_id, window,
                          one * vocabulary.sep_id], axis=1)
    type_ids = tf.concat([0 * one, 0 * question, 0 * one, 0 * window + 1, one], axis=1)
    return SquadWindows(word_ids, type_ids,
                        WindowLayout(example_index, doc_start, doc_length, context_offset, num_windows))


def best_answers(start_logits, end_logits, layout: WindowLayout, max_answer_length: int, n_best_size: int,
                 version_2: bool, null_score_threshold: float = 0.0) -> SquadAnswers:
    """The best answer of each example from its windows' logits, float [windows, width] (any values past a window)."""
    if n_best_size < 1 or max_answer_length < 1:
        raise ValueError(f"n_best_size and max_answer_length must be positive, got {n_best_size}, {max_answer_length}.")
    start_logits, end_logits = (tf.cast(logits, tf.float32) for logits in (start_logits, end_logits))
    layout = WindowLayout(*(tf.cast(value, tf.int32) for value in layout))
    num_examples = tf.size(layout.num_windows)
    null_score = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], layout.example_index,
                                              num_examples)

    # The n best starts and ends of each window, among its tokens up to its last [SEP].
    width = start_logits.shape[1]
    k = min(n_best_size, width) if width is not None else tf.minimum(n_best_size, tf.shape(start_logits)[1])
    in_window = tf.range(tf.shape(start_logits)[1]) < (layout.context_offset + layout.doc_length + 1)[:, tf.newaxis]
    start_score, start_position = tf.math.top_k(tf.where(in_window, start_logits, NEGATIVE_INFINITY), k)
    end_score, end_position = tf.math.top_k(tf.where(in_window, end_logits, NEGATIVE_INFINITY), k)
    offset = layout.context_offset[:, tf.newaxis]
    first, last = (layout.doc_start[:, tf.newaxis] + position - offset for position in (start_position, end_position))
    start_ok = (_in_context(start_position, layout) &
                tf.equal(_max_context_window(first, layout), _window_number(layout)[:, tf.newaxis]))
    length = last[:, tf.newaxis, :] - first[:, :, tf.newaxis] + 1  # [windows, start, end]
    valid = (start_ok[:, :, tf.newaxis] & _in_context(end_position, layout)[:, tf.newaxis, :] &
             (length >= 1) & (length <= max_answer_length))
    pair_score = tf.where(valid, start_score[:, :, tf.newaxis] + end_score[:, tf.newaxis, :], NEGATIVE_INFINITY)

    # Each window's n best candidates, then each example's candidates from the best down.
    num_candidates = min(n_best_size, k * k) if width is not None else tf.minimum(n_best_size, k * k)
    score, pair = tf.math.top_k(tf.reshape(pair_score, [tf.shape(pair_score)[0], -1]), num_candidates)
    first = tf.reshape(tf.gather(first, pair // k, batch_dims=1), [-1])
    last = tf.reshape(tf.gather(last, pair % k, batch_dims=1), [-1])
    score = tf.reshape(score, [-1])
    example = tf.repeat(layout.example_index, num_candidates)
    order = tf.argsort(score, direction="DESCENDING", stable=True)
    order = tf.gather(order, tf.argsort(tf.gather(example, order), stable=True))
    first, last, score, example = (tf.gather(value, order) for value in (first, last, score, example))
    block_start = tf.cumsum(layout.num_windows * num_candidates, exclusive=True)  # each example's best candidate
    rank = tf.range(tf.size(score)) - tf.gather(block_start, example)

    best_score = tf.gather(score, block_start)
    found = best_score > NEGATIVE_INFINITY
    top = tf.maximum(best_score, null_score) if version_2 else best_score
    top = tf.where(top > NEGATIVE_INFINITY, top, 0.0)
    in_n_best = (rank < n_best_size) & (score > NEGATIVE_INFINITY)
    total = tf.math.unsorted_segment_sum(tf.where(in_n_best, tf.exp(score - tf.gather(top, example)), 0.0), example,
                                         num_examples)
    if version_2:
        total += tf.exp(null_score - top)
        found &= null_score - best_score <= null_score_threshold
        chosen = tf.where(found, best_score, null_score)
    else:
        chosen = tf.where(found, best_score, 0.0)
    return SquadAnswers(
        first_token=tf.where(found, tf.gather(first, block_start), -1),
        last_token=tf.where(found, tf.gather(last, block_start), -1),
        score=chosen,
        probability=tf.where(found | version_2, tf.exp(chosen - top) / total, 0.0),
    )


def answer_char_spans(answers: SquadAnswers, token_starts: tf.RaggedTensor, token_ends: tf.RaggedTensor):
    """(start, end) [examples] int32 of each answer in its context (character offsets of its first and
    last tokens, `token_starts`/`token_ends` [examples, (tokens)]); (0, 0) for no answer."""
    return _token_offset(token_starts, answers.first_token), _token_offset(token_ends, answers.last_token)


def row_answers(start_logits, end_logits, type_ids, mask, max_answer_length: int, n_best_size: int,
                version_2: bool, null_score_threshold: float = 0.0) -> dict[str, tf.Tensor]:
    """The best answer of each row taken as one window `[CLS] question [SEP] context [SEP]` (what a
    caller that made its windows itself sends): `answer_start`, `answer_end` (token positions [rows];
    0 for none), `answer_score` and `answer_probability`, by `best_answers`' rules."""
    real = tf.equal(mask, 1)
    context_offset = tf.reduce_sum(tf.cast(real & tf.equal(type_ids, 0), tf.int32), axis=1)
    doc_length = tf.maximum(tf.reduce_sum(tf.cast(real & tf.equal(type_ids, 1), tf.int32), axis=1) - 1, 0)  # no [SEP]
    rows = tf.shape(start_logits)[0]
    layout = WindowLayout(example_index=tf.range(rows), doc_start=tf.zeros([rows], tf.int32), doc_length=doc_length,
                          context_offset=context_offset, num_windows=tf.ones([rows], tf.int32))
    answers = best_answers(start_logits, end_logits, layout, max_answer_length=max_answer_length,
                           n_best_size=n_best_size, version_2=version_2, null_score_threshold=null_score_threshold)
    found = answers.first_token >= 0
    return {
        "answer_start": tf.where(found, answers.first_token + context_offset, 0),
        "answer_end": tf.where(found, answers.last_token + context_offset, 0),
        "answer_score": answers.score,
        "answer_probability": answers.probability,
    }


def _token_offset(offsets: tf.RaggedTensor, token) -> tf.Tensor:
    """Each example's offset [examples] (int32) of its context token `token` ([examples]; -1: none, offset 0)."""
    values = tf.concat([tf.cast(offsets.flat_values, tf.int32), [0]], axis=0)
    index = tf.where(token >= 0, tf.cast(offsets.row_starts(), tf.int32) + token, tf.size(values) - 1)
    return tf.gather(values, index)


def _ceil_div(numerator, denominator):
    return -tf.math.floordiv(-numerator, denominator)


def _in_context(position, layout: WindowLayout):
    """Whether positions [windows, k] hold context tokens of their window."""
    index = position - layout.context_offset[:, tf.newaxis]
    return (index >= 0) & (index < layout.doc_length[:, tf.newaxis])


def _window_number(layout: WindowLayout):
    """Each window's number within its example (0 for the first)."""
    return tf.range(tf.size(layout.example_index)) - tf.gather(_first_window(layout), layout.example_index)


def _first_window(layout: WindowLayout):
    """Index of each example's first window [examples]."""
    return tf.cumsum(layout.num_windows, exclusive=True)


def _max_context_window(token, layout: WindowLayout):
    """For context tokens [windows, k] of each window's example, the number of their max-context window.

    Every window but the last has the same length M and starts `stride` tokens after the
    previous one, so among them the score min(token - start, start + M - 1 - token) is
    highest at the two windows whose middle is nearest the token; the last window, shorter
    or not, is compared on its own, after them (first wins ties).
    """
    first = tf.gather(_first_window(layout), layout.example_index)
    final = first + tf.gather(layout.num_windows, layout.example_index) - 1
    full_length, final_start, final_length = (tf.gather(value, index)[:, tf.newaxis] for value, index in (
        (layout.doc_length, first), (layout.doc_start, final), (layout.doc_length, final)))
    stride = tf.maximum(tf.gather(layout.doc_start, tf.minimum(first + 1, final)), 1)[:, tf.newaxis]
    final_number = (final - first)[:, tf.newaxis]

    def score(start, length):  # 100 × google-research/bert's score, in integers: exact ties
        return 100 * tf.minimum(token - start, start + length - 1 - token) + length

    lowest = tf.maximum(_ceil_div(token - full_length + 1, stride), 0)  # the full windows holding the token
    highest = tf.minimum(tf.math.floordiv(token, stride), final_number - 1)
    middle = tf.math.floordiv(2 * token - full_length + 1, 2 * stride)  # the last one centred at or before the token
    before, after = (tf.minimum(tf.maximum(number, lowest), highest) for number in (middle, middle + 1))
    before_score, after_score = (score(number * stride, full_length) for number in (before, after))
    full = tf.where(after_score > before_score, after, before)
    full_score = tf.maximum(before_score, after_score)
    final_wins = (token >= final_start) & ((lowest > highest) | (score(final_start, final_length) > full_score))
    return tf.where(final_wins, final_number, full)


class SquadTextServing(TextServing):
    """A question and its context → doc-stride windows → the best span over all of them, as `bert-tf predict`
    finds it.

    Uses the spec's `doc_stride`, `max_query_length`, `max_answer_length`, `n_best_size`, `version_2` and
    `null_score_threshold`. Outputs: `start_logits`, `end_logits` per window, [batch, most windows, seq_length]
    (zeros for the windows a context does not have); `answer_score`, `answer_probability` [batch] as
    `best_answers`; `answer_text` (string [batch], "" for no answer) and `answer_char_start`, `answer_char_end`
    (int32 [batch], code-point offsets into the context, end exclusive, as Python `str` indices). No
    `answer_start`, `answer_end`: token positions name no window. `preprocess` gives the windows' ids,
    [batch, most windows, seq_length].
    """

    def _windows(self, question, context):
        """(ids [windows, seq_length] each, `SquadWindows`, code-point start and end of each context token)."""
        spec, vocabulary = self.spec, self.tokenizer.vocabulary
        question, context = (cut_text(text, spec.max_text_bytes) for text in (question, context))
        context_ids, starts, ends = self.tokenizer.tokenize_with_offsets(context, unit="UTF8_CHAR")
        windows = squad_windows(self.tokenizer.tokenize(question), context_ids, spec.seq_length,
                                spec.max_query_length, spec.doc_stride, vocabulary)
        return windows.model_inputs(spec.seq_length, vocabulary.pad_id), windows, starts, ends

    def preprocess(self, texts):
        ids, windows, _, _ = self._windows(*texts)
        return per_example(ids, windows.layout.num_windows)

    def outputs(self, texts):
        question, context = texts
        ids, windows, starts, ends = self._windows(question, context)
        logits = {name: tf.cast(value, tf.float32) for name, value in self.model(ids, training=False).items()}
        spec = self.spec
        answers = best_answers(logits["start_logits"], logits["end_logits"], windows.layout,
                               max_answer_length=spec.max_answer_length, n_best_size=spec.n_best_size,
                               version_2=spec.version_2, null_score_threshold=spec.null_score_threshold)
        char_start, char_end = answer_char_spans(answers, starts, ends)
        text = tf.strings.substr(context, char_start, char_end - char_start, unit="UTF8_CHAR")
        return {**per_example(logits, windows.layout.num_windows), "answer_text": text,
                "answer_char_start": char_start, "answer_char_end": char_end, "answer_score": answers.score,
                "answer_probability": answers.probability}
