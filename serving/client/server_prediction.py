"""`ServerPredictor`: predictions of a model served by TF Serving (or `bert-tf serve`), over gRPC,
as the same plain Python values as `pipelines.prediction.Predictor` gives for a model directory.

The model must be a bert-tf export with text signatures (`serving.export.saved_model`, not
`--ids-only`): raw text goes in and the server tokenizes. Its `model_info` signature says
the task:
- classify: `{"label", "probability", "probabilities": {label: p}}` per text, or for a
  multi-label model `{"labels": [labels with p ≥ its multi_label_threshold], "probabilities": {label: p}}`;
- ner: `{"entities": [{"type", "text", "start", "end", "score"}, ...], "words", "tags"}` per text
  (`recognize`), or `[(word, tag), ...]` (`tag`); words split as BERT's basic tokenizer splits them;
- squad: `{"text", "start", "end", "score", "probability"}` per question (character
  offsets into its context; "" for no answer), the best span over every window of the
  context, as the local pipeline finds it (`bert_tf.tasks.squad.ops`).
A failed call raises one line naming the server, the model and what to check
(`serving.client.grpc_client.one_line_error`): ConnectionError when no server answers,
ValueError when it refuses (e.g. an unknown model name).

Example:
    >>> predictor = ServerPredictor("127.0.0.1:8500", "sst2")  # doctest: +SKIP
    >>> predictor.task_name, predictor.classify(["a gripping film"])  # doctest: +SKIP
    ('classify', [{'label': 'positive', 'probability': 0.93, 'probabilities': {...}}])
"""

from __future__ import annotations

import contextlib
from typing import Sequence

import grpc
import numpy as np

from serving.client.grpc_client import GrpcClient, one_line_error
from serving.protocol import DEFAULT_MAX_BATCH_SIZE


class ServerPredictor:
    """Model `model_name` at `target` ("host:port", gRPC); reads its `model_info` once."""

    def __init__(self, target: str, model_name: str, timeout_s: float = 30.0):
        self.target = target
        self.model_name = model_name
        # Requests of at most the server's default batch limit (TF Serving's batching has one too).
        self.client = GrpcClient(target, model_name=model_name, timeout_s=timeout_s,
                                 max_batch_size=DEFAULT_MAX_BATCH_SIZE)
        with self._one_line_errors():
            signatures = self.client.metadata()
        if "model_info" not in signatures:
            raise ValueError(f"Model {model_name!r} at {target} is not a bert-tf export (no model_info signature).")
        with self._one_line_errors():
            info = GrpcClient(target, model_name=model_name, signature_name="model_info", timeout_s=timeout_s).predict(
                {"request": [""]})
        self.info = {name: _plain(values[0]) for name, values in info.items()}  # the export's settings
        self.task_name = self.info["task"]
        self.text_inputs = sorted(signatures["serving_default"]["inputs"])
        if "input_word_ids" in self.text_inputs:
            why = ("an int8 (TFLite) export, which cannot window long texts; serve the float32 or bf16 export"
                   if self.info.get("quantization") == "int8"
                   else "exported with --ids-only; export it with text signatures")
            raise ValueError(f"Model {model_name!r} takes token ids ({why} to predict from text).")
        self.classifier_mode = self.info.get("classifier_mode", "")
        self.label_names = self.info.get("label_names", [])
        self.multi_label_threshold = self.info.get("multi_label_threshold")

    def predict(self, inputs: list[dict]) -> list:
        """The prediction of each example given as its input fields (`{"text"}`, `{"text", "text_b"}` or
        `{"question", "context"}`), as `pipelines.prediction.Predictor.predict` gives it; for a task without its own
        method here (embed), each example's outputs as lists (`{"embedding": [...]}`)."""
        fields = sorted({name for example in inputs for name in example})
        columns = {name: [example.get(name) for example in inputs] for name in fields}
        by_task = {"classify": lambda: self.classify(columns["text"], columns.get("text_b")),
                   "ner": lambda: self.recognize(columns["text"]),
                   "squad": lambda: self.answer(columns["question"], columns["context"])}
        if self.task_name in by_task:  # each says what it misses or takes no more of
            return by_task[self.task_name]()
        if fields != self.text_inputs or any(len(example) != len(fields) for example in inputs):
            raise ValueError(f"Model {self.model_name!r} reads {', '.join(self.text_inputs)} per example; got "
                             f"{', '.join(fields) or 'nothing'}.")
        with self._one_line_errors():
            outputs = self.client.predict(columns)
        return [{name: np.asarray(values[row]).tolist() for name, values in outputs.items()} for row in range(len(inputs))]

    def classify(self, texts: Sequence[str], text_pairs: Sequence[str] | None = None) -> list[dict]:
        """The class (or classes) of each text, or of each (text, second text) pair."""
        self._require("classify")
        if self.classifier_mode == "regression":
            raise ValueError(f"Model {self.model_name!r} is a regression model; it has no classes.")
        inputs = {"text": list(texts)}
        if self.text_inputs == ["text", "text_b"]:
            if text_pairs is None or len(text_pairs) != len(texts):
                raise ValueError(f"Model {self.model_name!r} classifies text pairs: give a second text for each text.")
            inputs["text_b"] = list(text_pairs)
        elif text_pairs is not None:
            raise ValueError(f"Model {self.model_name!r} classifies single texts; it takes no second text.")
        with self._one_line_errors():
            rows = self.client.predict(inputs, output_filter=["probabilities"])["probabilities"].tolist()
        results = []
        for row in rows:
            probabilities = dict(zip(self.label_names, row))
            if self.classifier_mode == "multi_label":
                results.append({"labels": [name for name, p in probabilities.items() if p >= self.multi_label_threshold],
                                "probabilities": probabilities})
            else:
                best = int(np.argmax(row))
                results.append({"label": self.label_names[best], "probability": row[best],
                                "probabilities": probabilities})
        return results

    def recognize(self, texts: Sequence[str]) -> list[dict]:
        """The entities of each text, and the tag of each of its words."""
        self._require("ner")
        with self._one_line_errors():
            outputs = self.client.predict({"text": list(texts)}, output_filter=[
                "words", "word_tags", "entity_type", "entity_text", "entity_char_start", "entity_char_end",
                "entity_score"])
        results = []
        for row, words in enumerate(outputs["words"]):
            count = sum(1 for word in words if word)  # "" only after the last word
            entities = [{"type": _text(kind), "text": _text(text), "start": int(start), "end": int(end),
                         "score": float(score)}
                        for kind, text, start, end, score in zip(*(outputs[name][row] for name in (
                            "entity_type", "entity_text", "entity_char_start", "entity_char_end", "entity_score")))
                        if kind]
            results.append({"entities": entities, "words": [_text(word) for word in words[:count]],
                            "tags": [_text(tag) for tag in outputs["word_tags"][row][:count]]})
        return results

    def tag(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        """The entity tag of each word of each text."""
        return [list(zip(result["words"], result["tags"])) for result in self.recognize(texts)]

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[dict]:
        """The answer span of each question in its context."""
        self._require("squad")
        if len(questions) != len(contexts):
            raise ValueError(f"Got {len(questions)} questions but {len(contexts)} contexts.")
        with self._one_line_errors():
            outputs = self.client.predict({"question": list(questions), "context": list(contexts)}, output_filter=[
                "answer_text", "answer_char_start", "answer_char_end", "answer_score", "answer_probability"])
        return [{"text": _text(text), "start": int(start), "end": int(end), "score": float(score),
                 "probability": float(probability)}
                for text, start, end, score, probability in zip(
                    outputs["answer_text"], outputs["answer_char_start"], outputs["answer_char_end"],
                    outputs["answer_score"], outputs["answer_probability"])]

    def predict_texts(self, texts: Sequence[str], text_pairs: Sequence[str] | None = None) -> list:
        """Classes (classify) or tagged words (ner) of texts."""
        if self.task_name == "ner":
            if text_pairs is not None:
                raise ValueError("An NER model takes no second text.")
            return self.tag(texts)
        return self.classify(texts, text_pairs)

    def close(self) -> None:
        self.client.close()

    @contextlib.contextmanager
    def _one_line_errors(self):
        try:
            yield
        except grpc.RpcError as error:
            raise one_line_error(error, self.target, self.model_name) from None

    def _require(self, task: str) -> None:
        if self.task_name != task:
            raise ValueError(f"Model {self.model_name!r} is a {self.task_name!r} model; this prediction needs a "
                             f"{task!r} model.")


def _text(value) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _plain(value):
    """A `model_info` value as plain Python: text as str, a vector as a list, a number as int, float or bool."""
    if isinstance(value, np.ndarray):
        return [_plain(item) for item in value]
    return _text(value) if isinstance(value, bytes) else np.asarray(value).item()
