"""`BertPretrainer`: the encoder with BERT's masked-LM and next-sentence heads, and their loss.

It trains with plain `model.fit` (one device or `MirroredStrategy`) on batches of the
pre-training features, and with `bert_tf.training.run_pretraining`'s custom loop (which
multi-worker training needs).

Example:
    >>> import bert_tf
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> pretrainer = bert_tf.BertPretrainer(encoder)
    >>> pretrainer.compile(optimizer="adam")
    >>> # pretrainer.fit(features_dataset)   # batches of PRETRAINING_FEATURES, no labels
"""

from __future__ import annotations

import logging

import keras
import tensorflow as tf

from bert_tf.checkpoints import assign_weights, read_checkpoint
from bert_tf.layers.initializer import weights_loaded_next
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.layers.next_sentence_head import NextSentenceHead
from bert_tf.model import INPUT_NAMES, BertModel
from bert_tf.replicas import all_replicas_sum

logger = logging.getLogger(__name__)

# The feature names of google-research/bert's pre-training data.
PRETRAINING_FEATURES = INPUT_NAMES + (
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


@tf.function(jit_compile=True)
def vocabulary_cross_entropy(labels, logits):
    """Cross-entropy of each row of `logits` [..., vocab] against its integer label: logsumexp − label's logit.

    The same numbers as `tf.nn.sparse_softmax_cross_entropy_with_logits`, but XLA fuses the
    forward and backward passes over the large [positions, vocab] logits: 1.8x faster on a
    CPU for mini's 640 x 30,522 logits, about 4% of a mini pre-training step. The label's
    logit is picked with a one-hot product, not a gather: inside a train step that is itself
    compiled with XLA, the gather's gradient (a scatter) made the step 10x slower.
    """
    label_logits = tf.reduce_sum(logits * tf.one_hot(tf.cast(labels, tf.int32), tf.shape(logits)[-1], dtype=logits.dtype), -1)
    return tf.reduce_logsumexp(logits, axis=-1) - label_logits


def loss_denominators(features):
    """(sum of `masked_lm_weights`, number of examples), both over the global batch of all replicas.

    A synchronisation point between replicas: call it outside any XLA-compiled function.
    """
    weight_sum = all_replicas_sum(tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)))
    batch_size = all_replicas_sum(tf.cast(tf.shape(features["input_word_ids"])[0], tf.float32))
    return weight_sum, batch_size


def pretraining_losses(features, outputs, denominators):
    """BERT's two losses, each as this replica's share of the loss over the global batch.

    Masked LM: cross-entropy at the masked positions, weighted by `masked_lm_weights`
    (0 marks padding predictions), divided by the global sum of weights. Next sentence:
    cross-entropy divided by the global batch size. Summing the shares over replicas
    gives the single-device loss, so gradients are the same on 1 or N devices.
    `denominators` comes from `loss_denominators(features)`.
    """
    weight_sum, batch_size = denominators
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    mlm_cross_entropy = vocabulary_cross_entropy(features["masked_lm_ids"], outputs["mlm_logits"])
    mlm_loss = tf.reduce_sum(mlm_cross_entropy * weights) / (weight_sum + 1e-5)
    labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    nsp_cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=outputs["nsp_logits"])
    return mlm_loss, tf.reduce_sum(nsp_cross_entropy) / batch_size


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(keras.Model):
    """Masked LM + next-sentence prediction on top of a `BertModel`.

    Inputs: a dict with `PRETRAINING_FEATURES` (the three encoder inputs,
    `masked_lm_positions` [batch, predictions] and, for the loss, `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels` [batch] or [batch, 1]).
    Outputs: `mlm_logits` [batch, predictions, vocab] and `nsp_logits` [batch, 2], float32.
    Metrics: loss, mlm_loss, nsp_loss, mlm_accuracy, nsp_accuracy.
    """

    def __init__(self, encoder: BertModel, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.masked_lm = MaskedLMHead(encoder.config, name="masked_lm")
        self.next_sentence = NextSentenceHead(encoder.config, name="next_sentence")
        self.masked_lm.build()
        self.next_sentence.build()
        self.built = True  # every weight exists now; nothing depends on the input shape
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
        self.mlm_accuracy_tracker = keras.metrics.Mean(name="mlm_accuracy")
        self.nsp_accuracy_tracker = keras.metrics.Mean(name="nsp_accuracy")

    def call(self, inputs, training=None):
        # The heads read the encoder at [CLS] (through the pooler) and at the masked positions only,
        # so the last block computes just those rows (`BertModel.encode_at_positions`).
        masked_positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
        positions = tf.concat([tf.zeros_like(masked_positions[:, :1]), masked_positions], axis=1)
        encoder_inputs = {name: inputs[name] for name in INPUT_NAMES if name in inputs}
        states = self.encoder.encode_at_positions(encoder_inputs, positions, training=training)
        word_embeddings = self.encoder.embeddings.word_embeddings.embeddings
        return {
            "mlm_logits": self.masked_lm(states[:, 1:], word_embeddings),
            "nsp_logits": self.next_sentence(self.encoder.pooler(states[:, 0])),
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """MLM + NSP loss from the features in `x` (the labels travel with the inputs; `y` is unused)."""
        return self.loss_and_metrics(x, y_pred, loss_denominators(x))

    def loss_and_metrics(self, x, y_pred, denominators):
        """This replica's share of the MLM + NSP loss; updates the loss and accuracy metrics."""
        mlm_loss, nsp_loss = pretraining_losses(x, y_pred, denominators)
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        # Trackers average over replicas, so each gets its share scaled back to the global value.
        self.mlm_loss_tracker.update_state(mlm_loss * replicas)
        self.nsp_loss_tracker.update_state(nsp_loss * replicas)
        weights = tf.cast(x["masked_lm_weights"], tf.float32)
        # tf.equal, not ==: `==` gives a result of unknown rank when the batch sizes are not both static.
        mlm_predictions = tf.argmax(y_pred["mlm_logits"], -1, output_type=tf.int32)
        mlm_correct = tf.cast(tf.equal(mlm_predictions, tf.cast(x["masked_lm_ids"], tf.int32)), tf.float32)
        self.mlm_accuracy_tracker.update_state(mlm_correct, sample_weight=weights)
        labels = tf.reshape(tf.cast(x["next_sentence_labels"], tf.int32), [-1])
        self.nsp_accuracy_tracker.update_state(
            tf.cast(tf.equal(tf.argmax(y_pred["nsp_logits"], -1, output_type=tf.int32), labels), tf.float32)
        )
        return mlm_loss + nsp_loss

    def google_weights(self) -> dict:
        """Every variable under its name in Google's checkpoints (encoder without `bert/`, heads with `cls/`)."""
        weights = dict(self.encoder.google_weights())
        weights.update({f"cls/predictions/{n}": v for n, v in self.masked_lm.google_weights().items()})
        weights.update({f"cls/seq_relationship/{n}": v for n, v in self.next_sentence.google_weights().items()})
        return weights

    @classmethod
    def from_pretrained(cls, path_or_preset) -> "BertPretrainer":
        """A pretrainer from any checkpoint `bert_tf.read_checkpoint` reads.

        The heads are loaded too when the checkpoint has them (Google's and Hugging Face's
        pre-training checkpoints do); otherwise they start from random values (logged).
        """
        contents = read_checkpoint(path_or_preset)
        with weights_loaded_next(every_weight=bool(contents.head_weights())):
            pretrainer = cls(BertModel(contents.config))
        variables = pretrainer.google_weights()
        if not contents.head_weights():
            logger.warning("%s has no pre-training heads (cls/*); they start from random values.", contents.source)
            variables = pretrainer.encoder.google_weights()
        assign_weights(variables, contents, what="BertPretrainer")
        pretrainer.encoder.vocab_file = contents.vocab_file
        pretrainer.encoder.lower_case = contents.lower_case
        return pretrainer

    def get_config(self):
        return {**super().get_config(), "encoder": keras.saving.serialize_keras_object(self.encoder)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(keras.saving.deserialize_keras_object(config.pop("encoder")), **config)
