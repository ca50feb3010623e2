"""`EmbeddingTask`: sentence embeddings for similarity and search, trained with `fit` and scored as the embedding
community scores them.

Training reads a file of scored pairs, pairs or triples, or plain sentences (`bert_tf.tasks.embedding.data`) and
trains a `BertEmbedder` on each batch's groups of texts ([batch, texts, seq], tokenized in `tf.data` by the same
packer as every export) with the loss the data calls for (`bert_tf.tasks.embedding.losses`): CoSENT for scored
pairs, in-batch negatives for pairs and triples, and for sentences unsupervised SimCSE (each sentence paired with
itself, the two views differing by dropout); `FinetuneConfig.embedding_loss` chooses another, and
`matryoshka_dims` trains nested sizes too. Scores (`score`: the one that picks the best epoch):
- a scored-pair file: STS, Spearman and Pearson × 100 of the cosine against the gold score (`score`: Spearman);
- a pair file: retrieval, each anchor looking for its positive among all the file's positives;
- a folder in the BEIR/MTEB layout (`corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`): retrieval;
retrieval as Recall@1/10/100, MRR@10 and nDCG@10 × 100 (`score`: nDCG@10).

Distillation (`bert-tf distill` of an embedding teacher): the student learns the teacher's vectors of the training
file's texts (`bert_tf.tasks.embedding.distillation`) beside the data's own loss; unlabelled sentences are enough.
The student is built from the teacher's spec, so a narrower one gets a projection to the teacher's
`embedding_size`.

Example:
    >>> task = EmbeddingTask(tokenizer, TaskSpec(task="embed", seq_length=128))  # doctest: +SKIP
    >>> dev = task.prepare(task.read("../shared/data/stsb/sts-dev.csv"), training=False)  # doctest: +SKIP
    >>> task.evaluate(model, dev, batch_size=64)["spearman"]  # doctest: +SKIP
    84.1
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import tensorflow as tf

from bert_tf.retrieval.ranking_metrics import format_retrieval, retrieval_scores
from bert_tf.retrieval.retrieval_set import RetrievalSet, read_retrieval_set
from bert_tf.tasks.base import FinetuneTask
from bert_tf.tasks.embedding.data import EmbeddingExamples, read_embedding_file
from bert_tf.tasks.embedding.distillation import vector_distance
from bert_tf.tasks.embedding.losses import CoSENTLoss, CosineSimilarityLoss, InBatchNegativesLoss, MatryoshkaLoss
from bert_tf.tasks.embedding.metrics import format_sts, sts_scores
from bert_tf.tasks.embedding.model import BertEmbedder
from bert_tf.tasks.embedding.sentence_transformers_folder import SENTENCE_TRANSFORMERS_FOLDER
from bert_tf.tasks.embedding.settings import EmbeddingSettings
from bert_tf.tasks.group_batches import shuffled_group_batches
from bert_tf.tasks.text_serving import text_packer

SCORED_LOSSES = ("cosent", "cosine")


def check_comparable(loss: str, data, batch_size: int, source) -> None:
    """Refuses, in one line naming `source`, training data in which the `loss` named compares nothing, so that every
    step's loss would be 0 and the weights written unchanged: CoSENT orders the pairs of a batch by their scores
    (batches of one pair, or pairs all scored the same, have no order); in-batch negatives score each anchor's
    positive against the batch's other texts (batches of one pair or sentence have none, without a hard negative).

    Example:
        >>> check_comparable("cosent", EmbeddingData("scored", ["a", "b"], np.array([[0, 1]] * 3), np.full(3, 0.8,
        ...                  np.float32)), 16, "sts.tsv")
        Traceback (most recent call last):
        ...
        ValueError: sts.tsv: all 3 pairs are scored the same, so CoSENT, which orders the pairs by their scores, has nothing to compare; give pairs of different scores (or --loss cosine).
    """
    examples = len(data.labels)
    per_batch = min(batch_size, examples)
    if loss == "cosent" and per_batch > 1 and np.ptp(data.labels) == 0:
        raise ValueError(f"{source}: all {examples} pairs are scored the same, so CoSENT, which orders the pairs by "
                         "their scores, has nothing to compare; give pairs of different scores (or --loss cosine).")
    if per_batch > 1 or loss == "cosine" or (loss != "cosent" and data.groups.shape[1] > 2):
        return
    what = {"scored": "scored pair", "pairs": "pair", "sentences": "sentence"}.get(data.kind, "example")
    reason = ("CoSENT orders the pairs of a batch by their scores" if loss == "cosent" else
              "in-batch negatives score each anchor's positive against the other texts of its batch")
    raise ValueError(f"{source}: {'1 ' + what if examples == 1 else '--batch-size 1'} leaves each batch one {what}, "
                     f"and {reason}, so nothing would be compared: give at least 2 examples and --batch-size 2 or "
                     "more" + ("" if loss == "cosent" else ", or hard negatives (anchor, positive, negative)") + ".")


@dataclasses.dataclass
class EmbeddingData:
    """Examples as the texts to embed (each once) and, per example, the indices of its texts."""

    kind: str  # "scored", "pairs" or "sentences" (EmbeddingExamples.kind), or "retrieval"
    texts: list[str]  # the distinct texts
    groups: np.ndarray  # int [examples, texts per example]: indices into `texts`
    labels: np.ndarray  # float32 [examples]: scores scaled to [0, 1] ("scored"), else zeros
    relevant: list[dict] | None = None  # retrieval: per query (the first texts), {document index: relevance}
    documents: np.ndarray | None = None  # retrieval: indices into `texts` of the documents


def _distinct(texts: list[str]) -> tuple[list[str], dict[str, int]]:
    index: dict[str, int] = {}
    for text in texts:
        index.setdefault(text, len(index))
    return list(index), index


def _loss_name(config, data: EmbeddingData) -> str:
    """The loss `config.settings.embedding_loss` names, or the one `data` calls for: CoSENT for scored pairs, else in-batch
    negatives."""
    return config.settings.embedding_loss or ("cosent" if data.kind == "scored" else "in_batch_negatives")


class EmbeddingTask(FinetuneTask):
    name = "embed"
    model_class = BertEmbedder
    text_padding = BertEmbedder.text_padding
    primary_metric = "score"
    distils_layers = False  # its batches are groups of texts [batch, texts, seq], not the encoder's inputs
    settings_class = EmbeddingSettings
    folder_format = SENTENCE_TRANSFORMERS_FOLDER

    # ----- exports, loading, reports ---------------------------------------------------------

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        """`embedding` [batch, size] float32 (of length 1 when the model normalises); size: the spec's
        `embedding_dims` (the vector's first values, renormalised: a Matryoshka cut), else the model's width."""
        vectors = tf.cast(model(ids, training=False), tf.float32)
        if spec.embedding_dims:
            vectors = vectors[:, :spec.embedding_dims]
            vectors = tf.math.l2_normalize(vectors, axis=-1) if model.normalize else vectors
        return {"embedding": vectors}

    @classmethod
    def serving_info(cls, model, spec):
        size = spec.embedding_dims or model.embedding_size
        return {"pooling": tf.constant(model.pooling), "normalize": tf.constant(model.normalize),
                "embedding_size": tf.constant(size, tf.int32)}

    @classmethod
    def sentence_vectors(cls, spec):
        return {"pooling": spec.pooling, "normalize": spec.normalize}

    @classmethod
    def spec_for_model(cls, model, spec):
        return spec.replace(pooling=model.pooling, normalize=model.normalize, embedding_size=model.embedding_size)

    @classmethod
    def format_scores(cls, scores):
        """STS: "Spearman 84.12  Pearson 83.90  (1,500 pairs)"; retrieval: nDCG@10, MRR@10 and the recalls."""
        return format_sts(scores) if "spearman" in scores else format_retrieval(scores)

    @classmethod
    def prediction_lines(cls, inputs, predictions):
        """The vector's size, its first values and the text, per text."""
        lines = []
        for example, result in zip(inputs, predictions):
            vector = result["embedding"]
            head = ", ".join(f"{value:.4f}" for value in vector[:4])
            lines.append(f"[{head}, ...] ({len(vector)} values)\t{example['text']}")
        return lines

    @classmethod
    def soft_target_loss(cls, student, teacher_outputs, student_outputs, labels, temperature):
        """`vector_distance` of the student's vectors to the teacher's (`temperature` does not apply)."""
        return vector_distance(teacher_outputs, student_outputs)

    @classmethod
    def model_from_hf(cls, encoder, settings):
        raise ValueError("Embedding models are not read from transformers task classes.")

    @classmethod
    def pairs_to_mine(cls, path, split: str = "train") -> tuple[list[str], list[str], list[list[int]]]:
        """(distinct queries, documents searched, each query's positives among them) of a BEIR folder's `split`
        (the whole corpus.jsonl searched) or of a file of (anchor, positive) pairs (its positives searched; a repeated
        query gathers its positives): what `bert_tf.retrieval.mining` mines hard negatives for."""
        if Path(path).is_dir():
            retrieval_set = read_retrieval_set(path, split)
            return (retrieval_set.queries, retrieval_set.documents,
                    [sorted(relevant) for relevant in retrieval_set.relevant])
        examples = read_embedding_file(path)
        if examples.kind != "pairs":
            raise ValueError(f"{path}: {examples.kind} examples; mining reads (anchor, positive) pairs or a BEIR "
                             "folder.")
        documents, index = _distinct([texts[1] for texts in examples.texts])
        positives: dict[str, list[int]] = {}
        for texts in examples.texts:
            positives.setdefault(texts[0], []).append(index[texts[1]])
        return list(positives), documents, list(positives.values())

    # ----- fine-tuning -----------------------------------------------------------------------

    def read(self, path, fit_labels=False, need_labels=True):
        """A scored-pair, pair or sentence file (`read_embedding_file`), or a folder of a retrieval set."""
        if Path(path).is_dir():
            if fit_labels:
                raise ValueError(f"{path} is a retrieval set: train on pairs (a file of anchor, positive), and "
                                 "score on the set (--dev).")
            return read_retrieval_set(path)
        return read_embedding_file(path, self.spec.score_range)

    def subset(self, examples, indices):
        return examples.subset(indices)

    def prepare(self, examples, training):
        if isinstance(examples, RetrievalSet):
            return self._retrieval_data(examples.queries, examples.documents, examples.relevant)
        if training:
            groups = [texts * 2 if examples.kind == "sentences" else texts for texts in examples.texts]  # SimCSE
            return self._grouped_data(examples.kind, groups, examples.scores)
        if examples.kind == "pairs":  # each anchor looks for its positive among every positive of the file
            documents, index = _distinct([texts[1] for texts in examples.texts])
            return self._retrieval_data([texts[0] for texts in examples.texts], documents,
                                        [{index[texts[1]]: 1} for texts in examples.texts])
        return self._grouped_data(examples.kind, examples.texts, examples.scores)

    def _grouped_data(self, kind: str, groups, scores) -> EmbeddingData:
        texts, index = _distinct([text for group in groups for text in group])
        low, high = self.spec.score_range
        labels = np.zeros(len(groups), np.float32) if scores is None else (
            (np.asarray(scores, np.float32) - low) / (high - low))
        return EmbeddingData(kind, texts, np.array([[index[text] for text in group] for group in groups]), labels)

    def _retrieval_data(self, queries: list[str], documents: list[str], relevant: list[dict]) -> EmbeddingData:
        texts, index = _distinct(queries + documents)
        groups = np.array([[index[query]] for query in queries])
        return EmbeddingData("retrieval", texts, groups, np.zeros(len(queries), np.float32), relevant,
                             np.array([index[document] for document in documents]))

    def dataset(self, data: EmbeddingData):
        """Each example's texts (string [texts]) and label; no lengths (texts are tokenized per batch)."""
        texts = np.array(data.texts, dtype=object)
        return tf.data.Dataset.from_tensor_slices((texts[data.groups], data.labels)), None

    def training_batches(self, data, batch_size, bucketing, seed):
        """Batches of (ids [batch, texts, longest], labels [batch]), shuffled anew every epoch; no bucketing (in-batch
        negatives want batches of any lengths)."""
        dataset, _ = self.dataset(data)
        return shuffled_group_batches(dataset, len(data.labels), batch_size, seed,
                                      lambda texts, labels: ([tf.reshape(texts, [-1])], labels),
                                      text_packer(self.tokenizer, self.spec, padding="longest"))

    def prediction_batches(self, data, batch_size):
        """The ids of each distinct text of `data`, in order (`outputs`: its vector), each batch padded to its longest."""
        pack = text_packer(self.tokenizer, self.spec, padding="longest")
        batches = tf.data.Dataset.from_tensor_slices(np.array(data.texts, dtype=object)).batch(batch_size)
        return batches.map(lambda texts: pack([texts])).prefetch(tf.data.AUTOTUNE)

    def build_model(self, encoder, dropout):
        """A `BertEmbedder` of the spec's pooling, normalisation and size (a projection where the encoder is of another
        width: a student of a wider teacher, whose spec it is)."""
        return BertEmbedder(encoder, pooling=self.spec.pooling, normalize=self.spec.normalize,
                            embedding_size=self.spec.embedding_size or None)

    def configure_training(self, model, config):
        """Cached in-batch negatives when the run gives a `mini_batch_size` (refused with XLA or a teacher)."""
        if config.settings.mini_batch_size and (config.jit_compile or config.teacher is not None):
            raise ValueError("FinetuneConfig: mini_batch_size (cached in-batch negatives) trains without XLA "
                             "(jit_compile) and without a teacher.")
        model.mini_batch_size = config.settings.mini_batch_size

    def training_summary(self, config, data) -> str:
        """The training file's format and the loss it trains with: "scored pairs → CoSENT", "sentences → SimCSE"."""
        name = _loss_name(config, data)
        texts = data.groups.shape[1]
        found = {"scored": "scored pairs", "sentences": "sentences",
                 "pairs": "pairs" if texts == 2 else "triples (anchor, positive, hard negative)"}[data.kind]
        loss = {"cosent": "CoSENT", "cosine": "cosine regression",
                "in_batch_negatives": "SimCSE, in-batch negatives of each sentence paired with itself"
                if data.kind == "sentences" else "in-batch negatives"}[name]
        sizes = f", at sizes {', '.join(map(str, config.settings.matryoshka_dims))} too" if config.settings.matryoshka_dims else ""
        chosen = "as --loss asks" if config.settings.embedding_loss else "the default; --loss chooses another"
        return f"{config.train_file}: {found} → {loss}{sizes} ({chosen})"

    def loss(self, config, data):
        """The loss `embedding_loss` names, or the one the data calls for; summed over `matryoshka_dims` (the run's
        settings, `config.settings`)."""
        settings = config.settings
        name = _loss_name(config, data)
        if (name in SCORED_LOSSES) != (data.kind == "scored"):
            raise ValueError(f"The {name} loss trains on " + ("scored pairs (sentence1, sentence2, score)" if name in
                             SCORED_LOSSES else "pairs, triples or sentences") + f"; the training file holds "
                             f"{data.kind} examples.")
        if not (config.teacher and config.soft_weight == 1):  # else the data's loss is not trained on alone
            check_comparable(name, data, config.batch_size, config.train_file)
        loss = {"in_batch_negatives": lambda: InBatchNegativesLoss(settings.similarity_scale, settings.symmetric),
                "cosent": lambda: CoSENTLoss(settings.similarity_scale),
                "cosine": CosineSimilarityLoss}[name]()
        return MatryoshkaLoss(loss, settings.matryoshka_dims) if settings.matryoshka_dims else loss

    def scores(self, data: EmbeddingData, outputs) -> dict:
        vectors = np.stack(outputs).astype(np.float64)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
        if data.kind == "retrieval":
            scores = retrieval_scores(vectors[data.groups[:, 0]] @ vectors[data.documents].T, data.relevant)
            return {**scores, "score": scores["ndcg@10"]}
        if data.kind != "scored":
            raise ValueError("Sentences without scores or pairs cannot be scored; give scored pairs (STS), pairs or "
                             "a retrieval set.")
        cosines = np.sum(vectors[data.groups[:, 0]] * vectors[data.groups[:, 1]], axis=-1)
        low, high = self.spec.score_range
        scores = sts_scores(cosines, data.labels * (high - low) + low)
        return {**scores, "score": scores["spearman"]}

    def inputs_of(self, examples) -> list[dict]:
        """Each text to embed, once (`EmbeddingData.texts`): a served model embeds one text per example."""
        return [{"text": text} for text in self.prepare(examples, training=False).texts]

    def prediction_scores(self, examples, predictions) -> dict:
        """The scores of the vectors a served model gave for `inputs_of(examples)`, in that order."""
        return self.scores(self.prepare(examples, training=False), [result["embedding"] for result in predictions])

    def predictions(self, data: EmbeddingData, outputs) -> list[dict]:
        """`{"embedding": [...]}` per text."""
        return [{"embedding": np.asarray(outputs[group[0]], np.float32).tolist()} for group in data.groups]

    def examples_from_texts(self, texts) -> EmbeddingExamples:
        """Texts to embed."""
        return EmbeddingExamples("<texts>", "sentences", [(text,) for text in texts], None,
                                 list(range(1, len(texts) + 1)))
