"""`BertModel`: the BERT encoder as one Keras model, read top to bottom in `call`.

Example:
    >>> import numpy as np, bert_tf
    >>> model = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=100))
    >>> outputs = model({"input_word_ids": np.array([[2, 7, 9, 3, 0]]),
    ...                  "input_mask": np.array([[1, 1, 1, 1, 0]])})
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 5, 128), (1, 128))
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.layers import BertEmbeddings, TokenRows, TransformerBlock, weight_initializer

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertModel(keras.Model):
    """The BERT encoder: embeddings, `num_hidden_layers` transformer blocks, and the pooler.

    Inputs: a dict with the TF Hub BERT names, int32 [batch, seq] with seq ≤
    `max_position_embeddings`: `input_word_ids` (required), `input_mask` (1 for real
    tokens; default all ones) and `input_type_ids` (segment ids; default all zeros).

    Outputs: a dict with `sequence_output` [batch, seq, hidden], `pooled_output`
    [batch, hidden], `encoder_outputs` (one [batch, seq, hidden] per block),
    `embedding_output` (the embeddings' output that the first block reads: Hugging Face's
    `hidden_states[0]`) and, when called with `output_attentions=True`, `attention_probs`
    (one [batch, heads, seq, seq] per block).
    """

    # At inference, `pooled_output` and `sequence_output` (what the task heads call) run the blocks on the
    # real tokens only (`TokenRows`). False keeps the padded grid everywhere, e.g. for static shapes; set
    # it before a function using the model is traced.
    skip_padding = True

    def __init__(self, config: BertConfig | None = None, **kwargs):
        super().__init__(**kwargs)
        self.config = config or BertConfig()
        # Set by `from_pretrained` when the checkpoint has them: its vocabulary and casing.
        self.vocab_file = None
        self.lower_case = None
        self.embeddings = BertEmbeddings(self.config, name="embeddings")
        self.blocks = [TransformerBlock(self.config, name=f"layer_{i}") for i in range(self.config.num_hidden_layers)]
        self.pooler = keras.layers.Dense(self.config.hidden_size, activation="tanh",
                                          kernel_initializer=weight_initializer(self.config), name="pooler")
        self.build()

    def build(self, input_shape=None):
        """Creates every weight; the shapes follow from the config alone."""
        self.embeddings.build()
        for block in self.blocks:
            block.build()
        self.pooler.build((None, self.config.hidden_size))
        self.built = True

    def call(self, inputs, training=None, output_attentions=False):
        word_ids, mask, type_ids = self._checked_inputs(inputs)
        embedding_output = hidden_states = self.embeddings(word_ids, type_ids, training=training)
        encoder_outputs, attention_probs = [], []
        for block in self.blocks:
            hidden_states, probs = block(hidden_states, mask, training=training)
            encoder_outputs.append(hidden_states)
            attention_probs.append(probs)
        outputs = {
            "sequence_output": hidden_states,
            "pooled_output": self.pooler(hidden_states[:, 0, :]),
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }
        if output_attentions:
            outputs["attention_probs"] = attention_probs
        return outputs

    def encode_at_positions(self, inputs, positions, training=None):
        """The last block's output at int `positions` [batch, n] only: [batch, n, hidden].

        Equal to gathering `sequence_output` at `positions`, but the last block computes just
        those rows (they still attend to every token). Pre-training reads the encoder only at
        [CLS] and the masked positions, so this saves most of a block's work.
        """
        return self._encode_at(self._checked_inputs(inputs), tf.cast(positions, tf.int32), training, skip_padding=False)

    def pooled_output(self, inputs, training=None):
        """`pooled_output` alone, [batch, hidden]: the last block computes only the [CLS] row.

        Equal to `model(inputs)["pooled_output"]` (for sequences with a real token), for heads
        that read nothing else (`BertClassifier`): it saves most of the last block's work, and
        at inference the work of every padded position (the blocks run on the real tokens
        only, `TokenRows`).
        """
        checked_inputs = self._checked_inputs(inputs)
        cls_position = tf.zeros_like(checked_inputs[0][:, :1])
        return self.pooler(self._encode_at(checked_inputs, cls_position, training, self._skips_padding(training))[:, 0])

    def sequence_output(self, inputs, training=None):
        """`sequence_output` alone, [batch, seq, hidden], for heads that read nothing else
        (`BertTokenClassifier`, `BertSpanLabeler`).

        At inference the blocks run on the real tokens only (`TokenRows`): the outputs equal
        `model(inputs)["sequence_output"]` at real tokens and are zeros at padded positions
        (where the full call's values mean nothing), at the cost of the real tokens alone.
        """
        return self._encode_at(self._checked_inputs(inputs), None, training, self._skips_padding(training))

    def _skips_padding(self, training) -> bool:
        return self.skip_padding and not training

    def _encode_at(self, checked_inputs, positions, training, skip_padding):
        """The last block's output at `positions` [batch, n] (None: [batch, seq, hidden], every position).

        With `skip_padding`, the blocks see the real tokens only (and [CLS]), so `positions` must be
        such tokens. Training keeps the padded grid, whose backward pass then needs no scatters.
        """
        word_ids, mask, type_ids = checked_inputs
        hidden_states = self.embeddings(word_ids, type_ids, training=training)
        token_rows = TokenRows.from_mask(mask) if skip_padding else None
        if token_rows is not None:
            hidden_states = token_rows.gather(hidden_states)
        for block in self.blocks[:-1]:
            hidden_states, _ = block(hidden_states, mask, training=training, token_rows=token_rows)
        outputs, _ = self.blocks[-1](hidden_states, mask, training=training, positions=positions, token_rows=token_rows)
        return token_rows.to_grid(outputs) if token_rows is not None and positions is None else outputs

    def _checked_inputs(self, inputs):
        """The three id tensors as int32, after clear checks of names, shapes and id ranges."""
        if not isinstance(inputs, dict) or "input_word_ids" not in inputs:
            raise ValueError(
                "BertModel takes a dict with 'input_word_ids' (and optionally 'input_mask', 'input_type_ids'); "
                f"got {type(inputs).__name__}" + (f" with keys {sorted(inputs)}" if isinstance(inputs, dict) else
                                                  ". Raw text? Tokenize it with bert_tf.BertPreprocessor, or use a task "
                                                  "model, which takes strings")
            )
        unknown = set(inputs) - set(INPUT_NAMES)
        if unknown:
            raise ValueError(f"BertModel: unknown input names {sorted(unknown)}; expected {list(INPUT_NAMES)}.")
        word_ids = tf.cast(inputs["input_word_ids"], tf.int32)
        if word_ids.shape.rank != 2:
            raise ValueError(f"BertModel: input_word_ids must be [batch, seq], got shape {word_ids.shape}.")
        mask = tf.cast(inputs["input_mask"], tf.int32) if "input_mask" in inputs else tf.ones_like(word_ids)
        type_ids = tf.cast(inputs["input_type_ids"], tf.int32) if "input_type_ids" in inputs else tf.zeros_like(word_ids)
        limit = self.config.max_position_embeddings
        if word_ids.shape[1] is not None and word_ids.shape[1] > limit:
            raise ValueError(
                f"BertModel: sequence length {word_ids.shape[1]} is longer than max_position_embeddings ({limit}); "
                "truncate the input (the preprocessor's seq_length) to at most that."
            )
        checks = [
            tf.debugging.assert_less_equal(
                tf.shape(word_ids)[1], limit, message=f"BertModel: sequence longer than max_position_embeddings ({limit})"
            ),
            tf.debugging.assert_equal(
                tf.shape(mask), tf.shape(word_ids), message="BertModel: input_mask must have the shape of input_word_ids"
            ),
            tf.debugging.assert_equal(
                tf.shape(type_ids), tf.shape(word_ids), message="BertModel: input_type_ids must have the shape of input_word_ids"
            ),
            _assert_in_range(word_ids, self.config.vocab_size, "input_word_ids", "vocab_size"),
            _assert_in_range(type_ids, self.config.type_vocab_size, "input_type_ids", "type_vocab_size"),
        ]
        with tf.control_dependencies([c for c in checks if c is not None]):
            return tf.identity(word_ids), mask, type_ids

    def get_config(self):
        return {**super().get_config(), "config": dataclasses.asdict(self.config)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(BertConfig(**config.pop("config")), **config)

    def google_weights(self) -> dict:
        """Every variable under its name in Google's checkpoints, without the `bert/` prefix."""
        weights = {f"embeddings/{name}": var for name, var in self.embeddings.google_weights().items()}
        for index, block in enumerate(self.blocks):
            weights.update({f"encoder/layer_{index}/{name}": var for name, var in block.google_weights().items()})
        weights["pooler/dense/kernel"] = self.pooler.kernel
        weights["pooler/dense/bias"] = self.pooler.bias
        return weights


def _assert_in_range(ids, size, input_name, config_name):
    """An op that fails with a readable message if any id is outside [0, size)."""
    in_range = tf.logical_and(tf.reduce_min(ids) >= 0, tf.reduce_max(ids) < size)
    return tf.debugging.Assert(in_range, [f"BertModel: {input_name} has ids outside [0, {config_name}={size})"])
