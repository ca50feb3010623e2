"""Predictions of a fine-tuned model directory, as plain Python values (for the CLI, scripts and tests).

Load once with `Predictor(model_dir)` and call the method of its task, or use the
one-call functions:
- classification: `{"label", "probability", "probabilities": {label: p}}` per text
  (multi-label: `{"labels", "probabilities"}`);
- NER: `{"entities": [{"type", "text", "start", "end", "score"}, ...], "words", "tags"}` per text
  (`recognize`; words split as BERT's basic tokenizer splits them, entities grouped as Hugging
  Face's `aggregation_strategy="simple"`, character offsets), or `[(word, tag), ...]` (`tag`);
- SQuAD: `{"text", "start", "end", "score", "probability"}` per question (character offsets
  into its context; "" for no answer).

Example:
    >>> predict_texts("sst2_model", ["a gripping, funny film", "dull and far too long"])  # doctest: +SKIP
    [{'label': '1', 'probability': 0.93, ...}, {'label': '0', 'probability': 0.88, ...}]
    >>> predict_texts("conll_model", ["EU rejects German call."])  # doctest: +SKIP
    [[('EU', 'B-ORG'), ('rejects', 'O'), ('German', 'B-MISC'), ('call', 'O'), ('.', 'O')]]
    >>> Predictor("conll_model").recognize(["EU rejects German call."])[0]["entities"]  # doctest: +SKIP
    [{'type': 'ORG', 'text': 'EU', 'start': 0, 'end': 2, 'score': 0.99}, {'type': 'MISC', 'text': 'German', ...}]
    >>> answer_questions("squad_model", ["Who wrote it?"], ["It was written by Mary Shelley."])  # doctest: +SKIP
    [{'text': 'Mary Shelley', 'start': 18, 'end': 30, 'score': 9.1, 'probability': 0.71}]
"""

from __future__ import annotations

from typing import Sequence

import bert_tf
from bert_tf.tasks.registry import task_from_directory


class Predictor:
    """A fine-tuned model directory, loaded, with its task (`task_name`: "classify", "ner" or "squad")."""

    def __init__(self, model_dir, batch_size: int = 32):
        directory = bert_tf.load_model_directory(model_dir)
        self.model = directory.model
        self.task = task_from_directory(directory)
        self.batch_size = batch_size

    @property
    def task_name(self) -> str:
        return self.task.name

    def _require(self, *task_names: str) -> None:
        if self.task_name not in task_names:
            raise ValueError(f"This is a {self.task_name!r} model; this prediction needs a {' or '.join(task_names)} model.")

    def _predict(self, examples) -> list:
        return self.task.predict(self.model, self.task.prepare(examples, training=False), self.batch_size)

    def predict(self, inputs: list[dict]) -> list:
        """The task's prediction of each example, given as its input fields (`FinetuneTask.examples_from_inputs`):
        `{"text"}` (and `"text_b"` for pair classifiers), or `{"question", "context"}`."""
        return self._predict(self.task.examples_from_inputs(inputs))

    def classify(self, texts: Sequence[str], text_pairs: Sequence[str] | None = None) -> list[dict]:
        """The class (or classes) of each text, or of each (text, second text) pair."""
        self._require("classify")
        return self._predict(self.task.examples_from_texts(texts, text_pairs))

    def recognize(self, texts: Sequence[str]) -> list[dict]:
        """The entities of each text, and the tag of each of its words."""
        self._require("ner")
        return self._predict(self.task.examples_from_texts(texts))

    def tag(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        """The entity tag of each word of each text."""
        return [list(zip(result["words"], result["tags"])) for result in self.recognize(texts)]

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[dict]:
        """The answer span of each question in its context."""
        self._require("squad")
        return self._predict(self.task.examples_from_texts(questions, contexts))

    def predict_texts(self, texts: Sequence[str], text_pairs: Sequence[str] | None = None) -> list:
        """Classes (classification models) or word tags (NER models) of texts."""
        self._require("classify", "ner")
        if self.task_name == "ner":
            if text_pairs is not None:
                raise ValueError("NER models tag single texts; they take no second text.")
            return self.tag(texts)
        return self.classify(texts, text_pairs)


def predict_texts(model_dir, texts: Sequence[str], text_pairs: Sequence[str] | None = None) -> list:
    """`Predictor(model_dir).predict_texts(texts, text_pairs)`."""
    return Predictor(model_dir).predict_texts(texts, text_pairs)


def answer_questions(model_dir, questions: Sequence[str], contexts: Sequence[str]) -> list[dict]:
    """`Predictor(model_dir).answer(questions, contexts)`."""
    return Predictor(model_dir).answer(questions, contexts)
