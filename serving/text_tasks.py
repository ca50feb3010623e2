"""`TextSignatures`: the raw-text side of an exported SavedModel, per task, with bert_tf's exact tokenizer.

- classify, encoder/pretrainer: `BertPreprocessor` (pairs cut by the task's `truncation`, as in training);
  classifiers pad each batch only to its longest text (their outputs do not depend on
  padding), the others to `seq_length`.
- ner: the text is split into words at whitespace (as Python's `str.split()` does, which
  `pipelines.prediction` uses), each word into pieces, and the words into windows of
  `seq_length` tokens as `bert-tf predict` does (`bert_tf.tasks.ner`); a word's tag is
  its first piece's. The per-token outputs are per window, [batch, most windows,
  seq_length, ...] (zeros and "" for the windows a text does not have). Extra outputs:
  `words` and `word_tags` (string [batch, most words], "" only after the last word).
- squad: the question and its context become doc-stride windows and the answer is the
  best span over all of them, as `bert-tf predict` finds it (`bert_tf.tasks.squad`,
  the directory's `doc_stride`, `max_query_length`, `max_answer_length`, `n_best_size`,
  `version_2`, `null_score_threshold`). `start_logits`, `end_logits` are per window,
  [batch, most windows, seq_length] (zeros for the windows a context does not have);
  `answer_score`, `answer_probability` [batch] as `pipelines.squad_postprocess`; extra
  outputs `answer_text` (string [batch], "" for no answer) and `answer_char_start`,
  `answer_char_end` (int32 [batch], code-point offsets into the context, end exclusive,
  as Python `str` indices). No `answer_start`, `answer_end`: token positions name no window.
`preprocess` gives the id tensors each task's text path feeds the model (ner, squad: [batch,
most windows, seq_length], rows of zeros for the windows a text or context does not have).

Example:
    >>> signatures = TextSignatures(spec)                    # doctest: +SKIP
    >>> signatures.outputs([tf.constant(["EU rejects German call"])])["word_tags"]  # doctest: +SKIP
    <tf.Tensor: shape=(1, 4), dtype=string, numpy=array([[b'B-ORG', b'O', b'B-MISC', b'O']], dtype=object)>
"""

from __future__ import annotations

import tensorflow as tf

from bert_tf.tasks import ner, squad
from bert_tf.tasks.classification import text_packer
from bert_tf.tasks.text_budget import cut_text
from bert_tf.tokenizer import BertTokenizer
from serving.signatures import ServingSpec, task_outputs


class TextSignatures:
    """Text → ids → outputs for `spec`'s task; call `outputs` and `preprocess` inside a `tf.function`."""

    def __init__(self, spec: ServingSpec):
        self.spec = spec
        self.tokenizer = BertTokenizer(spec.vocabulary)
        self.fixed = text_packer(self.tokenizer, spec.task_spec, padding="max_length")
        self.longest = text_packer(self.tokenizer, spec.task_spec, padding="longest")

    def preprocess(self, texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """The three id tensors, int32 [batch, seq_length] (ner, squad: [batch, most windows, seq_length])."""
        if self.spec.task == "ner":
            ids, windows = self._ner_windows(texts[0])
            return _per_example(ids, windows.input_word_ids.row_lengths())
        if self.spec.task == "squad":
            ids, windows, _, _ = self._squad_windows(*texts)
            return _per_example(ids, windows.layout.num_windows)
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

    def _ner_windows(self, text):
        """(ids [windows, seq_length] each, the `WordWindows` of the text's words)."""
        windows = ner.word_windows(self.tokenizer.tokenize(self._words(text)), self.spec.seq_length,
                                   self.spec.vocabulary)
        return ner.window_inputs(windows, self.spec.seq_length, self.spec.vocabulary.pad_id), windows

    def _ner_outputs(self, text):
        ids, windows = self._ner_windows(text)
        outputs = _per_example(task_outputs(self.spec, ids), windows.input_word_ids.row_lengths())
        return {**outputs, "words": self._words(text).to_tensor(""),
                "word_tags": ner.word_values(outputs["tags"], windows).to_tensor("")}

    def _words(self, text):
        return ner.split_words(cut_text(text, self.spec.task_spec.max_text_bytes))

    def _squad_windows(self, question, context):
        """(ids [windows, seq_length] each, `SquadWindows`, code-point start and end of each context token)."""
        settings = self.spec.task_spec
        question, context = (cut_text(text, settings.max_text_bytes) for text in (question, context))
        context_ids, starts, ends = self.tokenizer.tokenize_with_offsets(context, unit="UTF8_CHAR")
        windows = squad.squad_windows(self.tokenizer.tokenize(question), context_ids, self.spec.seq_length,
                                      settings.max_query_length, settings.doc_stride, self.spec.vocabulary)
        return windows.model_inputs(self.spec.seq_length, self.spec.vocabulary.pad_id), windows, starts, ends

    def _squad_outputs(self, question, context):
        ids, windows, starts, ends = self._squad_windows(question, context)
        logits = {name: tf.cast(value, tf.float32) for name, value in self.spec.model(ids, training=False).items()}
        settings = self.spec.task_spec
        answers = squad.best_answers(logits["start_logits"], logits["end_logits"], windows.layout,
                                     max_answer_length=settings.max_answer_length, n_best_size=settings.n_best_size,
                                     version_2=settings.version_2, null_score_threshold=settings.null_score_threshold)
        char_start, char_end = squad.answer_char_spans(answers, starts, ends)
        text = tf.strings.substr(context, char_start, char_end - char_start, unit="UTF8_CHAR")
        return {**_per_example(logits, windows.layout.num_windows), "answer_text": text,
                "answer_char_start": char_start, "answer_char_end": char_end, "answer_score": answers.score,
                "answer_probability": answers.probability}


def _per_example(values: dict[str, tf.Tensor], num_windows) -> dict[str, tf.Tensor]:
    """Per-window values [windows, ...] → [batch, most windows, ...], zeros where an example has fewer."""
    return {name: tf.RaggedTensor.from_row_lengths(value, num_windows).to_tensor() for name, value in values.items()}


def _at_least_two_columns(ids: dict[str, tf.Tensor], pad_id: int) -> dict[str, tf.Tensor]:
    """Pads ids to 2 columns where a batch is narrower: only an empty batch is ([batch 0, 0]);
    the encoder reads column 0 ([CLS]) and fails on a tensor without it."""
    missing = tf.maximum(0, 2 - tf.shape(ids["input_word_ids"])[1])
    return {
        name: tf.pad(value, [[0, 0], [0, missing]], constant_values=pad_id if name == "input_word_ids" else 0)
        for name, value in ids.items()
    }
