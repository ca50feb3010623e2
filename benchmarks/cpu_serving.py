"""The fastest way to serve BERT on a CPU: bert_tf's serving paths against ONNX Runtime and OpenVINO.

One BERT-base classifier (2 classes, seeded random weights) is saved as a bert-tf model directory
and served every way this machine offers, every one holding exactly the same weights:
- bert_tf: `inference_function` in process (float32, and bfloat16 through
  `bert_tf.precision.with_precision`); the SavedModel of `serving.export.saved_model.export_saved_model`,
  float32 and `quantize="bf16"`; LiteRT float32 and int8 (`serving.export.tflite.export_tflite`,
  ids in, run by `serving.tflite_runner.TfliteModel`); and the int8 version `bert-tf serve`
  serves (`export_saved_model(..., quantize="int8")`: `model.tflite`, raw text in).
- ONNX Runtime: transformers' `BertForSequenceClassification` with the same weights, exported to
  ONNX (`benchmarks.contenders.export_onnx`) and fused by `onnxruntime.transformers.optimizer`
  (float32), and that graph with int8 weights from `onnxruntime.quantization.quantize_dynamic`.
- OpenVINO: the unfused ONNX graph compiled for the CPU, float32 and (on CPUs with bfloat16 units)
  bf16. Its int8 needs NNCF's calibration: measured only when `nncf` is installed.

First table: 8 sequences of 128 tokens, sent one at a time (batch 1) and as one batch of 8: the
first 8 SST-2 dev sentences padded to 128 (realistic attention masks; random ids when the data is
absent), and 128 real tokens (random ids). Second table: the first 200 dev sentences one at a time,
text in on every side, as a user of each would serve it: bert-tf's raw-text exports (the SavedModels'
`serving_default`, the float32 raw-text `.tflite` and the int8 `model.tflite`, tokenizing in their
graph) against every ids graph fed by the Rust tokenizer (`tokenizers.BertWordPieceTokenizer`, the same
vocabulary) at the sentence's own length, its time included; the LiteRT ids models take 128 tokens
only, and run padded. Each input set is one
interleaved run of every contender (`benchmarks.harness.interleaved`); every row gives its largest
logit difference from bert_tf's float32 `inference_function` on the same inputs. The real-length table
also times bert_tf's dense products alone (`benchmarks.inference.projections_only`, float32 and bfloat16, the
same weights at each sentence's length): no encoder built from TensorFlow's kernels runs faster than that.
ONNX Runtime and OpenVINO (a benchmark-only extra, like torch and transformers for the export)
are skipped with a message when they cannot be imported. Last, the kernels each real-length contender ran
and their instruction sets (`benchmarks.kernels_used`: perf samples, oneDNN's verbose log), so that a reader
knows which figures apply to their CPU. Run under `benchmarks.avx2_only` for an AVX2-only CPU's figures.

    python -m benchmarks.run --only cpu_serving
"""

from __future__ import annotations

import collections
import importlib.metadata
import importlib.util
import itertools
import tempfile
from pathlib import Path
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.contenders import HF_INPUT_NAMES, export_onnx, random_ids, torch_classifier
from benchmarks.data import sst2
from benchmarks.harness import Contender, Timing, interleaved, rate_cell, ratio, usable_cores
from benchmarks.inference import projections_only
from benchmarks.kernels_used import hottest_kernels, onednn_kernels, product_kernels
from benchmarks.machine import machine_info
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.inference import inference_function
from bert_tf.precision import with_precision

NAME = "cpu_serving"
SEQ_LENGTH = 128
BATCH_SIZE = 8
REAL_LENGTH_SENTENCES = 200
TOLERANCE = 1e-5  # largest logit difference allowed between bert_tf and its transformers copy (float32)

OURS = "bert_tf inference_function, float32"
OURS_BF16 = "bert_tf inference_function, bfloat16"
SAVED_IDS = "SavedModel serve_ids, float32"
SAVED_IDS_BF16 = 'SavedModel serve_ids, quantize="bf16"'
SAVED_TEXT = "SavedModel serving_default (raw text in), float32"
SAVED_TEXT_BF16 = 'SavedModel serving_default (raw text in), quantize="bf16"'
SERVED_INT8 = 'model.tflite of quantize="int8" (raw text in)'
TEXT_TFLITE = "raw-text .tflite, float32 (raw text in)"
LITERT = "LiteRT float32"
LITERT_INT8 = "LiteRT int8 (dynamic range)"
ORT = "ONNX Runtime float32, fused"
ORT_INT8 = "ONNX Runtime int8 dynamic (fused, quantize_dynamic)"
OPENVINO = "OpenVINO float32"
OPENVINO_BF16 = "OpenVINO bf16"
OPENVINO_INT8 = "OpenVINO int8 (NNCF post-training quantization)"
CEILING = "bert_tf float32, its dense products alone (a ceiling, not BERT)"
CEILING_BF16 = "bert_tf bfloat16, its dense products alone (a ceiling, not BERT)"
CEILINGS = (CEILING, CEILING_BF16)  # real-length rows whose outputs are not logits
FLOAT32 = (OURS, SAVED_IDS, SAVED_TEXT, LITERT, ORT, OPENVINO)
FIXED_LENGTH = (SAVED_IDS, SAVED_IDS_BF16, LITERT, LITERT_INT8)  # graphs whose ids are [batch, 128]
FUSED_OPS = ("EmbedLayerNormalization", "Attention", "BiasGelu", "FastGelu", "SkipLayerNormalization")
NO_OPENVINO_INT8 = ("OpenVINO int8 is not measured: OpenVINO quantizes an ONNX graph to int8 only through NNCF's "
                    "post-training quantization (`nncf.quantize` with calibration data), and nncf is not installed "
                    "(not part of this project's stack).")
OPENVINO_INT8_CALIBRATION = ("OpenVINO int8 (NNCF) is calibrated on the inputs of the first table (the weights are "
                             "random: only speed and the logit difference are at stake).")
VERSIONS = ("tensorflow", "ai-edge-litert", "torch", "transformers", "onnx", "onnxruntime", "openvino")

Features = dict[str, np.ndarray]  # bert_tf's three int32 [batch, seq] inputs
Predict = Callable[[Features], np.ndarray]  # features → float32 logits [batch, classes]


def missing(*modules: str) -> list[str]:
    """The modules among `modules` that cannot be imported."""
    return [module for module in modules if importlib.util.find_spec(module) is None]


def saved_classifier(config: bert_tf.BertConfig, vocab_file: Path, directory: Path):
    """A seeded random `BertClassifier` of `config` and the bert-tf model directory it is saved as."""
    keras.utils.set_random_seed(0)
    classifier = bert_tf.BertClassifier(bert_tf.BertModel(config), num_classes=2)
    model_dir = bert_tf.save_pretrained(classifier, directory, vocab_file=vocab_file, lower_case=True,
                                        task="classify", seq_length=SEQ_LENGTH)
    return classifier, model_dir


def bert_tf_predictors(classifier, model_dir: Path, scratch: Path, threads: int) -> tuple[dict[str, Predict], dict]:
    """bert_tf's ways, {name: predict}, and its raw-text exports {name: texts → logits}."""
    from serving.export.saved_model import export_saved_model
    from serving.export.tflite import export_tflite
    from serving.tflite_runner import TfliteModel

    in_process = {OURS: inference_function(classifier),
                  OURS_BF16: inference_function(with_precision(classifier, "bfloat16"))}
    saved = {quantize: tf.saved_model.load(str(export_saved_model(model_dir, scratch / "serving", quantize,
                                                                  quantize=quantize)))
             for quantize in ("none", "bf16")}
    litert = {name: TfliteModel(export_tflite(model_dir, scratch / f"{quantization}.tflite", inputs="ids",
                                              quantization=quantization), num_threads=threads)
              for name, quantization in ((LITERT, "none"), (LITERT_INT8, "int8"))}

    def tensors(features: Features) -> dict[str, tf.Tensor]:
        return {name: tf.constant(value) for name, value in features.items()}

    predictors = {name: (lambda features, f=function: f(tensors(features)).numpy())
                  for name, function in in_process.items()}
    for name, quantize in ((SAVED_IDS, "none"), (SAVED_IDS_BF16, "bf16")):
        signature = saved[quantize].signatures["serve_ids"]
        predictors[name] = lambda features, s=signature: s(**tensors(features))["logits"].numpy()
    for name, model in litert.items():
        predictors[name] = lambda features, m=model: m.run(features)["logits"]
    text_predictors = {name: (lambda texts, s=saved[quantize].signatures["serving_default"]:
                              s(text=tf.constant(texts))["logits"].numpy())
                       for name, quantize in ((SAVED_TEXT, "none"), (SAVED_TEXT_BF16, "bf16"))}
    served_int8 = TfliteModel(export_saved_model(model_dir, scratch / "serving", "int8", quantize="int8")
                              / "model.tflite", num_threads=threads)
    text_predictors[SERVED_INT8] = lambda texts: served_int8.run({"text": texts})["logits"]
    text_tflite = TfliteModel(export_tflite(model_dir, scratch / "text.tflite", inputs="text"), num_threads=threads)
    text_predictors[TEXT_TFLITE] = lambda texts: text_tflite.run({"text": texts})["logits"]
    return predictors, text_predictors


def ceilings(classifier) -> dict[str, Predict]:
    """bert_tf's dense products alone (float32 and bfloat16), {name: features → the [CLS] row of their output}."""
    functions = {CEILING: projections_only(classifier.encoder),
                 CEILING_BF16: projections_only(with_precision(classifier, "bfloat16").encoder)}
    return {name: (lambda features, f=function: f({key: tf.constant(value) for key, value in features.items()})
                   [:, 0].numpy())
            for name, function in functions.items()}


def checked_torch_classifier(classifier, directory: Path, samples):
    """transformers' copy of `classifier` with eager attention (`torch_classifier`), checked to give its
    logits on each of `samples` within TOLERANCE."""
    import torch

    model = torch_classifier(classifier, directory, attention="eager")
    reference = inference_function(classifier)
    for features in samples:
        with torch.inference_mode():
            theirs = model(**{HF_INPUT_NAMES[name]: torch.from_numpy(value.astype(np.int64))
                              for name, value in features.items()}).logits.numpy()
        ours = reference({name: tf.constant(value) for name, value in features.items()}).numpy()
        difference = np.abs(theirs - ours).max()
        if difference > TOLERANCE:
            raise RuntimeError(f"cpu_serving: transformers' copy of the classifier differs from bert_tf's by "
                               f"{difference:.2e} (> {TOLERANCE}).")
    return model


def onnx_runtime_files(plain: Path, config: bert_tf.BertConfig) -> tuple[dict[str, Path], dict[str, int]]:
    """ONNX Runtime's graphs of the ONNX file `plain`: {ORT: fused float32, ORT_INT8: fused with int8
    weights}, and the fused graph's counts of fused operators."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(str(plain), model_type="bert", num_heads=config.num_attention_heads,
                               hidden_size=config.hidden_size)
    fused, int8 = plain.with_name("fused.onnx"), plain.with_name("int8.onnx")
    optimized.save_model_to_file(str(fused))
    quantize_dynamic(str(fused), str(int8), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    counts = {op: count for op, count in optimized.get_fused_operator_statistics().items() if count}
    return {ORT: fused, ORT_INT8: int8}, counts


def onnx_runtime_predictors(files: dict[str, Path], threads: int) -> dict[str, Predict]:
    """ONNX Runtime sessions (CPU, `threads` intra-op threads) of {name: ONNX file}."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    sessions = {name: onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                for name, path in files.items()}
    return {name: lambda features, s=session: s.run(["logits"], _onnx_inputs(features))[0]
            for name, session in sessions.items()}


def openvino_predictors(plain_onnx: Path, threads: int,
                        calibration: list[Features]) -> tuple[dict[str, Predict], list[str], dict[str, str]]:
    """OpenVINO's compiled models of the unfused graph: float32, bf16 (if the CPU has it), int8 (if NNCF
    is installed: calibrated on `calibration`); OpenVINO's list of the CPU's capabilities; and the kernels of
    each model's dense layers (`openvino_dense_kernels`)."""
    import openvino

    core = openvino.Core()
    capabilities = list(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    models = {OPENVINO: (plain_onnx, "f32")}
    if "BF16" in capabilities:
        models[OPENVINO_BF16] = (plain_onnx, "bf16")
    if not missing("nncf"):
        models[OPENVINO_INT8] = (nncf_int8(core.read_model(str(plain_onnx)), calibration), "f32")
    predictors, kernels = {}, {}
    for name, (model, precision) in models.items():
        compiled = core.compile_model(model if isinstance(model, openvino.Model) else str(model), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY"})
        request, logits = compiled.create_infer_request(), compiled.output("logits")
        predictors[name] = lambda features, r=request, out=logits: r.infer(_onnx_inputs(features))[out]
        kernels[name] = openvino_dense_kernels(compiled)
    return predictors, capabilities, kernels


def openvino_dense_kernels(compiled) -> str:
    """OpenVINO's own account of a compiled model's dense layers: "<kernel> ×<count>" per kernel it picked."""
    infos = [op.get_rt_info() for op in compiled.get_runtime_model().get_ordered_ops()]  # values: OVAny, read by astype
    kinds = collections.Counter(info["primitiveType"].astype(str) for info in infos
                                if info["layerType"].astype(str) in ("FullyConnected", "MatMul"))
    return ", ".join(f"{kind} ×{count}" for kind, count in kinds.most_common())


def nncf_int8(model, calibration: list[Features]):
    """An OpenVINO model quantized to int8 (weights and activations) by NNCF, calibrated on `calibration`."""
    import nncf

    dataset = nncf.Dataset([_onnx_inputs(features) for features in calibration])
    return nncf.quantize(model, dataset, model_type=nncf.ModelType.TRANSFORMER, subset_size=len(calibration))


def _onnx_inputs(features: Features) -> dict[str, np.ndarray]:
    """bert_tf's features under the ONNX graph's names, as int64."""
    return {HF_INPUT_NAMES[name]: value.astype(np.int64) for name, value in features.items()}


def rows_of(features: Features) -> list[Features]:
    """One request per row of a batch."""
    return [{name: value[i:i + 1] for name, value in features.items()} for i in range(len(features["input_word_ids"]))]


def fixed_length_sets(sentences: list[str] | None, preprocess, config) -> dict[str, Features]:
    """{kind: 8 sequences of 128 tokens}: SST-2 sentences padded to 128 (when there are sentences),
    and 128 real tokens (random ids)."""
    ids = random_ids(config, BATCH_SIZE, SEQ_LENGTH)
    sets = {f"{SEQ_LENGTH} real tokens (random ids)": {
        "input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}}
    if sentences is not None:
        sets = {f"SST-2 padded to {SEQ_LENGTH}": preprocess(sentences[:BATCH_SIZE]), **sets}
    return sets


def timed(predictors: dict[str, Predict], calls: dict[str, list]) -> tuple[list[Contender], dict[str, np.ndarray]]:
    """A contender per predictor running it over its `calls[name]` (the inputs of one round's calls),
    and the logits of one such run (which warms it up)."""
    contenders, logits = [], {}
    for name, predict in predictors.items():

        def run(predict=predict, inputs=calls[name]):
            return np.concatenate([np.asarray(predict(features), np.float32) for features in inputs])

        logits[name] = run()
        contenders.append(Contender(name, run, items=len(logits[name])))
    return contenders, logits


def table_rows(timings: dict[str, Timing], logits: dict[str, np.ndarray], prefix: list[str]) -> list[list[str]]:
    """Rate, ratios to ONNX Runtime int8 and to bert_tf float32, and logit difference from bert_tf float32."""
    rows = []
    for name, timing in timings.items():
        versus_ort = f"{ratio(timings, name, ORT_INT8):.2f}" if ORT_INT8 in timings else ""
        difference = "—" if name in CEILINGS else f"{np.abs(logits[name] - logits[OURS]).max():.1e}"
        rows.append([*prefix, name, rate_cell(timing, 2), versus_ort, f"{ratio(timings, name, OURS):.2f}", difference])
    return rows


def fastest(timings: dict[str, Timing]) -> str:
    """The fastest contender, and the fastest float32 one when that is another, with their median rates."""
    best = max((name for name in timings if name not in CEILINGS), key=lambda name: timings[name].median)
    best_float32 = max((name for name in FLOAT32 if name in timings), key=lambda name: timings[name].median)
    text = f"{best} ({timings[best].median:.1f}/s)"
    if best == best_float32:
        return text
    return f"{text}; in float32: {best_float32} ({timings[best_float32].median:.1f}/s)"


def run(settings: Settings) -> BenchmarkResult:
    title = f"## Serving BERT on a CPU{' (quick: tiny model)' if settings.quick else ', BERT-base classifier'}"
    if not settings.vocab_file.exists():
        message = f"vocabulary not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    dev_file = settings.data_file("sst2", "dev.tsv")
    sentences = sst2(dev_file, 16 if settings.quick else REAL_LENGTH_SENTENCES)[0] if dev_file else None
    config = settings.config("base")
    threads = usable_cores()
    tokenizer = bert_tf.BertTokenizer(settings.vocab_file, lower_case=True)

    def preprocess(texts) -> Features:
        layer = bert_tf.BertPreprocessor(tokenizer, seq_length=SEQ_LENGTH)
        return {name: value.numpy() for name, value in layer(tf.constant(texts)).items()}

    sets = fixed_length_sets(sentences, preprocess, config)
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        classifier, model_dir = saved_classifier(config, settings.vocab_file, scratch / "model")
        predictors, text_predictors = bert_tf_predictors(classifier, model_dir, scratch, threads)
        others, setup = other_runtimes(classifier, scratch, threads, sets)
        predictors.update(others)
        fixed = {}
        for kind, features in sets.items():
            for batch, calls in ((1, rows_of(features)), (BATCH_SIZE, [features])):
                description = f"{kind}, batch {batch}"
                contenders, logits = timed(predictors, dict.fromkeys(predictors, calls))
                fixed[description] = (interleaved(contenders, settings.rounds, warmup=1,
                                                  max_seconds=settings.max_seconds, description=description), logits)
        real = None
        if sentences is not None:
            real = real_length_run({**predictors, **ceilings(classifier)}, text_predictors, sentences,
                                   settings.vocab_file, settings)

    setup.update(threads=threads, hidden_act=config.hidden_act, versions={p: _version(p) for p in VERSIONS},
                 onednn=onednn_kernels())
    return report(title, setup, fixed, real, settings)


def other_runtimes(classifier, scratch: Path, threads: int,
                   samples: dict[str, Features]) -> tuple[dict[str, Predict], dict]:
    """ONNX Runtime's and OpenVINO's predictors of `classifier` (those that can be imported), and what
    they reported: {"fused_operators", "openvino_capabilities", "openvino_kernels", "notes"}. `samples`: inputs to check
    the transformers copy on, and to calibrate OpenVINO's int8 on."""
    runtimes = [module for module in ("onnxruntime", "openvino") if not missing(module)]
    absent = missing("torch", "transformers", "onnx", "onnxruntime", "openvino")
    notes = [f"Not importable here: {', '.join(absent)}; the rows that need them are left out."] if absent else []
    notes.append(NO_OPENVINO_INT8 if missing("nncf") else OPENVINO_INT8_CALIBRATION)
    predictors, setup = {}, {"fused_operators": {}, "openvino_capabilities": [], "openvino_kernels": {}, "notes": notes}
    if not runtimes or missing("torch", "transformers", "onnx"):
        return predictors, setup
    plain = export_onnx(checked_torch_classifier(classifier, scratch / "hf", samples.values()), scratch / "plain.onnx")
    if "onnxruntime" in runtimes:
        files, setup["fused_operators"] = onnx_runtime_files(plain, classifier.encoder.config)
        predictors.update(onnx_runtime_predictors(files, threads))
    if "openvino" in runtimes:
        calibration = [row for features in samples.values() for row in rows_of(features)]
        openvino, setup["openvino_capabilities"], setup["openvino_kernels"] = openvino_predictors(plain, threads,
                                                                                                   calibration)
        predictors.update(openvino)
    return predictors, setup


def real_length_run(predictors: dict[str, Predict], text_predictors: dict, sentences: list[str], vocab_file: Path,
                    settings: Settings) -> tuple[dict[str, Timing], dict[str, np.ndarray], float, dict]:
    """Each sentence alone, text in on every side: the raw-text exports on its text, every ids graph behind the
    Rust tokenizer (the fixed-length ones padded to 128); timings, logits, the mean token count, and the kernels
    each contender ran (`benchmarks.kernels_used.hottest_kernels`, after the timed rounds)."""
    tokenize = rust_tokenizer(vocab_file)
    dynamic = {name: predict for name, predict in predictors.items() if name not in (SAVED_IDS, SAVED_IDS_BF16)}
    for name, predict in list(dynamic.items()):
        dynamic[name] = lambda texts, p=predict, fixed=name in FIXED_LENGTH: p(tokenize(texts[0], fixed))
    dynamic.update(text_predictors)
    calls = {name: [[sentence] for sentence in sentences] for name in dynamic}
    contenders, logits = timed(dynamic, calls)  # the first run of each is the warm-up
    timings = interleaved(contenders, settings.rounds, warmup=0, max_seconds=settings.max_seconds,
                          description="real lengths")
    mean_tokens = float(np.mean([tokenize(sentence, False)["input_mask"].sum() for sentence in sentences]))
    kernels = {name: hottest_kernels(_repeating(predict, calls[name])) for name, predict in dynamic.items()
               if name not in CEILINGS}
    return timings, logits, mean_tokens, kernels


def _repeating(predict, calls: list) -> Callable[[], object]:
    """A call of `predict` on the next of `calls` each time, round and round."""
    inputs = itertools.cycle(calls)
    return lambda: predict(next(inputs))


def rust_tokenizer(vocab_file: Path) -> Callable[[str, bool], Features]:
    """`tokenize(text, fixed)`: one text's three id arrays [1, length] by Hugging Face's Rust tokenizer (the same
    ids as bert_tf's: tests/test_tokenizer.py), cut to 128 tokens, padded to 128 if `fixed`."""
    import tokenizers

    rust = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    rust.enable_truncation(SEQ_LENGTH)

    def tokenize(text: str, fixed: bool) -> Features:
        ids = rust.encode(text).ids
        width = SEQ_LENGTH if fixed else len(ids)
        features = np.zeros([3, 1, width], np.int32)
        features[0, 0, :len(ids)], features[1, 0, :len(ids)] = ids, 1
        return dict(zip(("input_word_ids", "input_mask", "input_type_ids"), features))

    return tokenize


def report(title: str, setup: dict, fixed: dict, real: tuple | None, settings: Settings) -> BenchmarkResult:
    """The section's Markdown and JSON data."""
    info, threads, fused_ops = machine_info(), setup["threads"], setup["fused_operators"]
    fixed_rows = [row for description, (timings, logits) in fixed.items()
                  for row in table_rows(timings, logits, [description])]
    header = ["× ONNX Runtime int8", "× bert_tf float32", "max |Δ logit| vs bert_tf float32"]
    scale = max(np.abs(logits[OURS]).max() for _, logits in fixed.values())
    parts = [
        title,
        f"Every contender holds the same seeded random weights (hidden_act={setup['hidden_act']!r}: the same GELU in "
        "every package), the "
        f"same inputs, and runs in this process on {threads} threads: TensorFlow's default pools (one intra-op thread "
        f"per core), LiteRT `num_threads={threads}`, ONNX Runtime `intra_op_num_threads={threads}`, OpenVINO "
        f"`INFERENCE_NUM_THREADS={threads}` with `PERFORMANCE_HINT=LATENCY` (its default) and an explicit "
        "`INFERENCE_PRECISION_HINT` (its default on this CPU is bf16). "
        f"CPU: {info['cpu_model']}, {info['usable_cores']} usable cores; OpenVINO's CPU capabilities: "
        f"{', '.join(setup['openvino_capabilities']) or 'not queried'}. Versions: "
        + ", ".join(f"{package} {version}" for package, version in setup["versions"].items()) + ". "
        + (f"ONNX Runtime's optimizer fused: {', '.join(f'{fused_ops.get(op, 0)} {op}' for op in FUSED_OPS)}. "
           if fused_ops else "")
        + f"Logits of bert_tf float32 reach ±{scale:.2f} (random head).",
        *setup["notes"],
        f"### {SEQ_LENGTH} tokens per sequence",
        f"Each input set: {BATCH_SIZE} sequences per round, as {BATCH_SIZE} requests of one (batch 1) or one batch "
        f"of {BATCH_SIZE}; one interleaved run per set. Sequences/s: median (25th–75th percentile) of "
        f"{min(t.rounds for timings, _ in fixed.values() for t in timings.values())}+ rounds after warm-up. "
        "\"× X\": this row's median rate over X's. bert_tf's graphs (in process, SavedModel, LiteRT) run every "
        "layer but attention on the real tokens only (`bert_tf.layers.TokenRows`) and the last block on [CLS] "
        f"alone, so short sentences padded to {SEQ_LENGTH} cost them little; ONNX Runtime and OpenVINO compute "
        f"all {SEQ_LENGTH} positions. With {SEQ_LENGTH} real tokens every graph does the same work.",
        markdown_table(["inputs", "contender", "sequences/s", *header], fixed_rows),
        "Fastest:\n" + "\n".join(f"- {description}: {fastest(timings)}" for description, (timings, _) in fixed.items()),
    ]
    data = {**setup, "fixed_length": {description: {"results": {n: t.summary() for n, t in timings.items()},
                                           "max_logit_difference": _differences(logits)}
                             for description, (timings, logits) in fixed.items()}}
    if real is None:
        parts.append("### Real lengths\n\nSkipped: SST-2 dev set not found under "
                     f"{settings.data_dir} (the table above used random ids).")
    else:
        timings, logits, mean_tokens, kernels = real
        sentences = len(logits[OURS])
        rows = table_rows(timings, logits, [])
        for row in rows:
            row.insert(1, "raw text, tokenized in the graph" if row[0] in (SAVED_TEXT, SAVED_TEXT_BF16, SERVED_INT8,
                                                                         TEXT_TFLITE)
                       else f"Rust tokenizer, padded to {SEQ_LENGTH}" if row[0] in FIXED_LENGTH
                       else "Rust tokenizer, own length")
        parts += [
            "### Real lengths, one sentence per request, text in on every side",
            f"The first {sentences} SST-2 dev sentences, one request each, {mean_tokens:.1f} tokens on average "
            "([CLS] and [SEP] included), each given as text: bert-tf's raw-text exports (the SavedModels' "
            "`serving_default`, the float32 raw-text `.tflite` and the int8 `model.tflite` that `bert-tf serve` "
            "serves) tokenize it in their graph; every ids graph gets it from the Rust tokenizer "
            "(`tokenizers.BertWordPieceTokenizer`, the same vocabulary and ids), whose time counts, at its own "
            f"length, except the LiteRT ids models, which take exactly {SEQ_LENGTH} tokens and run padded. (The "
            f"SavedModels' `serve_ids` are fixed at {SEQ_LENGTH}; their raw-text signature stands for them.) "
            "Sentences/s: median (25th–75th percentile) of "
            f"{min(t.rounds for t in timings.values())}+ interleaved rounds after a warm-up round.",
            markdown_table(["contender", "input", "sentences/s", *header], rows),
            f"Fastest: {fastest(timings)}.",
            kernels_section(kernels, setup["onednn"], setup["openvino_kernels"]),
        ]
        data["real_length"] = {"sentences": sentences, "mean_tokens": mean_tokens,
                               "results": {n: t.summary() for n, t in timings.items()}, "kernels": kernels,
                               "max_logit_difference": _differences(logits)}
    return BenchmarkResult(NAME, "\n\n".join(parts), data)


def kernels_section(kernels: dict[str, list[dict] | None], onednn: dict[str, str], openvino: dict[str, str]) -> str:
    """The kernels each real-length contender ran (`benchmarks.kernels_used`): a table, and oneDNN's and OpenVINO's
    own reports."""
    rows = []
    for name, hottest in kernels.items():
        if hottest is None:
            rows.append([name, "not profiled (no perf here)", ""])
            continue
        top = product_kernels(hottest)
        rows.append([name, "; ".join(f"`{kernel['kernel']}` ({100 * kernel['share']:.0f}%)" for kernel in top) or "—",
                     "; ".join(kernel["isa"] or "—" for kernel in top) or "—"])
    return "\n\n".join([
        "### The kernels each contender ran on this CPU",
        "What decides which of these figures apply to another CPU: the instruction sets the runtimes' kernels used "
        "here. `perf record` sampled each contender for 1 s after the timed rounds (every thread of this process); "
        "the two runtime functions with the most samples among those whose instructions are known (else the one "
        "with the most), with their shares of them, are named by their symbols (XNNPACK's "
        "kernels carry their ISA after `__`) or, in a library without symbols (ONNX Runtime's), by the vector "
        "instructions around its hottest addresses (`benchmarks.kernels_used.isa_of`). TensorFlow's oneDNN kernels "
        "are compiled at run time, out of perf's reach: oneDNN's own log (`ONEDNN_VERBOSE=1`, a float32 and a "
        f"bfloat16 dense layer of 25 × 768 · 768 × 3072 in a subprocess) says: ISA {onednn['isa']}; float32: "
        f"{onednn['float32']}; bfloat16: {onednn['bfloat16']}. OpenVINO's runtime model names the kernel of each "
        "of its dense layers: " + ("; ".join(f"{name}: {kinds}" for name, kinds in openvino.items()) or "—") + ".",
        markdown_table(["contender", "hottest runtime code (share of samples)", "instructions"], rows)])


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _differences(logits: dict[str, np.ndarray]) -> dict[str, float]:
    return {name: float(np.abs(values - logits[OURS]).max()) for name, values in logits.items()
            if name not in CEILINGS}
