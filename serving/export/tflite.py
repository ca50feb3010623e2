"""`export_tflite`: a bert-tf model directory → a `.tflite` file with token ids or raw text in.

Two kinds of model (`inputs=`), both converted with TFLite's builtin ops only (the pip
interpreters have no Flex delegate, so SELECT_TF_OPS models would not run):
- "ids": signature `serving_default` takes `input_word_ids`, `input_mask`,
  `input_type_ids` (int32 [batch, seq_length]); runs on any TFLite interpreter.
- "text": `serving_default` takes the text inputs (`text`, `text_b`, ... string
  [batch]); a classifier runs on its batch padded to the longest text only, as the SavedModel
  does (encoders answer per token, for `seq_length` tokens); also `preprocess` (text → the three
  ids, padded to `seq_length`) and `serve_ids`. The tokenizer is
  written with the ops tensorflow-text has TFLite kernels for (FastBertNormalize,
  FastWordpieceTokenize, RaggedTensorToTensor), converted as custom ops: run it with
  `InterpreterWithCustomOps(custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)`
  (`serving.tflite_runner` does). See `DenseTextPacker`.
Both have a `model_info` signature (`task`, `seq_length`, `lower_case`, `vocab_size`,
`label_names` for classify/ner, `classifier_mode` for classify) and the outputs of
`serving.export.signatures`.

The text model does NOT use bert_tf's exact tokenizer (its Unicode ops have no TFLite
kernels): tensorflow-text's FastBertNormalizer + FastWordpieceTokenizer agree with it on
ordinary text (every SST-2 dev sentence, see tests/test_tflite.py) but not on rare
characters: compatibility forms are decomposed ("½" → "1⁄2", "Ａ" → "a", "ﬁ" → "fi",
"Ⅻ" → "xii"), "ß" becomes "ss" (case folding), cased models treat zero-width
characters as spaces, and a word longer than 100 UTF-8 bytes (not characters) is `[UNK]`.
Pairs are truncated by the task's `truncation` (`bert_tf.TaskSpec`), as training and the
SavedModel cut them.

NER and SQuAD have no raw-text TFLite model: they read a long input in several windows
(every word tagged; the best answer over all context windows), which needs ragged ops
that TFLite has no kernels for. A one-window text model would silently tag fewer words and
miss answers, so `inputs="text"` is refused for them; their "ids" model runs one window
per row, and the windows come from `bert_tf.tasks.ner.ops` / `bert_tf.tasks.squad.ops` on the host.

Dense packing (`pack_dense`, `segment_counts`, `to_longest`, at the end): token segments packed as
`[CLS] A [SEP] B [SEP] [PAD]...` with dense ops only, where ragged packing
(`tensorflow_text.combine_segments`, ragged slicing) cannot be: in TFLite models, which have no
kernels for RaggedRange or RaggedGather. Each segment comes as a dense [batch, width] tensor of ids
with the count of its tokens to keep per example; `[CLS]`, the kept tokens and one `[SEP]` per
segment are placed by position with gathers and selects, and the rest is padding. `to_longest` then
drops the padding columns no row of the batch needs, as the SavedModel's raw-text signature pads
only to its batch's longest text: a short request costs a short model call.

Quantization: "int8" (TFLite's dynamic-range quantization: int8 weights, per channel; LiteRT's
XNNPACK kernels quantize the activations to int8 row by row as they run, so the matrix
multiplies are int8 × int8 — the fastest CPU path bert-tf has, benchmarks/RESULTS.md; tensors
under 1024 elements stay float32) or "float16" (float16 weights, float32 arithmetic).

Example:
    >>> export_tflite("runs/sst2/model", "sst2.tflite", inputs="text", quantization="int8")  # doctest: +SKIP
    PosixPath('sst2.tflite')
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.model_directory import load_model_directory
from serving.export.signatures import ServingSpec, model_info_function, serve_ids_function, serving_spec, task_outputs
from serving.export.signatures import example_texts, text_input_specs
from serving.tflite_runner import TfliteModel

logger = logging.getLogger(__name__)

INPUT_KINDS = ("ids", "text")
QUANTIZATIONS = ("none", "int8", "float16")
MAX_BYTES_PER_WORD = 100


def export_tflite(
    model_dir: str | Path,
    out_file: str | Path,
    inputs: str = "ids",
    quantization: str = "none",
    seq_length: int | None = None,
) -> Path:
    """Converts the model directory `model_dir` and writes `out_file` (a `.tflite` file, replaced whole)."""
    out = Path(out_file)
    if out.suffix != ".tflite":
        raise ValueError(f"The TFLite output file must end in .tflite, got {out}.")
    spec = serving_spec(load_model_directory(model_dir), seq_length, quantization=_recorded(quantization))
    if inputs == "text" and spec.task_class.windowed:  # raw text needs several windows: no TFLite text model
        raise ValueError(f"A {spec.task} model has no raw-text TFLite export: it reads long inputs in several "
                         "windows, which TFLite cannot run; export --tflite-input ids (one window per row), or serve "
                         "the SavedModel for raw text.")
    return write_tflite(spec, out, inputs, quantization)


def write_tflite(spec: ServingSpec, out: Path, inputs: str, quantization: str) -> Path:
    """Converts `spec`'s model (`convert`) and writes `out` whole, once it has run (`_check_runs`)."""
    content = convert(spec, inputs, quantization)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.{os.getpid()}")
    try:
        staging.write_bytes(content)
        _check_runs(TfliteModel(staging), spec)
        staging.replace(out)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    logger.info("Wrote %s (%s, %s inputs, quantization %s, %d bytes).", out, spec.task, inputs, quantization, len(content))
    return out


def convert(spec: ServingSpec, inputs: str = "ids", quantization: str = "none") -> bytes:
    """The `.tflite` flatbuffer of a model (see the module docstring for `inputs` and `quantization`)."""
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}.")
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}.")
    module, signatures = tflite_module(spec, with_text=inputs == "text")
    with tempfile.TemporaryDirectory(prefix="bert_tf_tflite_") as saved_model:
        # Through a SavedModel: the converter freezes the variables of a loaded SavedModel reliably.
        tf.saved_model.save(module, saved_model, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model, signature_keys=list(signatures))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = inputs == "text"  # the tensorflow-text kernels, registered at run time
        if quantization != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


def _recorded(quantization: str) -> str:
    """The `quantization` that `model_info` reports for a TFLite `quantization` (float16 weights compute in float32)."""
    return "none" if quantization == "float16" else quantization


def _check_runs(model: TfliteModel, spec: ServingSpec) -> None:
    """Runs `serving_default` once, so that an op without a kernel fails the export, not a device."""
    first_id = {"input_word_ids": spec.vocabulary.cls_id, "input_mask": 1, "input_type_ids": 0}
    texts = example_texts(spec, "a")
    inputs = {name: texts[name] if name in texts else [[first_id[name]] + [0] * (spec.seq_length - 1)]
              for name in model.input_names()}
    try:
        model.run(inputs)
    except RuntimeError as error:
        raise ValueError(f"The converted TFLite model does not run: {error}") from None


class DenseTextPacker(tf.Module):
    """Text segments → `input_word_ids`, `input_mask`, `input_type_ids` [batch, seq_length], TFLite-ready.

    tensorflow-text's FastBertNormalizer and FastWordpieceTokenizer (which splits words
    itself) give ragged ids; everything after is dense (`pack_dense`, below), because
    TFLite has no kernels for ragged slicing or concatenation (RaggedRange, RaggedGather):
    each segment is cut and padded with `to_tensor(shape=...)`, and the tokens kept per
    segment are computed from the lengths (`segment_counts`: the task's
    truncation of pairs, as the SavedModel and training cut them).
    """

    def __init__(self, spec: ServingSpec):
        super().__init__(name="dense_text_packer")
        self.spec = spec
        self.budget = spec.seq_length - 1 - len(spec.text_inputs)  # room left by [CLS] and one [SEP] per segment
        self.normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=spec.lower_case)
        self.tokenizer = tf_text.FastWordpieceTokenizer(
            list(spec.vocabulary.tokens),
            token_out_type=tf.int32,
            max_bytes_per_word=MAX_BYTES_PER_WORD,
            no_pretokenization=False,
            support_detokenization=False,
        )

    def __call__(self, texts) -> dict[str, tf.Tensor]:
        pieces = [self.tokenizer.tokenize(self.normalizer.normalize(text)) for text in texts]
        dense = [tokens.to_tensor(self.spec.vocabulary.pad_id, shape=[None, self.budget]) for tokens in pieces]
        lengths = [tf.minimum(tf.cast(tokens.row_lengths(), tf.int32), self.budget) for tokens in pieces]
        kept = segment_counts(lengths, self.budget, self.spec.task_spec.truncation)
        return pack_dense(dense, kept, self.spec.seq_length, self.spec.vocabulary)


def tflite_module(spec: ServingSpec, with_text: bool) -> tuple[tf.Module, dict]:
    """The module to convert and its signatures; see the module docstring."""
    module = tf.Module(name="bert_tf_tflite")
    # The tf.Variables themselves (see serving.export.saved_model.build_serving_module).
    module.model_variables = [variable.value for variable in spec.model.variables]

    serve_ids = serve_ids_function(spec)

    signatures = {"model_info": model_info_function(spec).get_concrete_function()}
    if not with_text:
        signatures["serving_default"] = serve_ids.get_concrete_function()
        return module, signatures

    module.packer = DenseTextPacker(spec)

    text_serving = spec.task_class.text_serving_class  # the model rows of the inputs, the outputs per example

    @tf.function(input_signature=text_input_specs(spec))
    def serve_text(*texts):
        ids = module.packer(text_serving.model_rows(list(texts)))
        # As the SavedModel: a classifier's batch is padded to its longest text only; encoders answer per token.
        outputs = task_outputs(spec, to_longest(ids) if spec.task_class.text_padding == "longest" else ids)
        return text_serving.per_example(outputs, list(texts))

    @tf.function(input_signature=text_input_specs(spec))
    def preprocess(*texts):
        return text_serving.per_example(module.packer(text_serving.model_rows(list(texts))), list(texts))

    signatures.update(
        serving_default=serve_text.get_concrete_function(),
        preprocess=preprocess.get_concrete_function(),
        serve_ids=serve_ids.get_concrete_function(),
    )
    return module, signatures


def pack_dense(segments: list[tf.Tensor], counts: list[tf.Tensor], seq_length: int, vocabulary) -> dict[str, tf.Tensor]:
    """The three int32 [batch, seq_length] id tensors; segment i keeps its first `counts[i]` tokens [batch].

    The counts must leave room for `[CLS]` and the `[SEP]`s (the caller truncates).

    Example:
        >>> ids = pack_dense([tf.constant([[7, 8, 9]]), tf.constant([[5, 0, 0]])],
        ...                  [tf.constant([2]), tf.constant([1])], seq_length=8, vocabulary=vocabulary)  # doctest: +SKIP
        >>> ids["input_word_ids"].numpy().tolist(), ids["input_type_ids"].numpy().tolist()  # doctest: +SKIP
        ([[101, 7, 8, 102, 5, 102, 0, 0]], [[0, 0, 0, 0, 1, 1, 0, 0]])
    """
    positions = tf.range(seq_length)[tf.newaxis, :]
    word_ids = tf.fill([tf.shape(segments[0])[0], seq_length], vocabulary.pad_id)
    word_ids = tf.where(positions == 0, vocabulary.cls_id, word_ids)
    type_ids = tf.zeros_like(word_ids)
    start = tf.ones_like(counts[0])[:, tf.newaxis]  # where the current segment begins: after [CLS]
    for index, (segment, count) in enumerate(zip(segments, counts)):
        count = tf.cast(count, tf.int32)[:, tf.newaxis]
        offset = positions - start
        inside = tf.logical_and(offset >= 0, offset < count)
        width = tf.shape(segment)[1]
        taken = tf.gather(segment, tf.clip_by_value(offset, 0, tf.maximum(width - 1, 0)), batch_dims=1)
        word_ids = tf.where(inside, taken, word_ids)
        word_ids = tf.where(offset == count, vocabulary.sep_id, word_ids)
        type_ids = tf.where(tf.logical_and(offset >= 0, offset <= count), index, type_ids)
        start += count + 1
    return {
        "input_word_ids": word_ids,
        "input_mask": tf.cast(positions < start, tf.int32),
        "input_type_ids": type_ids,
    }


def segment_counts(lengths: list[tf.Tensor], budget: int, truncation: str) -> list[tf.Tensor]:
    """Tokens kept per segment (one or two, int32 [batch] each) under `truncation`, exactly as
    `bert_tf.BertPreprocessor` keeps them (tested against it on every pair of lengths up to a budget)."""
    if len(lengths) == 1:
        return [tf.minimum(lengths[0], budget)]
    first, second = lengths
    if truncation == "waterfall":  # the last segment is cut first
        kept_first = tf.minimum(first, budget)
        return [kept_first, tf.minimum(second, budget - kept_first)]
    if truncation == "round_robin":  # one token per segment in turn, the first segment first
        return [tf.minimum(first, tf.maximum((budget + 1) // 2, budget - second)),
                tf.minimum(second, tf.maximum(budget // 2, budget - first))]
    # longest_first: the longer segment loses a token until both fit; halves when both exceed half
    # the budget, the odd token to the longer one (to the second on a tie).
    first_longer = first > second
    return [tf.minimum(first, tf.maximum(budget - second, tf.where(first_longer, (budget + 1) // 2, budget // 2))),
            tf.minimum(second, tf.maximum(budget - first, tf.where(first_longer, budget // 2, (budget + 1) // 2)))]


def to_longest(ids: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The id tensors cut to the longest row of the batch (the most `input_mask` ones; at least 1 column)."""
    longest = tf.maximum(tf.reduce_max(tf.reduce_sum(ids["input_mask"], axis=1)), 1)
    return {name: value[:, :longest] for name, value in ids.items()}
