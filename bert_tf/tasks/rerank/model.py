"""`BertReranker`: a cross-encoder that scores how well a document answers a query, for re-ordering a first stage's
candidates (transformers' `BertForSequenceClassification` with `num_labels=1`, sentence-transformers' `CrossEncoder`).

The query and the document are read together as one input, `[CLS] query [SEP] document [SEP]` (the document in
segment 1), and the head maps the encoder's `pooled_output` through dropout and one dense layer to one logit: the
pair's score, higher for a better match (a probability of relevance through a sigmoid, for a model trained with
binary cross-entropy).

Shapes:
- the standard inputs, a dict of `input_word_ids`, `input_mask`, `input_type_ids`, int32 [batch, seq] → the
  scores, float32 [batch] (one logit per pair, the last axis of the dense layer squeezed away);
- a group of pairs per example, ids [batch, pairs, seq] (what training on a query with its positive and negatives
  feeds it) → float32 [batch, pairs], every pair through the same weights.

A model directory of a reranker (`bert_tf.save_pretrained`, `bert-tf finetune --task rerank --out DIR`) is the
usual one: `model.keras` (this class, package `bert_tf`), `vocab.txt` and `bert_tf.json`, whose `task` is a
`TaskSpec` of task `"rerank"` (its `seq_length`, `truncation` of the pair, and the rerank settings); the raw-text
inputs are named `query` and `document` (`TaskSpec.text_inputs`). `bert_tf.load_model_directory(DIR).model` is a
`BertReranker` that reads raw text.

Example:
    >>> import numpy as np, bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = build_reranker(encoder)
    >>> ids = {"input_word_ids": np.array([[2, 7, 3, 9, 3], [2, 8, 3, 5, 3]]), "input_mask": np.ones((2, 5), int),
    ...        "input_type_ids": np.array([[0, 0, 0, 1, 1]] * 2)}
    >>> tuple(model(ids).shape)
    (2,)
    >>> grouped = {name: np.stack([value, value]) for name, value in ids.items()}  # 2 queries, 2 documents each
    >>> tuple(model(grouped).shape)
    (2, 2)
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from bert_tf.model import BertModel
from bert_tf.tasks.task_model import BertTaskModel


def build_reranker(encoder: BertModel, dropout: float = 0.1) -> "BertReranker":
    """A `BertReranker` on `encoder` (its head new, drawn with the encoder's initializer)."""
    return BertReranker(encoder, dropout=dropout)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertReranker(BertTaskModel):
    """Dropout and a dense layer of one output (`classifier`, float32) on the pair's `pooled_output`; the logit
    squeezed to one score per pair (module docstring)."""

    text_padding = "longest"  # the pooled output does not depend on padding: a batch is padded to its longest pair

    def __init__(self, encoder: BertModel, dropout: float = 0.1, **kwargs):
        super().__init__(encoder, **kwargs)
        self.add_labelled_head(1, None, dropout, "outputs", (None, encoder.config.hidden_size))
        self.built = True

    def head(self, features, inputs, training=None):
        return tf.squeeze(self.classifier(self.dropout(features, training=training)), -1)

    def score(self, query: str, documents, batch_size: int = 32) -> np.ndarray:
        """The score of each of `documents` for `query`: float32 NumPy [len(documents)], the logits (a sigmoid of them
        gives sentence-transformers' `CrossEncoder.predict` of a one-label model), in batches of `batch_size` pairs."""
        if not isinstance(query, str) or isinstance(documents, str) or not all(isinstance(document, str)
                                                                              for document in documents):
            raise ValueError("BertReranker.score takes a query (a text) and a list of documents (texts).")
        if len(documents) == 0:
            return np.zeros(0, np.float32)
        return np.asarray(self.predict(([query] * len(documents), list(documents)), batch_size=batch_size,
                                       verbose=0), np.float32)

    def rerank(self, query: str, documents, top_k: int | None = None, batch_size: int = 32) -> list[dict]:
        """`documents` ordered by their scores for `query`, best first, the first `top_k` (None: all):
        `[{"corpus_id": index in documents, "score": logit}, ...]`, as sentence-transformers' `CrossEncoder.rank`
        (its scores before the sigmoid).

        Example:
            >>> reranker = bert_tf.load_model_directory("reranker/").model  # doctest: +SKIP
            >>> documents = ["Pandas live in China.", "Paris is in France."]
            >>> reranker.rerank("Where do pandas live?", documents, top_k=1)  # doctest: +SKIP
            [{'corpus_id': 0, 'score': 4.21}]
        """
        scores = self.score(query, documents, batch_size)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [{"corpus_id": int(index), "score": float(scores[index])} for index in order]

    def default_loss(self) -> keras.losses.Loss:
        """Binary cross-entropy of the logits against 0/1 (or soft) labels of each pair."""
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def default_metrics(self) -> list:
        """None: a reranker is scored by the rankings it makes on a dev set (nDCG@10), not per batch."""
        return []

    def probabilities(self, outputs):
        """`predict` on texts gives the scores themselves (logits): the ranking is theirs."""
        return np.asarray(outputs, np.float32)

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout.rate}
