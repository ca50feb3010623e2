"""`RerankTask`: a cross-encoder reranker (`BertReranker`), trained with `fit` on a query's positive and hard
negatives or on labelled pairs, and scored by how it re-orders a first stage's candidates.

Training reads a file of groups (query, positive, negative_1 ... negative_N: `bert-tf mine`'s rows) or labelled
pairs (`bert_tf.tasks.rerank.data`) and trains on each batch's groups of pairs ([batch, pairs, seq], the query
repeated beside each document, tokenized in `tf.data` by the same packer as every export) with the loss `loss`
names (`bert_tf.tasks.rerank.losses`): "listwise" (the default: the positive against its negatives), "bce" (every
pair on its own: positives 1, negatives 0, or the pairs' labels) or "margin_mse" (the margins against a teacher's
scores, written beside the groups). Dev scoring (`ndcg@10`: the score that picks the best epoch): a BEIR folder,
its `dev_split`, each query's BM25 top `rerank_top_k` reranked (`bert_tf.tasks.rerank.ranking`; the first stage's
own scores reported beside); a file of groups (each positive among its negatives) or labelled pairs (each query's
documents) ranks those.

Example:
    >>> config = FinetuneConfig(task="rerank", train_file="mined.jsonl", dev_file="scifact/", init="tiny",
    ...                         output_dir="reranker/", settings={"rerank_top_k": 100})  # doctest: +SKIP
    >>> finetune(config).metrics["ndcg@10"]  # doctest: +SKIP
    71.3
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import tensorflow as tf

from bert_tf.retrieval.retrieval_set import RetrievalSet, read_retrieval_set
from bert_tf.tasks.base import FinetuneTask, FolderFormat
from bert_tf.tasks.group_batches import shuffled_group_batches
from bert_tf.tasks.rerank.cross_encoder_folder import (SIGMOID, is_cross_encoder_folder, read_cross_encoder_folder,
                                                       write_cross_encoder_folder)
from bert_tf.tasks.rerank.data import RerankExamples, read_rerank_file
from bert_tf.tasks.rerank.losses import ListwiseLoss, MarginMSELoss, PairBinaryCrossEntropyLoss
from bert_tf.tasks.rerank.metrics import format_ranking, ranking_scores
from bert_tf.tasks.rerank.model import BertReranker
from bert_tf.tasks.rerank.ranking import RankingData, first_stage_candidates, listed_pairs
from bert_tf.tasks.rerank.settings import RerankSettings
from bert_tf.tasks.rerank_serving import RerankTextServing
from bert_tf.tasks.text_serving import text_packer


@dataclasses.dataclass
class GroupData:
    """Training examples: each query with its documents, and the targets of the loss."""

    kind: str  # RerankExamples.kind
    queries: np.ndarray  # object [examples]
    documents: np.ndarray  # object [examples, pairs]: the positive first (groups), or the one document
    labels: np.ndarray  # float32 [examples, pairs]: 1 positive / 0 negative, the pairs' labels, or a teacher's scores
    teacher: bool  # the labels are a teacher's scores


class RerankTask(FinetuneTask):
    name = "rerank"
    model_class = BertReranker
    settings_class = RerankSettings
    text_padding = BertReranker.text_padding
    primary_metric = "ndcg@10"
    distils_layers = False  # its batches are groups of pairs [batch, pairs, seq], not the encoder's inputs
    input_fields = (("query", "document"), ())
    hf_architecture = "BertForSequenceClassification"  # with one label (`cross_encoder_folder`)
    hf_head_name = "classifier"
    served_outputs = ("score",)
    text_serving_class = RerankTextServing  # a query and its documents in, one score per document out

    # ----- exports, loading, reports ---------------------------------------------------------

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        """`score` float32 [batch]: each (query, document) pair's logit, higher for a better match."""
        return {"score": tf.cast(model(ids, training=False), tf.float32)}

    @classmethod
    def format_scores(cls, scores):
        return format_ranking(scores)

    @classmethod
    def prediction_lines(cls, inputs, predictions):
        """The score, the query and the document, per pair."""
        return [f"{result['score']:.4f}\t{example['query']}\t{example['document']}"
                for example, result in zip(inputs, predictions)]

    @classmethod
    def soft_target_loss(cls, student, teacher_outputs, student_outputs, labels, temperature):
        """The squared difference of the student's logits and the teacher's (`temperature` does not apply)."""
        return tf.reduce_mean(tf.square(tf.cast(teacher_outputs, tf.float32) - tf.cast(student_outputs, tf.float32)))

    @classmethod
    def hf_config(cls, model):
        """One label, and sentence-transformers' CrossEncoder entry (its sigmoid for one label)."""
        return {"id2label": {0: "LABEL_0"}, "label2id": {"LABEL_0": 0},
                "sentence_transformers": {"activation_fn": SIGMOID}}

    @classmethod
    def model_from_hf(cls, encoder, settings):
        labels = len(settings.get("id2label") or {0: "LABEL_0"})
        if labels != 1:
            raise ValueError(f"a reranker has one output, not {labels} labels (id2label).")
        return BertReranker(encoder)

    # ----- fine-tuning -----------------------------------------------------------------------

    def read(self, path, fit_labels=False, need_labels=True):
        """A file of groups or labelled pairs (`read_rerank_file`; the teacher's scores read for MarginMSE alone), or a
        BEIR folder (its `dev_split`) to score on."""
        if Path(path).is_dir():
            if fit_labels:
                raise ValueError(f"{path} is a retrieval set: train on a file of groups (query, positive, "
                                 "negative_1, ...: bert-tf mine's) or labelled pairs, and score on the set (--dev).")
            return read_retrieval_set(path, self.spec.dev_split)
        return read_rerank_file(path, need_labels, teacher_scores=self.spec.loss == "margin_mse")

    def subset(self, examples, indices):
        return examples.subset(indices)

    def prepare(self, examples, training):
        if isinstance(examples, RetrievalSet):
            return first_stage_candidates(examples, self.spec.rerank_top_k)
        if not training:
            return listed_pairs(examples.queries, examples.documents, examples.labels)
        teacher = self.spec.loss == "margin_mse" and examples.teacher_scores is not None
        if teacher:
            labels = np.asarray(examples.teacher_scores, np.float32)
        elif examples.kind == "pairs":
            labels = np.asarray(examples.labels, np.float32)[:, None]
        else:
            labels = np.zeros((len(examples), len(examples.documents[0])), np.float32)
            labels[:, 0] = 1
        return GroupData(examples.kind, np.array(examples.queries, dtype=object),
                         np.array(examples.documents, dtype=object).reshape(len(examples), -1), labels, teacher)

    def dataset(self, data):
        """Training: each example's query, documents and targets; else each pair (query, document). No lengths
        (texts are tokenized per batch)."""
        if isinstance(data, GroupData):
            return tf.data.Dataset.from_tensor_slices((data.queries, data.documents, data.labels)), None
        return tf.data.Dataset.from_tensor_slices((np.array(data.queries, dtype=object),
                                                   np.array(data.documents, dtype=object))), None

    def training_batches(self, data, batch_size, bucketing, seed):
        """Batches of (ids [batch, pairs, longest], targets [batch, pairs]), shuffled anew every epoch; pairs without
        targets (a ranking's: `prepare(..., training=False)`) as `prediction_batches` gives them."""
        if not isinstance(data, GroupData):
            return self.prediction_batches(data, batch_size)
        dataset, _ = self.dataset(data)

        def pairs(queries, documents, labels):  # the query beside each of its documents
            repeated = tf.repeat(queries[:, None], tf.shape(documents)[1], axis=1)
            return [tf.reshape(repeated, [-1]), tf.reshape(documents, [-1])], labels

        return shuffled_group_batches(dataset, len(data.labels), batch_size, seed, pairs,
                                      text_packer(self.tokenizer, self.spec, padding="longest"))

    def prediction_batches(self, data, batch_size):
        """The ids of each pair of `data` (a `RankingData`), in order, each batch padded to its longest."""
        pack = text_packer(self.tokenizer, self.spec, padding="longest")
        dataset, _ = self.dataset(data)
        return dataset.batch(batch_size).map(lambda queries, documents: pack([queries, documents])).prefetch(
            tf.data.AUTOTUNE)

    def build_model(self, encoder, dropout):
        return BertReranker(encoder, dropout=dropout)

    def training_summary(self, config, data) -> str:
        """The training file's format and the loss it trains with: "groups of 8 → listwise softmax"."""
        found = (f"groups (a query, its positive and {data.documents.shape[1] - 1} negatives"
                 + (", a teacher's scores)" if data.teacher else ")")) if data.kind == "groups" else "labelled pairs"
        loss = {"listwise": "listwise softmax of the positive against its negatives",
                "bce": "binary cross-entropy of every pair", "margin_mse": "MarginMSE of the teacher's margins"}
        chosen = "the default; --loss chooses another" if config.settings.loss == "listwise" else "as --loss asks"
        return f"{config.train_file}: {found} → {loss[config.settings.loss]} ({chosen})"

    def loss(self, config, data):
        """The loss `loss` names (module docstring); the data it needs checked."""
        settings = config.settings
        if settings.loss != "bce" and data.kind != "groups":
            raise ValueError(f"The {settings.loss} loss trains on groups (query, positive, negative_1, ...); "
                             f"{config.train_file} holds labelled pairs: use --loss bce.")
        if settings.loss == "margin_mse" and not data.teacher:
            raise ValueError(f"The margin_mse loss needs a teacher's scores of each document: {config.train_file} "
                             "has no scores column (the positive's, then each negative's) nor score_positive, "
                             "score_negative_1, ...")
        return {"listwise": lambda: ListwiseLoss(settings.listwise_scale, settings.listwise_sigmoid),
                "bce": PairBinaryCrossEntropyLoss, "margin_mse": MarginMSELoss}[settings.loss]()

    def scores(self, data: RankingData, outputs) -> dict:
        return ranking_scores(data, np.asarray(outputs, np.float64).reshape(-1))

    def prediction_scores(self, examples, predictions) -> dict:
        """The scores of the pairs a served model scored for `inputs_of(examples)`, in that order."""
        return self.scores(self.prepare(examples, training=False), [result["score"] for result in predictions])

    @classmethod
    def served_predictions(cls, outputs, info):
        """`{"score": logit}` per pair, query by query: the served `score` [batch, documents] (one document per query
        as `ServerPredictor.predict` asks, one pair per example)."""
        return [{"score": float(score)} for score in np.asarray(outputs["score"]).reshape(-1)]

    def predictions(self, data: RankingData, outputs) -> list[dict]:
        """`{"score": logit}` per pair."""
        return [{"score": float(output)} for output in outputs]

    def inputs_of(self, examples) -> list[dict]:
        """Each pair to score, in order (`RankingData`): a served model scores one pair per example."""
        data = self.prepare(examples, training=False)
        return [{"query": query, "document": document} for query, document in zip(data.queries, data.documents)]

    def examples_from_texts(self, queries, documents=None) -> RerankExamples:
        """Pairs to score: a query and a document each."""
        if documents is None or len(documents) != len(queries):
            raise ValueError("A reranker scores (query, document) pairs: give a document for each query.")
        return RerankExamples("<texts>", "pairs", list(queries), [(document,) for document in documents], None, None,
                              list(range(1, len(queries) + 1)))


# The CrossEncoder folder reads and writes through the task's Hugging Face class and head (set here, once the class
# exists, so that the folder's module needs no import of this one).
RerankTask.folder_format = FolderFormat(
    "cross-encoder", is_cross_encoder_folder, functools.partial(read_cross_encoder_folder, model_task=RerankTask),
    functools.partial(write_cross_encoder_folder, model_task=RerankTask))
