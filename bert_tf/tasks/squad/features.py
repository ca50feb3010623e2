"""SQuAD features: question + context windows as BERT sequence pairs, answers as token positions.

The windows are `bert_tf.tasks.squad.ops.squad_windows`'s, the same the SavedModel makes:
each sequence is `[CLS] question [SEP] context window [SEP]` (type ids 0, then 1 from the
window on); the question keeps its first `max_query_length` tokens; a context too long for
the rest of `seq_length` is split into overlapping windows whose starts are `doc_stride`
tokens apart (google-research/bert `run_squad.py`).

Answers are found by character offsets: the context is tokenized once with
`BertTokenizer.tokenize_with_offsets(unit="UTF8_CHAR")`, which gives every token's span
in the original text (Python `str` indices, accents and case intact). An answer's tokens
are those overlapping its characters, and a token span maps back to the text
`context[start of first token:end of last token]` — exactly the answer text whenever the
answer begins and ends on token boundaries (every answer of the shared SQuAD subset does;
see tests/test_squad_shared_data.py). A window that does not hold the whole answer, and
an unanswerable question (SQuAD 2.0), point at `[CLS]` (position 0).

The labels are found in Python per window (documented choice: they need the token offsets;
it runs once per data set).

Example:
    >>> features = squad_features(examples, tokenizer, seq_length=384, max_query_length=64,  # doctest: +SKIP
    ...                           doc_stride=128, with_labels=True)
    >>> features.start_positions[:3], features.windows[0]  # doctest: +SKIP
    (array([ 83, 101,   0]), Window(example_index=0, doc_start=0, doc_length=163, context_offset=14))
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_tf.tasks.bucketing import rows_dataset
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.squad.data import Answer, SquadExample
from bert_tf.tasks.squad.ops import WindowLayout, squad_windows
from bert_tf.tasks.text_budget import cut_text
from bert_tf.tokenizer import BertTokenizer

TEXTS_PER_CALL = 512  # contexts or questions tokenized per graph call


@dataclasses.dataclass
class ContextTokens:
    """A context's token ids and each token's character span [start, end) in the context."""

    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


@dataclasses.dataclass(frozen=True)
class Window:
    """Which context tokens one sequence holds, and where they sit in it."""

    example_index: int
    doc_start: int  # index of the window's first context token
    doc_length: int  # context tokens in the window
    context_offset: int  # position of the window's first context token in the sequence

    def context_token(self, position: int) -> int | None:
        """The context token at sequence `position`, or None for the question and special tokens."""
        index = position - self.context_offset
        return self.doc_start + index if 0 <= index < self.doc_length else None


@dataclasses.dataclass
class SquadFeatures:
    input_word_ids: list[np.ndarray]  # per window, int32 [length]
    input_type_ids: list[np.ndarray]
    windows: list[Window]
    layout: WindowLayout  # the windows as arrays, for `bert_tf.tasks.squad.ops.best_answers`
    contexts: list[ContextTokens]  # per example
    start_positions: np.ndarray | None  # per window: answer start/end positions (0: no answer here)
    end_positions: np.ndarray | None

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(ids) for ids in self.input_word_ids], dtype=np.int64)

    def dataset(self) -> tf.data.Dataset:
        """One element per window: features ({name: int32 [length]}), and {start_logits, end_logits} positions."""
        lengths = self.lengths

        def ragged(rows):
            return tf.RaggedTensor.from_row_lengths(np.concatenate(rows).astype(np.int32), lengths)

        ids = ragged(self.input_word_ids)
        features = {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": ragged(self.input_type_ids)}
        if self.start_positions is None:
            return rows_dataset(features)
        labels = {"start_logits": self.start_positions.astype(np.int32), "end_logits": self.end_positions.astype(np.int32)}
        return rows_dataset((features, labels))


def _tokenize(texts: Sequence[str], tokenizer: BertTokenizer, with_offsets: bool, max_text_bytes: int):
    """Token ids (and character offsets) of each text cut to `max_text_bytes`, tokenized in batches in the graph."""
    results = []
    for start in range(0, len(texts), TEXTS_PER_CALL):
        batch = cut_text(tf.constant(list(texts[start:start + TEXTS_PER_CALL]), tf.string), max_text_bytes)
        if with_offsets:
            ids, starts, ends = tokenizer.tokenize_with_offsets(batch, unit="UTF8_CHAR")
            results.extend(ContextTokens(np.array(i, np.int32), np.array(s, np.int64), np.array(e, np.int64))
                           for i, s, e in zip(ids.to_list(), starts.to_list(), ends.to_list()))
        else:
            results.extend(tokenizer.tokenize(batch).to_list())
    return results


def tokenize_contexts(contexts: Sequence[str], tokenizer: BertTokenizer,
                      max_text_bytes: int = TaskSpec.max_text_bytes) -> list[ContextTokens]:
    """Each context's tokens with character offsets (each distinct context is tokenized once)."""
    unique = list(dict.fromkeys(contexts))
    tokens = dict(zip(unique, _tokenize(unique, tokenizer, with_offsets=True, max_text_bytes=max_text_bytes)))
    return [tokens[context] for context in contexts]


def answer_token_span(tokens: ContextTokens, answer: Answer) -> tuple[int, int]:
    """The first and last context token overlapping the answer's characters."""
    first = int(np.searchsorted(tokens.ends, answer.start, side="right"))
    last = int(np.searchsorted(tokens.starts, answer.end, side="left")) - 1
    if first > last:
        raise ValueError(f"answer {answer.text!r} at character {answer.start} covers no token of the context.")
    return first, last


def token_span_text(context: str, tokens: ContextTokens, first: int, last: int) -> str:
    """The context text from the start of token `first` to the end of token `last`."""
    return context[tokens.starts[first]:tokens.ends[last]]


def squad_features(
    examples: Sequence[SquadExample],
    tokenizer: BertTokenizer,
    seq_length: int,
    max_query_length: int,
    doc_stride: int,
    with_labels: bool,
    max_text_bytes: int = TaskSpec.max_text_bytes,
) -> SquadFeatures:
    """The windows of every question (its text and context cut to `max_text_bytes` first); with labels,
    the first answer's positions in each window."""
    contexts = tokenize_contexts([example.context for example in examples], tokenizer, max_text_bytes)
    questions = _tokenize([example.question for example in examples], tokenizer, with_offsets=False,
                          max_text_bytes=max_text_bytes)
    windows = squad_windows(_ragged(questions), _ragged([context.ids for context in contexts]), seq_length,
                            max_query_length, doc_stride, tokenizer.vocabulary)
    layout = WindowLayout(*(value.numpy() for value in windows.layout))
    answers = [_labelled_span(example, context) if with_labels else None
               for example, context in zip(examples, contexts)]
    window_list = [Window(*fields) for fields in zip(layout.example_index.tolist(), layout.doc_start.tolist(),
                                                     layout.doc_length.tolist(), layout.context_offset.tolist())]
    starts, ends = [], []
    for window in window_list:
        answer = answers[window.example_index]
        end = window.doc_start + window.doc_length
        inside = answer is not None and window.doc_start <= answer[0] and answer[1] < end
        offset = window.context_offset - window.doc_start
        starts.append(answer[0] + offset if inside else 0)
        ends.append(answer[1] + offset if inside else 0)
    labels = (np.array(starts, np.int64), np.array(ends, np.int64)) if with_labels else (None, None)
    return SquadFeatures(_rows(windows.input_word_ids), _rows(windows.input_type_ids), window_list, layout, contexts,
                         *labels)


def _labelled_span(example: SquadExample, context: ContextTokens) -> tuple[int, int] | None:
    """The first answer's first and last context token; None for an unanswerable question."""
    if example.is_impossible:
        return None
    if not example.answers:
        raise ValueError(f"Question {example.question_id!r} has no answer to train on.")
    try:
        return answer_token_span(context, example.answers[0])
    except ValueError as error:
        raise ValueError(f"Question {example.question_id!r}: {error}") from None


def _ragged(rows) -> tf.RaggedTensor:
    """Token id rows as an int32 RaggedTensor [rows, (tokens)]."""
    values = np.concatenate([np.asarray(row, np.int32) for row in rows]) if rows else np.zeros(0, np.int32)
    return tf.RaggedTensor.from_row_lengths(values, np.array([len(row) for row in rows], np.int64))


def _rows(ragged: tf.RaggedTensor) -> list[np.ndarray]:
    """The rows of a RaggedTensor as numpy arrays."""
    values, splits = ragged.values.numpy(), ragged.row_splits.numpy()
    return [values[start:end] for start, end in zip(splits[:-1], splits[1:])]
