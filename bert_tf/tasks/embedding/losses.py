"""The losses sentence embeddings train with, as sentence-transformers defines them (Keras losses).

Every loss reads the vectors of a batch's groups of texts, `y_pred` [batch, texts, dim] (`BertEmbedder` on
ids [batch, texts, seq]), and compares texts by cosine similarity:
- `InBatchNegativesLoss` (MultipleNegativesRankingLoss, InfoNCE): texts = (anchor, positive[, hard negative]).
  Each anchor's positive must score above every other positive and hard negative of the batch: cross-entropy of
  `scale` × cosine over them (scale 20 = temperature 0.05). `symmetric`: plus each positive finding its anchor
  among the anchors. `y_true` is not read. Unsupervised SimCSE is this loss on (sentence, same sentence), the
  two views differing by dropout.
- `CoSENTLoss`: texts = (first, second), `y_true` their similarity score: log(1 + Σ exp(scale · (cos_j − cos_i)))
  over the pairs (i, j) of the batch where pair i is scored above pair j. Only the scores' order matters.
- `CosineSimilarityLoss`: the squared difference of the cosine and the score (scaled to [0, 1] by the caller).
- `MatryoshkaLoss`: a loss summed over vectors cut to nested sizes (e.g. 256, 128, 64), so that a vector cut
  to any of them still works (Kusupati et al., 2022).
Under a distribution strategy of several replicas, in-batch negatives and CoSENT compare the examples of the
global batch, as one device does: each replica all-gathers every replica's vectors and computes the loss of the
whole batch (a matrix of cosines, small beside the encoder), divided by the replicas (`replica_share`); with the
gradient of the gather, the replicas' summed gradients are those of one device.

Example:
    >>> import numpy as np
    >>> pairs = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])  # two anchors, each its positive
    >>> round(float(InBatchNegativesLoss(scale=20.0)(np.zeros(2), pairs)), 6)  # log(1 + e^-20)
    0.0
"""

from __future__ import annotations

import keras
import tensorflow as tf

from bert_tf.replicas import global_batch, replica_share


def _unit(vectors):
    return tf.math.l2_normalize(tf.cast(vectors, tf.float32), axis=-1)


def _pair_cosines(y_pred) -> tf.Tensor:
    """The cosine of each example's two texts, [batch]."""
    vectors = _unit(y_pred)
    return tf.reduce_sum(vectors[:, 0] * vectors[:, 1], axis=-1)


@keras.saving.register_keras_serializable(package="bert_tf")
class InBatchNegativesLoss(keras.losses.Loss):
    """Cross-entropy of each anchor's positive against the batch's other positives and hard negatives."""

    def __init__(self, scale: float = 20.0, symmetric: bool = False, name: str = "in_batch_negatives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale, self.symmetric = float(scale), bool(symmetric)

    def call(self, y_true, y_pred):
        vectors = global_batch(_unit(y_pred))
        anchors = vectors[:, 0]
        candidates = tf.reshape(tf.transpose(vectors[:, 1:], [1, 0, 2]), [-1, tf.shape(vectors)[-1]])  # positives first
        scores = self.scale * tf.matmul(anchors, candidates, transpose_b=True)  # [batch, batch × (texts - 1)]
        labels = tf.range(tf.shape(anchors)[0])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, scores))
        if self.symmetric:
            backward = self.scale * tf.matmul(vectors[:, 1], anchors, transpose_b=True)
            loss = (loss + tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, backward))) / 2
        return replica_share(loss)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "symmetric": self.symmetric}


@keras.saving.register_keras_serializable(package="bert_tf")
class CoSENTLoss(keras.losses.Loss):
    """log(1 + Σ over pairs scored i > j of exp(scale · (cos_j − cos_i))) (Su, 2022; sentence-transformers)."""

    def __init__(self, scale: float = 20.0, name: str = "cosent", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        cosines = self.scale * global_batch(_pair_cosines(y_pred))
        scores = global_batch(tf.cast(tf.reshape(y_true, [-1]), tf.float32))
        differences = cosines[None, :] - cosines[:, None]  # [i, j]: cos_j − cos_i
        ordered = scores[:, None] > scores[None, :]
        terms = tf.concat([[0.0], tf.boolean_mask(differences, ordered)], axis=0)
        return replica_share(tf.reduce_logsumexp(terms))

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


@keras.saving.register_keras_serializable(package="bert_tf")
class CosineSimilarityLoss(keras.losses.Loss):
    """The mean squared difference of each pair's cosine and its score in [0, 1]."""

    def __init__(self, name: str = "cosine_similarity", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):  # per pair: Keras takes the mean (and each replica's share)
        return tf.square(_pair_cosines(y_pred) - tf.cast(tf.reshape(y_true, [-1]), tf.float32))


@keras.saving.register_keras_serializable(package="bert_tf")
class MatryoshkaLoss(keras.losses.Loss):
    """`loss` summed over the vectors cut to each of `dims` (their first `d` values), as sentence-transformers'."""

    def __init__(self, loss: keras.losses.Loss, dims, name: str = "matryoshka", **kwargs):
        super().__init__(name=name, **kwargs)
        self.loss = keras.losses.get(loss) if isinstance(loss, dict) else loss
        self.dims = tuple(int(dim) for dim in dims)
        if not self.dims or min(self.dims) < 1:
            raise ValueError(f"MatryoshkaLoss: dims must be positive sizes, got {list(dims)}.")

    def call(self, y_true, y_pred):
        size = y_pred.shape[-1]
        if size is not None and max(self.dims) > size:
            raise ValueError(f"MatryoshkaLoss: the size {max(self.dims)} (--matryoshka-dims) is more than the vectors' "
                             f"{size} values.")
        return tf.add_n([self.loss(y_true, y_pred[..., :dim]) for dim in self.dims])

    def get_config(self):
        return {**super().get_config(), "loss": keras.saving.serialize_keras_object(self.loss), "dims": list(self.dims)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["loss"] = keras.saving.deserialize_keras_object(config["loss"])
        return cls(**config)
