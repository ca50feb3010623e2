"""One BERT-base dense product, [128 × 768] · [768 × 3072], by every int8 and bfloat16 route on this CPU.

Where the int8 speed of the serving paths comes from, and why TensorFlow's own graph has no
int8 path worth exporting: the same product (BERT-base's intermediate layer at seq 128, one
sequence) through
- TensorFlow float32 and bfloat16 `tf.matmul` (oneDNN), with and without XLA;
- TensorFlow int8: `BatchMatMulV3` int8 × int8 → int32 with the scales applied around it (the
  activations quantized per tensor in the graph), with and without XLA; and oneDNN's
  `QuantizedMatMulWithBiasAndDequantize` (the op Intel's quantization tools emit; quint8
  activations, qint8 weights);
- LiteRT (XNNPACK): the product as a one-layer TFLite model, float32 and dynamic-range int8;
- ONNX Runtime: a one-`MatMul` ONNX model, float32 and `quantize_dynamic` int8 (skipped when
  onnxruntime is not installed: it is a benchmark-only extra).
Reported: GFLOP/s (2·M·K·N per call, median of interleaved calls), the ratio to TensorFlow
float32, and the largest difference from the float64 product relative to its largest value.

    python -m benchmarks.run --only int8_matmul
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

from benchmarks.harness import Contender, interleaved, rate_cell, usable_cores
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "int8_matmul"
SHAPE = (128, 768, 3072)  # M (tokens), K (hidden), N (intermediate)
FLOAT32 = "TensorFlow float32 (oneDNN)"


def run(settings: Settings) -> BenchmarkResult:
    rows_m, depth, columns = (16, 64, 128) if settings.quick else SHAPE
    rng = np.random.default_rng(0)
    activations = rng.standard_normal((rows_m, depth)).astype(np.float32)
    weights = (rng.standard_normal((depth, columns)) * 0.05).astype(np.float32)
    exact = activations.astype(np.float64) @ weights.astype(np.float64)
    calls = {**_tensorflow_calls(activations, weights), **_litert_calls(activations, weights)}
    if importlib.util.find_spec("onnxruntime") is not None:
        calls.update(_onnxruntime_calls(activations, weights))
    errors, failed = {}, {}
    for name, call in list(calls.items()):
        try:
            errors[name] = float(np.abs(np.asarray(call(), np.float64) - exact).max() / np.abs(exact).max())
        except tf.errors.OpError as error:  # a route this CPU has no kernel for (oneDNN's int8 op on AVX2 only)
            failed[name] = error.message.strip().splitlines()[-1].split(" [Op:")[0]  # the cause, after the traceback
            del calls[name]
    flops = 2 * rows_m * depth * columns
    timings = interleaved([Contender(name, call, items=flops / 1e9) for name, call in calls.items()],
                          settings.rounds * 40, warmup=3, max_seconds=settings.max_seconds, description=NAME)
    reference = timings[FLOAT32].median
    rows = [[name, rate_cell(timing, 0), f"{timing.median / reference:.2f}×", f"{errors[name]:.1e}"]
            for name, timing in timings.items()]
    markdown = "\n\n".join([
        f"## One dense product by every int8 and bfloat16 route: [{rows_m} × {depth}] · [{depth} × {columns}]",
        f"BERT-base's intermediate layer at seq {rows_m}, one sequence; {usable_cores()} threads everywhere. GFLOP/s: "
        "median (25th–75th percentile) of interleaved calls, each including its quantization of the activations; "
        "error: largest difference from the float64 product over the product's largest value.",
        markdown_table(["route", "GFLOP/s", "÷ TF float32", "relative error"], rows),
        *(f"Not run on this CPU: {name} ({message})." for name, message in failed.items()),
    ])
    return BenchmarkResult(NAME, markdown, {"shape": [rows_m, depth, columns], "relative_errors": errors, "failed": failed,
                                            "results": {name: timing.summary() for name, timing in timings.items()}})


def _tensorflow_calls(activations: np.ndarray, weights: np.ndarray) -> dict:
    """TensorFlow's float32, bfloat16 and int8 routes (see the module docstring)."""
    inputs = tf.constant(activations)
    scales = np.abs(weights).max(axis=0) / 127  # per output column
    weights_int8 = tf.constant(np.round(weights / scales).astype(np.int8))
    weights_bf16 = tf.constant(weights, tf.bfloat16)
    weight_range = float(np.abs(weights).max())
    weights_qint8 = tf.bitcast(tf.constant(np.round(weights / weight_range * 127).astype(np.int8)), tf.qint8)

    def float32(x):
        return tf.matmul(x, weights)

    def bfloat16(x):
        return tf.cast(tf.matmul(tf.cast(x, tf.bfloat16), weights_bf16), tf.float32)

    def int8(x):
        scale = tf.reduce_max(tf.abs(x)) / 127
        quantized = tf.cast(tf.round(x / scale), tf.int8)
        products = tf.raw_ops.BatchMatMulV3(x=quantized, y=weights_int8, Tout=tf.int32)
        return tf.cast(products, tf.float32) * (scale * scales)

    def onednn_int8(x):
        low, high = tf.reduce_min(x), tf.reduce_max(x)
        quantized, low, high = tf.quantization.quantize(x, low, high, tf.quint8, mode="MIN_FIRST")
        return tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
            a=quantized, b=weights_qint8, bias=tf.zeros([weights.shape[1]]), min_a=low, max_a=high,
            min_b=-weight_range, max_b=weight_range, min_freezed_output=-1.0, max_freezed_output=1.0,
            Toutput=tf.float32, input_quant_mode="MIN_FIRST")

    calls = {}
    for name, function in ((FLOAT32, float32), ("TensorFlow bfloat16 (oneDNN)", bfloat16),
                           ("TensorFlow int8 BatchMatMulV3", int8),
                           ("TensorFlow int8 QuantizedMatMulWithBiasAndDequantize (oneDNN)", onednn_int8)):
        calls[name] = _numpy_call(tf.function(function), inputs)
        if function is not onednn_int8:
            calls[f"{name.split(' (')[0]}, XLA"] = _numpy_call(tf.function(function, jit_compile=True), inputs)
    return calls


def _numpy_call(function, inputs):
    return lambda: function(inputs).numpy()


def _litert_calls(activations: np.ndarray, weights: np.ndarray) -> dict:
    """The product as a one-layer TFLite model, float32 and dynamic-range int8, run by LiteRT."""
    from ai_edge_litert.interpreter import Interpreter

    module = tf.Module()
    module.weights = tf.Variable(weights)
    module.product = tf.function(lambda x: tf.matmul(x, module.weights),
                                 input_signature=[tf.TensorSpec(activations.shape, tf.float32)])
    calls = {}
    with tempfile.TemporaryDirectory() as saved_model:
        tf.saved_model.save(module, saved_model, signatures=module.product.get_concrete_function())
        for name, quantized in (("LiteRT float32 (XNNPACK)", False), ("LiteRT int8, dynamic range (XNNPACK)", True)):
            converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
            if quantized:
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            runner = Interpreter(model_content=converter.convert(), num_threads=usable_cores()).get_signature_runner()
            output = next(iter(runner.get_output_details()))
            calls[name] = lambda runner=runner, output=output: runner(x=activations)[output]
    return calls


def _onnxruntime_calls(activations: np.ndarray, weights: np.ndarray) -> dict:
    """The product as a one-MatMul ONNX model, float32 and `quantize_dynamic` int8, run by ONNX Runtime."""
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(activations.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [activations.shape[0], weights.shape[1]])],
        [numpy_helper.from_array(weights, "w")])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = usable_cores()
    calls = {}
    with tempfile.TemporaryDirectory() as scratch:
        float_path, int8_path = Path(scratch) / "product.onnx", Path(scratch) / "product_int8.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), float_path)
        quantize_dynamic(str(float_path), str(int8_path), weight_type=QuantType.QInt8)
        for name, path in (("ONNX Runtime float32", float_path), ("ONNX Runtime int8, quantize_dynamic", int8_path)):
            session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            calls[name] = lambda session=session: session.run(None, {"x": activations})[0]
    return calls
