"""`RerankTextServing`: the raw-text signature of a pair scorer (a reranker): a query and its documents in, one score
per document out.

A reranker reads `[CLS] query [SEP] document [SEP]` and gives one logit, its `score` output
(`Task.serving_outputs`, from token ids: one pair per row). Its exported `serving_default` takes the query
(string [batch]: the first text input, `query`) and the documents to score for it (string [batch, documents]: the
second, `document`) and returns `score` float32 [batch, documents]; `preprocess` gives the pairs' ids
[batch, documents, seq_length]. Each pair is packed as training packs it (each text cut to `max_text_bytes`, the
pair to `seq_length` tokens by the task's `truncation`). A task is a reranker when its `text_serving_class` is this
one (`is_reranker`): the search index (`bert-tf index --rerank`) and `bert-tf evaluate --first-stage` take those.

Example:
    >>> serving = task_named("rerank").text_serving(model, spec, tokenizer)  # doctest: +SKIP
    >>> serving.outputs([tf.constant(["who lives in paris"]), tf.constant([["a film", "paris"]])])["score"].shape
    ... # doctest: +SKIP
    TensorShape([1, 2])
    >>> RerankTextServing.model_rows([tf.constant(["q1", "q2"]), tf.constant([["a", "b"], ["c", "d"]])])[0].numpy()
    array([b'q1', b'q1', b'q2', b'q2'], dtype=object)
"""

from __future__ import annotations

import tensorflow as tf

from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.text_serving import PackedTextServing

SCORES = "score"  # the reranker's output (`Task.serving_outputs`): one logit per (query, document) pair


class RerankTextServing(PackedTextServing):
    """A query [batch] and its documents [batch, documents] → one model row per (query, document) pair → `score`
    [batch, documents] (each output per pair, shaped per query)."""

    @classmethod
    def input_specs(cls, spec: TaskSpec) -> list[tf.TensorSpec]:
        query, documents = spec.text_inputs
        return [tf.TensorSpec([None], tf.string, name=query), tf.TensorSpec([None, None], tf.string, name=documents)]

    @classmethod
    def model_rows(cls, texts: list[tf.Tensor]) -> list[tf.Tensor]:
        """[the query of each pair, the document of each pair], string [batch × documents] each, query by query."""
        queries, documents = texts
        pairs_per_query = tf.shape(documents)[1]
        which_query = tf.range(tf.size(documents)) // tf.maximum(pairs_per_query, 1)
        return [tf.gather(queries, which_query), tf.reshape(documents, [-1])]

    @classmethod
    def per_example(cls, outputs: dict[str, tf.Tensor], texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
        """Each output [pairs, ...] → [batch, documents, ...]."""
        shape = tf.shape(texts[1])
        return {name: tf.reshape(value, tf.concat([shape, tf.shape(value)[1:]], 0)) for name, value in outputs.items()}


def is_reranker(task) -> bool:
    """Whether the task class `task` scores (query, document) pairs: its raw-text signature is `RerankTextServing`'s."""
    return issubclass(task.text_serving_class, RerankTextServing)
