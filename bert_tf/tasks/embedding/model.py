"""`BertEmbedder`: a sentence embedding (a bi-encoder's one tower): the encoder's token vectors pooled, then normalised.

Given the usual id tensors [batch, seq] it returns float32 vectors [batch, hidden]; given a group of texts per
example, ids [batch, texts, seq] (what training on pairs and triples feeds it), vectors [batch, texts, hidden],
every text through the same weights. Pooling (`bert_tf.layers.pooling.TokenPooling`): "mean" of the real tokens'
vectors (`input_mask`; Sentence-BERT's default), the "cls" token's vector, their "max" over the real tokens, or
"mean_max" (both); `embedding_size` other than the pooled vector's size adds a learned linear projection of the pooled vector to that size (sentence-transformers'
Dense module: a distilled student's map into its wider teacher's space); `normalize` gives vectors of length 1,
so that cosine similarity is their inner product.

As sentence-transformers' `SentenceTransformer`: `bert_tf.load_embedder(model_dir)` loads one (a model directory
or a sentence-transformers folder: `bert_tf.tasks.embedding.loading`), `encode(texts)` gives NumPy vectors, `similarity(a, b)` their cosines
and `semantic_search(queries, corpus_vectors, top_k)` the nearest corpus rows per query. A pair of texts is refused,
never joined into one input.

Example:
    >>> import numpy as np, bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertEmbedder(encoder)
    >>> vectors = model({"input_word_ids": np.array([[2, 7, 9, 3]]), "input_mask": np.array([[1, 1, 1, 1]])})
    >>> tuple(vectors.shape), round(float(np.linalg.norm(vectors[0])), 4)
    ((1, 128), 1.0)
    >>> tuple(BertEmbedder(encoder, embedding_size=256)({"input_word_ids": np.array([[2, 7, 3]])}).shape)
    (1, 256)
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from bert_tf.model import BertModel
from bert_tf.tasks.embedding.cached_step import cached_train_step
from bert_tf.tasks.embedding.losses import InBatchNegativesLoss
from bert_tf.layers.pooling import TokenPooling, pooled_width
from bert_tf.tasks.embedding.similarity import cos_sim, semantic_search
from bert_tf.tasks.task_model import BertTaskModel
from bert_tf.tasks.text_inputs import text_segments


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbedder(BertTaskModel):
    """The encoder's `sequence_output`, pooled (`pooling`), projected to `embedding_size` values where that is not the
    encoder's width (None: it is), and, with `normalize`, scaled to length 1."""

    encoder_output = "sequence_output"
    text_padding = "longest"  # padding is masked out of every pooling: a batch of texts is padded to its longest
    pairs_refused = ("BertEmbedder embeds one text per example, not pairs (texts, second_texts): encode each list on "
                     "its own and compare the vectors (model.similarity(a, b)).")

    def __init__(self, encoder: BertModel, pooling: str = "mean", normalize: bool = True,
                 embedding_size: int | None = None, **kwargs):
        super().__init__(encoder, **kwargs)
        self.token_pooling = TokenPooling(pooling, name="token_pooling")
        width = pooled_width(pooling, encoder.config.hidden_size)
        if embedding_size is not None and (isinstance(embedding_size, bool) or not isinstance(embedding_size, int)
                                           or embedding_size < 1):
            raise ValueError(f"BertEmbedder: embedding_size must be a positive integer or None, got {embedding_size!r}.")
        self.pooling, self.normalize = pooling, bool(normalize)
        self.mini_batch_size = None  # training: the batch embedded this many examples at a time (cached_step); None: whole
        self.embedding_size = embedding_size or width  # the size of the vectors
        self.projection = None  # the pooled vector's map to embedding_size values, where that is not the width
        if self.embedding_size != width:
            self.projection = keras.layers.Dense(self.embedding_size, kernel_initializer=self.head_initializer(),
                                                 dtype="float32", name="projection")
            self.projection.build((None, width))
        self.built = True

    def call(self, inputs, training=None):
        if not isinstance(inputs, dict) or inputs["input_word_ids"].shape.rank != 3:
            return super().call(inputs, training=training)
        shape = tf.shape(inputs["input_word_ids"])  # [batch, texts, seq]: every text of every example at once
        flat = {name: tf.reshape(value, [-1, shape[2]]) for name, value in inputs.items()}
        vectors = super().call(flat, training=training)
        return tf.reshape(vectors, [shape[0], shape[1], self.embedding_size])

    def train_step(self, data):
        """Keras' step, or with `mini_batch_size` the cached one (`bert_tf.tasks.embedding.cached_step`): the same loss
        and gradients, in the memory of a batch of `mini_batch_size`."""
        if not self.mini_batch_size:
            return super().train_step(data)
        return cached_train_step(self, data, self.mini_batch_size)

    def head(self, features, inputs, training=None):
        vectors = self.token_pooling(features, inputs.get("input_mask", tf.ones_like(inputs["input_word_ids"])))
        if self.projection is not None:
            vectors = self.projection(vectors)
        return tf.math.l2_normalize(vectors, axis=-1) if self.normalize else vectors

    def encode(self, texts, batch_size: int = 32, normalize: bool = False, progress: bool = False) -> np.ndarray:
        """The vectors of `texts` as sentence-transformers' `encode` gives them: float32 NumPy [len(texts),
        embedding_size] (a single `str`: [embedding_size]), in batches of `batch_size` texts; `normalize`: scaled to
        length 1 (a model that normalises gives such vectors anyway); `progress`: Keras' progress bar."""
        segments = text_segments(texts)
        if segments is None:
            if isinstance(texts, (list, tuple, np.ndarray)) and len(texts) == 0:
                return np.zeros((0, self.embedding_size), np.float32)
            raise ValueError(f"BertEmbedder.encode takes a text or a list of texts, got {type(texts).__name__}.")
        self.check_text_pairs(segments)
        vectors = np.asarray(self.predict(segments[0], batch_size=batch_size, verbose=1 if progress else 0), np.float32)
        if normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
        return vectors[0] if isinstance(texts, str) else vectors

    def similarity(self, a, b) -> np.ndarray:
        """The cosine of every vector of `a` with every vector of `b`, float32 [len(a), len(b)] (sentence-transformers'
        `similarity` of a cosine model; `bert_tf.tasks.embedding.similarity.cos_sim`); texts are encoded first."""
        return cos_sim(*(self.encode(side) if text_segments(side) is not None else side for side in (a, b)))

    def semantic_search(self, queries, corpus_vectors, top_k: int = 10) -> list[list[dict]]:
        """Per query (a text, encoded, or a vector), the `top_k` rows of `corpus_vectors` (this model's vectors of the
        corpus: `encode(documents)`) of highest cosine, best first: `[{"corpus_id": row, "score": cosine}, ...]`, as
        sentence-transformers' `util.semantic_search` returns them."""
        vectors = self.encode(queries) if text_segments(queries) is not None else queries
        return semantic_search(vectors, corpus_vectors, top_k)

    def default_loss(self) -> keras.losses.Loss:
        """In-batch negatives (`InBatchNegativesLoss`): each text's pair against the others' in its batch."""
        return InBatchNegativesLoss()

    def default_metrics(self) -> list:
        """None: similarity is scored on a dev set (Spearman, retrieval), not per batch."""
        return []

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling, "normalize": self.normalize,
                "embedding_size": self.embedding_size}
