"""`BertTaskModel`: what every fine-tuning model shares — an encoder, its saving, and default losses.

Subclasses add a head in `__init__`, compute it in `head` from the encoder output they
read (`encoder_output`: `pooled_output` or `sequence_output`), and name their loss and
metrics in `default_loss()` / `default_metrics()`, which `compile(loss="auto",
metrics="auto")` (the defaults) uses.

Example:
    >>> import bert_tf
    >>> from bert_tf.tasks.classification.model import BertClassifier
    >>> encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> model = BertClassifier(encoder, num_classes=3)
    >>> model.compile(optimizer="adam")  # loss: sparse categorical cross-entropy from logits
    >>> type(model.loss).__name__
    'SparseCategoricalCrossentropy'

Raw strings in, as KerasHub's tasks take them: a task model with a preprocessor (`preprocessor=` a
`bert_tf.BertPreprocessor`; every model loaded from a model directory has its task's; otherwise one
is made from the encoder's vocabulary, `from_pretrained`'s, at `DEFAULT_SEQ_LENGTH` tokens) takes
texts, or pairs, in `fit`, `evaluate`, `predict` and when called (`bert_tf.tasks.text_inputs` says
which values are texts); token ids still work as before. Texts are tokenized in `tf.data` (`fit`,
`evaluate`, `predict`) or in the graph (a call). `predict` on texts returns the task's probabilities
(`probabilities` of each model class), on token ids the raw outputs, as Keras' does. Labels may be
the head's label names (`label_ids`), and `compile()` without arguments uses KerasHub's optimizer (what a
model loaded from its directory is compiled with, so that it trains as loaded).
"""

from __future__ import annotations

import abc

import keras
import numpy as np
import tensorflow as tf

from bert_tf.layers import weight_initializer
from bert_tf.layers.dropout import Dropout
from bert_tf.model import BertModel
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tasks.text_inputs import contains_tensors, text_batches, text_segments
from bert_tf.tokenizer import BertTokenizer

DEFAULT_SEQ_LENGTH = 128  # tokens per text of the preprocessor made from the encoder's vocabulary
DEFAULT_LEARNING_RATE = 5e-5  # compile(optimizer="auto")'s, KerasHub's tasks' own


def softmax(logits) -> np.ndarray:
    """Softmax over the last axis (NumPy, float32)."""
    logits = np.asarray(logits, np.float64)
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (exp / exp.sum(axis=-1, keepdims=True)).astype(np.float32)


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


class BertTaskModel(keras.Model, metaclass=abc.ABCMeta):
    """A Keras model made of a `BertModel` (`encoder`) and a task head."""

    encoder_output = "pooled_output"  # the encoder output the head reads: "pooled_output" or "sequence_output"

    text_padding = "max_length"  # how a batch of texts is padded: "longest" where the outputs do not depend on it
    pairs_refused: str | None = None  # a model of one text per example: why pairs of texts are refused (one line)

    def __init__(self, encoder: BertModel, preprocessor=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(encoder, BertModel):
            raise TypeError(f"{type(self).__name__}: encoder must be a bert_tf.BertModel, got {type(encoder).__name__}.")
        self.encoder = encoder
        self.set_preprocessor(preprocessor)

    def set_preprocessor(self, preprocessor) -> None:
        """Texts are tokenized by `preprocessor` (a `BertPreprocessor`, or any callable from a list of string tensors
        [batch], one per text of an example, to the three id tensors); None: made from the encoder's vocabulary
        when first needed."""
        # Not an attribute Keras tracks: the preprocessor is not saved in the .keras file (a model directory
        # keeps the vocabulary and the task's settings it is made from).
        object.__setattr__(self, "_preprocessor", preprocessor)

    def text_preprocessor(self):
        """The preprocessor of raw-string inputs (`set_preprocessor`); made from the encoder's vocabulary if unset."""
        if self._preprocessor is None:
            vocab_file = getattr(self.encoder, "vocab_file", None)
            if vocab_file is None:
                raise ValueError(f"This {type(self).__name__} has no tokenizer for raw text: give it one "
                                 "(preprocessor=bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), "
                                 "seq_length=128)), load it with bert_tf.load_model_directory, or pass token ids "
                                 "({'input_word_ids': ..., 'input_mask': ..., 'input_type_ids': ...}).")
            seq_length = min(DEFAULT_SEQ_LENGTH, self.encoder.config.max_position_embeddings)
            tokenizer = BertTokenizer(vocab_file, getattr(self.encoder, "lower_case", None))
            self.set_preprocessor(BertPreprocessor(tokenizer, seq_length, padding=self.text_padding))
        return self._preprocessor

    def call(self, inputs, training=None):
        if isinstance(inputs, dict) and inputs["input_word_ids"].shape.rank == 3:
            return self.grouped_call(inputs, training=training)
        if isinstance(inputs, (list, tuple)) or (isinstance(inputs, tf.Tensor) and inputs.dtype == tf.string):
            inputs = self.text_preprocessor()(list(inputs) if isinstance(inputs, (list, tuple)) else [inputs])
        # The encoder's method of that name computes only what the head reads (bert_tf.model.BertModel).
        features = getattr(self.encoder, self.encoder_output)(inputs, training=training)
        return self.head(features, inputs, training=training)

    def grouped_call(self, inputs, training=None):
        """Ids [batch, group, seq] (each example's texts or pairs together, as training on groups feeds them): every
        row through `call` at once, the outputs [batch, group, ...]."""
        shape = tf.shape(inputs["input_word_ids"])
        outputs = self.call({name: tf.reshape(value, [-1, shape[2]]) for name, value in inputs.items()},
                            training=training)
        return tf.reshape(outputs, tf.concat([shape[:2], tf.shape(outputs)[1:]], 0))

    def __call__(self, inputs, *args, **kwargs):
        segments = None if contains_tensors(inputs) else text_segments(inputs)
        self.check_text_pairs(segments)
        if segments is not None:  # Python strings: as string tensors, one per text of an example
            inputs = [tf.constant(segment.astype(str)) for segment in segments]
            inputs = inputs[0] if len(inputs) == 1 else tuple(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def check_text_pairs(self, segments) -> None:
        """Refuses `segments` (`text_segments`' of an input) of pairs where the model reads one text per example."""
        if self.pairs_refused is not None and segments is not None and len(segments) > 1:
            raise ValueError(self.pairs_refused)

    def label_ids(self, labels):
        """`labels` as the loss reads them: label names (strings, of a head that knows its `label_names`) as their
        indices (int32), in one line an error for a name it does not know; any other labels as they are."""
        if labels is None or isinstance(labels, (tf.data.Dataset, dict)) or contains_tensors(labels):
            return labels
        try:
            values = np.asarray(labels)
        except ValueError:  # rows of different lengths: not names
            return labels
        if values.dtype.kind not in "US" and not (values.dtype == object and values.size and
                                                  all(isinstance(value, str) for value in values.flat)):
            return labels
        names, given = getattr(self, "label_names", None), values.astype(str).ravel().tolist()
        if not names or getattr(self, "mode", "single_label") != "single_label":
            raise ValueError(f"{type(self).__name__}: labels {sorted(set(given))[:5]} are names, but this head "
                             + ("has none (label_names=[...])." if not names else f"is {self.mode}: it reads numbers."))
        index = {name: position for position, name in enumerate(names)}
        unknown = sorted(set(given) - set(index))
        if unknown:
            raise ValueError(f"{type(self).__name__}: labels {unknown[:5]} are not among the model's label names "
                             f"{list(names)}.")
        return np.vectorize(index.__getitem__, otypes=[np.int32])(values.astype(str))

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, shuffle=True, validation_data=None,
            validation_batch_size=None, **kwargs):
        """`keras.Model.fit`; `x` may be raw strings (module docstring), `validation_data` too; `y` the label names
        (`label_ids`)."""
        self.check_text_pairs(text_segments(x))
        y = self.label_ids(y)
        batches = text_batches(x, y, sample_weight, self.text_preprocessor, batch_size, shuffle=shuffle)
        if batches is not None:  # shuffled already, if asked
            x, y, sample_weight, batch_size, shuffle = batches, None, None, None, False
        if validation_data is not None:
            validation_x, validation_y, validation_weight = keras.utils.unpack_x_y_sample_weight(validation_data)
            validation_data = keras.utils.pack_x_y_sample_weight(validation_x, self.label_ids(validation_y),
                                                                 validation_weight)
            validation = text_batches(*keras.utils.unpack_x_y_sample_weight(validation_data), self.text_preprocessor,
                                      validation_batch_size or batch_size)
            if validation is not None:
                validation_data, validation_batch_size = validation, None
        return super().fit(x, y, batch_size=batch_size, sample_weight=sample_weight, shuffle=shuffle,
                           validation_data=validation_data, validation_batch_size=validation_batch_size, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate`; `x` may be raw strings (module docstring), `y` the label names (`label_ids`)."""
        self.check_text_pairs(text_segments(x))
        y = self.label_ids(y)
        batches = text_batches(x, y, sample_weight, self.text_preprocessor, batch_size)
        if batches is not None:
            x, y, sample_weight, batch_size = batches, None, None, None
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; for raw strings (module docstring), the task's probabilities (`probabilities`)."""
        self.check_text_pairs(text_segments(x))
        batches = text_batches(x, None, None, self.text_preprocessor, batch_size)
        if batches is None:
            return super().predict(x, batch_size=batch_size, **kwargs)
        return self.probabilities(super().predict(batches, **kwargs))

    def probabilities(self, outputs):
        """The task's probabilities from the model's outputs (NumPy), as `predict` returns them for texts."""
        return outputs

    @abc.abstractmethod
    def head(self, features, inputs, training=None):
        """The task's outputs from `features`, the encoder's `encoder_output` for `inputs`."""

    def add_labelled_head(self, count: int, label_names, dropout: float, count_name: str, features_shape) -> None:
        """The head of a labelling task: `dropout` (a `Dropout`), `classifier` (a dense layer of `count` float32 logits
        on features of `features_shape`) and `label_names` (one per output, or None), checked in one line each."""
        if label_names is not None and len(label_names) != count:
            raise ValueError(f"{type(self).__name__}: got {len(label_names)} label_names for {count_name}={count}: "
                             f"{list(label_names)}.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1), got {dropout!r}.")
        self.label_names = None if label_names is None else [str(name) for name in label_names]
        self.dropout = Dropout(dropout, name="dropout")
        # float32 logits even under a mixed-precision policy, so the loss is computed in float32.
        self.classifier = keras.layers.Dense(count, kernel_initializer=self.head_initializer(), dtype="float32",
                                             name="logits")
        self.classifier.build(features_shape)

    def head_initializer(self) -> keras.initializers.Initializer:
        """The encoder's own weight initializer, for the head's dense layer."""
        return weight_initializer(self.encoder.config)

    @abc.abstractmethod
    def default_loss(self):
        """The loss this task trains with (what `compile(loss="auto")` uses)."""

    @abc.abstractmethod
    def default_metrics(self):
        """The metrics `compile(metrics="auto")` uses."""

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile`, where `loss="auto"` and `metrics="auto"` mean this task's defaults and
        `optimizer="auto"` KerasHub's tasks' (Adam at 5e-5; `bert_tf.create_optimizer` gives BERT's AdamW schedule)."""
        super().compile(
            optimizer=keras.optimizers.Adam(DEFAULT_LEARNING_RATE) if _is_auto(optimizer) else optimizer,
            loss=self.default_loss() if _is_auto(loss) else loss,
            metrics=self.default_metrics() if _is_auto(metrics) else metrics,
            **kwargs,
        )

    def compile_from_config(self, config):
        """Compiles a loaded `.keras` model as it was saved (its config names every loss and metric).

        Keras' own version skips models that override `compile`, which would leave a loaded
        model without its optimizer state.
        """
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)  # so that the saved optimizer variables load into it

    def get_config(self):
        return {**super().get_config(), "encoder": keras.saving.serialize_keras_object(self.encoder)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"))
        return cls(encoder, **config)
