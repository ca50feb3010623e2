"""`ServerPredictor`: predictions of a model served by TF Serving (or `bert-tf serve`), over gRPC,
as the same plain Python values as `bert_tf.prediction.Predictor` gives for a model directory.

The model must be a bert-tf export with text signatures (`serving.export.saved_model`, not
`--ids-only`): raw text goes in and the server tokenizes. Its `model_info` signature says
the task, whose `served_predictions` turns the answers into plain values (`bert_tf.tasks`):
- classify: `{"label", "probability", "probabilities": {label: p}}` per text, or for a
  multi-label model `{"labels": [labels with p ≥ its multi_label_threshold], "probabilities": {label: p}}`;
- ner: `{"entities": [{"type", "text", "start", "end", "score"}, ...], "words", "tags"}` per text
  (`recognize`), or `[(word, tag), ...]` (`tag`); words split as BERT's basic tokenizer splits them;
- squad: `{"text", "start", "end", "score", "probability"}` per question (character
  offsets into its context; "" for no answer), the best span over every window of the
  context, as the local pipeline finds it (`bert_tf.tasks.squad.ops`).
- rerank: `{"score"}` per (query, document) pair, the pair's logit (`predict` sends each
  example's document as a list of one, as the signature takes a query's documents).
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

from bert_tf.tasks.base import served_text
from bert_tf.tasks.registry import task_named
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
        self.task = task_named(self.task_name)  # its `served_predictions` decodes the answers
        inputs = signatures["serving_default"]["inputs"]
        self.text_inputs = sorted(inputs)
        # The inputs of rank 2 (a reranker's documents, [batch, documents]) take each example's text as a list of one.
        self.listed_inputs = {name for name, info in inputs.items()
                              if len(info.get("tensor_shape", {}).get("dim", [])) == 2}
        if "input_word_ids" in self.text_inputs:
            why = ("an int8 (TFLite) export, which cannot window long texts; serve the float32 or bf16 export"
                   if self.info.get("quantization") == "int8"
                   else "exported with --ids-only; export it with text signatures")
            raise ValueError(f"Model {model_name!r} takes token ids ({why} to predict from text).")

    def predict(self, inputs: list[dict]) -> list:
        """The prediction of each example given as its input fields (`{"text"}`, `{"text", "text_b"}` or
        `{"question", "context"}`), as `bert_tf.prediction.Predictor.predict` gives it (the task's
        `served_predictions`; for an embedding model, each example's outputs as lists: `{"embedding": [...]}`). An
        input the signature takes as [batch, n] (a reranker's `document`: `{"query", "document"}`, one pair per
        example) is sent as [batch, 1]."""
        fields = sorted({name for example in inputs for name in example})
        extra = [name for name in fields if name not in self.text_inputs]
        missing = next((name for name in self.text_inputs for example in inputs if name not in example), None)
        if extra or missing:
            raise ValueError(f"Model {self.model_name!r} reads {' and '.join(self.text_inputs)} per example; "
                             + (f"it takes no {', '.join(extra)}." if extra else f"{missing} is missing."))
        return self._served({name: [[example[name]] if name in self.listed_inputs else example[name]
                                    for example in inputs] for name in fields})

    def classify(self, texts: Sequence[str], text_pairs: Sequence[str] | None = None) -> list[dict]:
        """The class (or classes) of each text, or of each (text, second text) pair."""
        self._require("classify")
        inputs = {"text": list(texts)}
        if self.text_inputs == ["text", "text_b"]:
            if text_pairs is None or len(text_pairs) != len(texts):
                raise ValueError(f"Model {self.model_name!r} classifies text pairs: give a second text for each text.")
            inputs["text_b"] = list(text_pairs)
        elif text_pairs is not None:
            raise ValueError(f"Model {self.model_name!r} classifies single texts; it takes no second text.")
        return self._served(inputs)

    def recognize(self, texts: Sequence[str]) -> list[dict]:
        """The entities of each text, and the tag of each of its words."""
        self._require("ner")
        return self._served({"text": list(texts)})

    def tag(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        """The entity tag of each word of each text."""
        return [list(zip(result["words"], result["tags"])) for result in self.recognize(texts)]

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[dict]:
        """The answer span of each question in its context."""
        self._require("squad")
        if len(questions) != len(contexts):
            raise ValueError(f"Got {len(questions)} questions but {len(contexts)} contexts.")
        return self._served({"question": list(questions), "context": list(contexts)})

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

    def _served(self, inputs: dict[str, list]) -> list:
        """The task's plain predictions of the served model's answer to `inputs` (columns of the text inputs)."""
        with self._one_line_errors():
            outputs = self.client.predict(inputs, output_filter=self.task.served_outputs)
        try:
            return self.task.served_predictions(outputs, self.info)
        except ValueError as error:
            raise ValueError(f"Model {self.model_name!r}: {error}") from None

    def _require(self, task: str) -> None:
        if self.task_name != task:
            raise ValueError(f"Model {self.model_name!r} is a {self.task_name!r} model; this prediction needs a "
                             f"{task!r} model.")


def _plain(value):
    """A `model_info` value as plain Python: text as str, a vector as a list, a number as int, float or bool."""
    if isinstance(value, np.ndarray):
        return [_plain(item) for item in value]
    return served_text(value) if isinstance(value, bytes) else np.asarray(value).item()
