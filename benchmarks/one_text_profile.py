"""Where one text's time goes: the served float32 SavedModel (raw text in) under TensorFlow's profiler, and
ONNX Runtime's fused float32 graph under its own, on the same BERT-base classifier and the same sentence.

A seeded random BERT-base classifier is exported as `bert-tf serve` serves it (`export_saved_model`, float32 and
`quantize="bf16"`) and as ONNX Runtime's fused graph (`benchmarks.cpu_serving`). One SST-2 sentence (~25 tokens)
is sent `--calls` times to each, one call at a time:
- TensorFlow: `tf.profiler.experimental` traces the calls; every op the executor ran is read from the trace
  (`*.xplane.pb`) with its duration and sorted into what it does (`category`): the dense products, attention's
  products, attention's masking and softmax, LayerNorm, GELU, the tokenizer, variable reads, the rest. The wall
  time of a call, less the time inside ops, is the executor's and the call's own cost.
- perf (`benchmarks.kernels_used`, where perf runs): the share of the float32 call's CPU samples in Eigen's
  packing of a product's operands (`gemm_pack_*`: the weight matrix is re-laid out on every call) and in its
  multiply kernel (`gebp`).
- What was tried to lay the weights out once or cut the ops (`tried_variants`): the same model in one
  `tf.function`, with its weights frozen as constants, and XLA-compiled on length buckets; CPU and wall time per
  sentence, interleaved. Under `TF_ENABLE_ONEDNN_OPTS=1` every TensorFlow row runs on oneDNN's kernels instead.
- ONNX Runtime: `SessionOptions.enable_profiling`, its nodes' times summed by operator type.
Times are per call, medians' worth: the trace sums `--calls` calls and divides. Run on a busy machine, every
figure stretches; the shares are what compare.

    python -m benchmarks.one_text_profile                            # about 3 minutes on 2 cores
    TF_ENABLE_ONEDNN_OPTS=1 python -m benchmarks.one_text_profile    # the same on oneDNN's kernels
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from benchmarks.cpu_serving import onnx_runtime_files, rust_tokenizer, saved_classifier, checked_torch_classifier
from benchmarks.contenders import export_onnx
from benchmarks.data import sst2
from benchmarks.harness import Contender, interleaved, usable_cores
from benchmarks.kernels_used import hottest_kernels
from benchmarks.machine import machine_info, machine_line
from benchmarks.report import markdown_table
from benchmarks.settings import Settings

BUCKET = 16  # the XLA variant pads each text's ids to a multiple of this (one compilation per bucket)
TRIED_SENTENCES = 12  # SST-2 dev sentences per round of the variants' timing
SENTENCE_INDEX = 3  # the SST-2 dev sentence profiled: 25 tokens with [CLS] and [SEP]
CATEGORIES = ("dense products (weights × activations)", "attention products (QKᵀ, AV)",
              "attention: mask, softmax, head reshapes", "LayerNorm", "GELU", "tokenizer (in the graph)",
              "variable reads", "embeddings, token rows, head, shapes")


def category(name: str, op_type: str) -> str:
    """What an op does in the served graph, from its name (`scope/.../op`) and type: one of CATEGORIES.

        >>> category("bert_classifier/layer_0/intermediate/BiasAdd", "_MklNativeFusedMatMul")
        'dense products (weights × activations)'
        >>> category("bert_classifier/layer_0/attention/einsum/Einsum", "BatchMatMulV2")
        'attention products (QKᵀ, AV)'
    """
    lowered = name.lower()
    if "BatchMatMul" in op_type or "Einsum" in op_type:  # Eigen's and oneDNN's (`_Mkl...`) kinds alike
        return CATEGORIES[1]
    if "MatMul" in op_type:  # MatMul, _FusedMatMul, _MklNativeFusedMatMul, ...
        return CATEGORIES[0]
    if op_type == "ReadVariableOp":
        return CATEGORIES[6]
    if "attention" in lowered and "/output" not in lowered or op_type == "Softmax":
        return CATEGORIES[2]
    if "layer_norm" in lowered or "layernorm" in lowered:
        return CATEGORIES[3]
    if "gelu" in lowered or "intermediate" in lowered:
        return CATEGORIES[4]
    if "bert_classifier" not in lowered and "bert_model" not in lowered:
        return CATEGORIES[5]
    return CATEGORIES[7]


def traced_ops(call, calls: int, directory: Path) -> tuple[list[tuple[str, str, float]], float]:
    """(op name, op type, seconds) of every op TensorFlow's executor ran during `calls` calls of `call`, and the
    calls' mean wall time under the trace."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    tf.profiler.experimental.start(str(directory))
    start = time.perf_counter()
    for _ in range(calls):
        call()
    wall = (time.perf_counter() - start) / calls
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    space.ParseFromString(next(directory.rglob("*.xplane.pb")).read_bytes())
    ops = []
    for plane in space.planes:
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue  # the executor's threads; the Eigen pool's lines hold the same work split in shards
            for event in line.events:
                metadata = plane.event_metadata[event.metadata_id]
                if ":" in metadata.name and metadata.display_name:
                    ops.append((metadata.name.rsplit(":", 1)[0], metadata.display_name, event.duration_ps * 1e-12))
    return ops, wall


def wall_seconds(call, calls: int) -> float:
    """The median wall time of one call."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def tensorflow_table(ops: list[tuple[str, str, float]], calls: int, wall: float) -> list[list[str]]:
    """Rows: category, ms per call, share of the time inside ops, ops per call, µs per op; then the totals and
    the call's wall time (ops on the executor's two threads overlap: Q, K and V run side by side)."""
    seconds, counts = collections.Counter(), collections.Counter()
    for name, op_type, duration in ops:
        seconds[category(name, op_type)] += duration / calls
        counts[category(name, op_type)] += 1 / calls
    inside, count = sum(seconds.values()), sum(counts.values())
    rows = [[kind, f"{1e3 * seconds[kind]:.2f}", f"{100 * seconds[kind] / inside:.1f}%", f"{counts[kind]:.0f}",
             f"{1e6 * seconds[kind] / counts[kind]:.0f}"] for kind in CATEGORIES if counts[kind]]
    rows.append(["every op", f"{1e3 * inside:.2f}", "100%", f"{count:.0f}", f"{1e6 * inside / count:.0f}"])
    rows.append(["**the call (wall clock, traced)**", f"**{1e3 * wall:.2f}**", "", "", ""])
    return rows


def packing_shares(call) -> str:
    """The share of perf's samples of `call` in Eigen's operand packing, and the hottest named functions."""
    kernels = hottest_kernels(call, seconds=2.0, top=40)
    if kernels is None:
        return "perf is not available here: the packing share is not measured."
    packing = sum(kernel["share"] for kernel in kernels if "gemm_pack" in kernel["kernel"])
    hottest = "; ".join(f"`{kernel['kernel'][:60]}` {100 * kernel['share']:.0f}%" for kernel in kernels[:3])
    return (f"perf, the float32 call's CPU samples (every thread of the process): Eigen's packing of the products' "
            f"operands (`gemm_pack_*`, the weight matrix re-laid out on every call) {100 * packing:.0f}%; the hottest "
            f"named functions: {hottest}. (oneDNN's sgemm, which Eigen's contraction hands the packed blocks to, is "
            "compiled at run time and has no symbol.)")


def onnx_runtime_table(path: Path, features: dict[str, np.ndarray], calls: int, threads: int,
                       directory: Path) -> tuple[list[list[str]], float]:
    """ONNX Runtime's own profile of `calls` calls: rows per operator type (ms per call, share, nodes per call),
    and the median wall time of a call."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    options.profile_file_prefix = str(directory / "onnxruntime")
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    inputs = {name: features[key].astype(np.int64) for key, name in
              (("input_word_ids", "input_ids"), ("input_mask", "attention_mask"), ("input_type_ids", "token_type_ids"))}
    for _ in range(3):
        session.run(["logits"], inputs)
    wall = wall_seconds(lambda: session.run(["logits"], inputs), calls)
    events = json.loads(Path(session.end_profiling()).read_text())
    seconds, counts = collections.Counter(), collections.Counter()
    runs = sum(1 for event in events if event.get("cat") == "Session" and event["name"] == "model_run")
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            seconds[event["args"]["op_name"]] += event["dur"] * 1e-6 / runs
            counts[event["args"]["op_name"]] += 1 / runs
    rows = [[op, f"{1e3 * seconds[op]:.2f}", f"{100 * seconds[op] / wall:.0f}%", f"{counts[op]:.0f}"]
            for op, _ in seconds.most_common()]
    rows.append(["**the call (wall, median)**", f"**{1e3 * wall:.2f}**", "100%", f"{sum(counts.values()):.0f}"])
    return rows, wall


def tried_variants(classifier, signature, sentences: list[str], tokenize, rounds: int) -> list[list[str]]:
    """The ways of running the float32 model on one text that could lay the weights out once or cut the ops,
    timed interleaved on `sentences` one per call: rows of name, CPU ms per sentence (all threads), wall ms, and the
    largest logit difference from the SavedModel. Run with TF_ENABLE_ONEDNN_OPTS=1 for oneDNN's kernels."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from bert_tf.inference import inference_function

    plain, compiled = inference_function(classifier), inference_function(classifier, jit_compile=True)
    spec = {name: tf.TensorSpec([1, None], tf.int32, name=name) for name in tokenize(sentences[0], False)}
    frozen = convert_variables_to_constants_v2(plain.get_concrete_function(spec))

    def ids(text: str, bucket: int = 1) -> dict[str, tf.Tensor]:
        features = tokenize(text, False)
        width = -(-features["input_word_ids"].shape[1] // bucket) * bucket
        return {name: tf.constant(np.pad(value, [[0, 0], [0, width - value.shape[1]]])) for name, value in
                features.items()}

    variants = {
        "the float32 SavedModel, raw text in (as exported)": lambda text: signature(text=tf.constant([text]))["logits"],
        "the Keras model in one tf.function, ids in": lambda text: plain(ids(text)),
        "the same, weights frozen as constants (convert_variables_to_constants_v2)":
            lambda text: frozen(**ids(text))[0],
        f"the same, XLA-compiled (jit_compile=True), ids padded to a multiple of {BUCKET}":
            lambda text: compiled(ids(text, BUCKET)),
    }
    reference = {text: signature(text=tf.constant([text]))["logits"].numpy() for text in sentences}
    differences = {name: max(float(np.abs(np.asarray(run(text)) - reference[text]).max()) for text in sentences)
                   for name, run in variants.items()}  # also the warm-up: every XLA bucket compiled here
    timings = interleaved([Contender(name, lambda r=run: [r(text) for text in sentences], items=len(sentences))
                           for name, run in variants.items()], rounds, warmup=0, description="variants")
    return [[name, f"{1e3 * np.median(timing.cpu_seconds) / len(sentences):.1f}",
             f"{1e3 * timing.median_seconds / len(sentences):.1f}", f"{differences[name]:.1e}"]
            for name, timing in timings.items()]


def profile(settings: Settings, calls: int, rounds: int) -> str:
    """The section's Markdown: the TensorFlow table per precision, perf's packing line, ONNX Runtime's table."""
    from serving.export.saved_model import export_saved_model

    sentences = sst2(settings.data_file("sst2", "dev.tsv"), TRIED_SENTENCES)[0]
    sentence, tokenize = sentences[SENTENCE_INDEX], rust_tokenizer(settings.vocab_file)
    features = tokenize(sentence, False)
    threads, config = usable_cores(), settings.config("base")
    parts = []
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        classifier, model_dir = saved_classifier(config, settings.vocab_file, scratch / "model")
        for quantize in ("none", "bf16"):
            signature = tf.saved_model.load(str(export_saved_model(model_dir, scratch / "serving", quantize,
                                                                   quantize=quantize))).signatures["serving_default"]
            text = tf.constant([sentence])
            call = lambda s=signature: s(text=text)["logits"].numpy()
            for _ in range(3):
                call()
            ops, wall = traced_ops(call, calls, scratch / f"trace_{quantize}")
            precision = "float32" if quantize == "none" else "bf16"
            parts += [f"TensorFlow, the {precision} SavedModel's `serving_default` (raw text in), {calls} calls:",
                      markdown_table(["what", "ms per call (summed over ops)", "share of the time in ops",
                                      "ops per call", "µs per op"],
                                     tensorflow_table(ops, calls, wall))]
            if quantize == "none":
                parts.append(packing_shares(call))
                parts += [f"What was tried on the float32 model, {len(sentences)} sentences one per call, {rounds} "
                          "interleaved rounds (TF_ENABLE_ONEDNN_OPTS="
                          f"{os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset')}):",
                          markdown_table(["variant", "CPU ms per sentence", "wall ms per sentence",
                                          "max |Δ logit| vs the SavedModel"],
                                         tried_variants(classifier, signature, sentences, tokenize, rounds))]
        samples = [tokenize(sentence, True)]
        plain = export_onnx(checked_torch_classifier(classifier, scratch / "hf", samples), scratch / "plain.onnx")
        fused = onnx_runtime_files(plain, config)[0]["ONNX Runtime float32, fused"]
        rows, _ = onnx_runtime_table(fused, features, calls, threads, scratch)
        parts += [f"ONNX Runtime float32, fused (ids from the Rust tokenizer, not timed here), {calls} calls:",
                  markdown_table(["operator", "ms per call", "share of the call", "nodes per call"], rows)]
    header = (f"The sentence: {sentence!r}, {features['input_mask'].sum()} tokens. {threads} threads. "
              f"Machine: {machine_line(machine_info())}.")
    return "\n\n".join([header, *parts])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.one_text_profile", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20, help="calls profiled per contender (default 20)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the variants tried (default 3)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    print(profile(Settings(), args.calls, args.rounds))


if __name__ == "__main__":
    main()
