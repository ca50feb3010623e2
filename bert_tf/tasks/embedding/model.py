"""`BertEmbedder`: a sentence embedding (a bi-encoder's one tower): the encoder's token vectors pooled, then normalised.

Given the usual id tensors [batch, seq] it returns float32 vectors [batch, hidden]; given a group of texts per
example, ids [batch, texts, seq] (what training on pairs and triples feeds it), vectors [batch, texts, hidden],
every text through the same weights. Pooling (`bert_tf.layers.pooling.TokenPooling`): "mean" of the real tokens'
vectors (`input_mask`; Sentence-BERT's default), the "cls" token's vector, their "max" over the real tokens, or
"mean_max" (both); `embedding_size` other than the pooled vector's size adds a learned linear projection of the pooled vector to that size (sentence-transformers'
Dense module: a distilled student's map into its wider teacher's space); `normalize` gives vectors of length 1,
so that cosine similarity is their inner product.

Read as features (`bert-tf embed`, `bert_tf.load_embedder(path, ...)`: any encoder wrapped in a `BertEmbedder`), it
also pools "pooled", the encoder's pooler output (a tanh dense layer on [CLS]); `encoder_layers` other than the last
(0 the first block, -1 the last, `EMBEDDINGS` the embeddings' output that the first block reads; several are
concatenated, `LAST_FOUR_LAYERS` being the paper's best feature-based setting, Devlin et al., 2019, table 7);
`skip_special_tokens` leaves [CLS] and each text's closing [SEP] out of the pooling; `token_vectors` gives each
token's vector before pooling; `with_options` is the same model read another way.

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
from bert_tf.layers.pooling import POOLINGS as TOKEN_POOLINGS
from bert_tf.layers.pooling import TokenPooling, pooled_width
from bert_tf.tasks.embedding.similarity import cos_sim, semantic_search
from bert_tf.tasks.task_model import BertTaskModel
from bert_tf.tasks.text_inputs import text_segments


POOLINGS = (*TOKEN_POOLINGS, "pooled")  # "pooled": the encoder's pooler output (a tanh dense layer on [CLS])
EMBEDDINGS = "embeddings"  # as a layer: the embeddings' output, which the first block reads
LAST_FOUR_LAYERS = (-4, -3, -2, -1)


def layer_indices(layers, num_layers: int) -> tuple[int | str, ...]:
    """`layers` (a block index, negative from the end, or `EMBEDDINGS`, or a non-empty tuple of them) as block indices
    in [0, num_layers) and `EMBEDDINGS`; a one-line error for others.

    Example:
        >>> layer_indices((EMBEDDINGS, -1), 4)
        ('embeddings', 3)
    """
    given = (layers,) if isinstance(layers, (int, str)) else tuple(layers)
    if not given or not all(layer == EMBEDDINGS or (isinstance(layer, int) and not isinstance(layer, bool))
                            for layer in given):
        raise ValueError(f"layers must be block indices (ints) or {EMBEDDINGS!r}, one or a non-empty tuple; "
                         f"got {layers!r}.")
    bad = [layer for layer in given if layer != EMBEDDINGS and not -num_layers <= layer < num_layers]
    if bad:
        raise ValueError(f"layer(s) {bad} do not exist: the model has {num_layers} layers "
                         f"(use 0..{num_layers - 1}, -{num_layers}..-1 from the end, or {EMBEDDINGS!r}).")
    return tuple(layer if layer == EMBEDDINGS else layer % num_layers for layer in given)


def pooled_tokens(inputs, skip_special_tokens: bool = False):
    """The tokens a pooling reads, 1/0 [batch, seq]: the real ones (`input_mask`), and with `skip_special_tokens`
    neither [CLS] (the first) nor the [SEP] that closes each text (the last real token of each segment).

    Example:
        >>> ids = {"input_word_ids": tf.constant([[2, 7, 3, 8, 3, 0]]), "input_mask": tf.constant([[1, 1, 1, 1, 1, 0]]),
        ...        "input_type_ids": tf.constant([[0, 0, 0, 1, 1, 0]])}  # [CLS] a [SEP] b [SEP] [PAD]
        >>> pooled_tokens(ids, skip_special_tokens=True).numpy().tolist()
        [[0, 1, 0, 1, 0, 0]]
    """
    mask = tf.cast(inputs.get("input_mask", tf.ones_like(inputs["input_word_ids"])), tf.int32)
    if not skip_special_tokens:
        return mask
    types = tf.cast(inputs.get("input_type_ids", tf.zeros_like(mask)), tf.int32)
    following_mask = tf.pad(mask[:, 1:], [[0, 0], [0, 1]])
    following_types = tf.pad(types[:, 1:], [[0, 0], [0, 1]], constant_values=-1)
    closing = (following_mask == 0) | (following_types != types)
    first = tf.equal(tf.range(tf.shape(mask)[1]), 0)
    return mask * tf.cast(tf.logical_not(closing | first), tf.int32)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbedder(BertTaskModel):
    """The encoder's `sequence_output` (or the `encoder_layers` named, concatenated), pooled (`pooling`), projected to
    `embedding_size` values where that is not the pooled width (None: it is), and, with `normalize`, scaled to length 1."""

    encoder_output = "sequence_output"
    text_padding = "longest"  # padding is masked out of every pooling: a batch of texts is padded to its longest
    pairs_refused = ("BertEmbedder embeds one text per example, not pairs (texts, second_texts): encode each list on "
                     "its own and compare the vectors (model.similarity(a, b)).")

    def __init__(self, encoder: BertModel, pooling: str = "mean", normalize: bool = True,
                 embedding_size: int | None = None, encoder_layers=-1, skip_special_tokens: bool = False, **kwargs):
        super().__init__(encoder, **kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"BertEmbedder: pooling must be one of {list(POOLINGS)}, got {pooling!r}.")
        layers = layer_indices(encoder_layers, encoder.config.num_hidden_layers)
        last = (encoder.config.num_hidden_layers - 1,)
        if pooling == "pooled" and layers != last:
            raise ValueError(f"BertEmbedder: pooling='pooled' is the encoder's pooler output on the last layer; it "
                             f"cannot take encoder_layers {list(layers)}. Use 'cls' for the [CLS] vector of another "
                             "layer.")
        self.encoder_layers, self.skip_special_tokens = layers, bool(skip_special_tokens)
        # What the head reads: the pooler's output, the last layer (on the real tokens only), or every output.
        self.encoder_output = ("pooled_output" if pooling == "pooled" else "sequence_output" if layers == last
                               else "__call__")
        self.token_pooling = None if pooling == "pooled" else TokenPooling(pooling, name="token_pooling")
        hidden_size = encoder.config.hidden_size
        width = hidden_size if pooling == "pooled" else pooled_width(pooling, hidden_size * len(layers))
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

    def train_step(self, data):
        """Keras' step, or with `mini_batch_size` the cached one (`bert_tf.tasks.embedding.cached_step`): the same loss
        and gradients, in the memory of a batch of `mini_batch_size`."""
        if not self.mini_batch_size:
            return super().train_step(data)
        return cached_train_step(self, data, self.mini_batch_size)

    def head(self, features, inputs, training=None):
        if self.token_pooling is None:  # the pooler's output
            vectors = tf.cast(features, tf.float32)
        else:
            vectors = self.token_pooling(self.layer_vectors(features), pooled_tokens(inputs, self.skip_special_tokens))
        if self.projection is not None:
            vectors = self.projection(vectors)
        return tf.math.l2_normalize(vectors, axis=-1) if self.normalize else vectors

    def layer_vectors(self, features):
        """The token vectors pooled: `features` (`sequence_output`) itself, or from the encoder's outputs (a dict) the
        `encoder_layers`, concatenated."""
        if not isinstance(features, dict):
            return features
        return tf.concat([features["embedding_output"] if layer == EMBEDDINGS else features["encoder_outputs"][layer]
                          for layer in self.encoder_layers], axis=-1)

    def token_vectors(self, inputs):
        """Each token's vector before pooling, float32 [batch, seq, width of the `encoder_layers` together], scaled to
        length 1 where the model normalises (no projection: it maps pooled vectors)."""
        vectors = tf.cast(self.layer_vectors(self.encoder(inputs, training=False)), tf.float32)
        return tf.math.l2_normalize(vectors, axis=-1) if self.normalize else vectors

    def with_options(self, pooling: str | None = None, encoder_layers=None, normalize: bool | None = None,
                     skip_special_tokens: bool | None = None) -> "BertEmbedder":
        """This model with its encoder read another way (None: as this model reads it), and its preprocessor; itself
        when nothing differs. Its projection comes along where the pooling and layers are this model's (it maps those
        vectors: a distilled student's into its teacher's space), and is left out where they are not."""
        pooling = pooling or self.pooling
        layers = self.encoder_layers if encoder_layers is None else layer_indices(
            encoder_layers, self.encoder.config.num_hidden_layers)
        normalize = self.normalize if normalize is None else bool(normalize)
        skip = self.skip_special_tokens if skip_special_tokens is None else bool(skip_special_tokens)
        same_vectors = (pooling, layers) == (self.pooling, self.encoder_layers)
        if same_vectors and (normalize, skip) == (self.normalize, self.skip_special_tokens):
            return self
        model = BertEmbedder(self.encoder, pooling, normalize, self.embedding_size if same_vectors else None,
                             encoder_layers=layers, skip_special_tokens=skip, preprocessor=self._preprocessor)
        if model.projection is not None:
            model.projection.set_weights(self.projection.get_weights())
        return model

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
                "embedding_size": self.embedding_size, "encoder_layers": list(self.encoder_layers),
                "skip_special_tokens": self.skip_special_tokens}
