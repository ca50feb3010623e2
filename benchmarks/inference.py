"""Encoder inference: BERT-base, sequence length 128, batch 1 and 8, float32, same weights in every package.

Contenders: bert_tf (`bert_tf.inference.inference_function`, with and without XLA), KerasHub
`BertBackbone` in a `tf.function` (with and without XLA) and transformers `BertModel` on PyTorch
(eager, `inference_mode`); and, not float32 and so outside the comparison, bert_tf under the
`mixed_bfloat16` policy, to show what this CPU's bfloat16 units give; and, as a ceiling, bert_tf's
dense products alone (`projections_only`: not BERT's outputs). Reports sequences/s and
achieved GFLOP/s (matrix multiplies only) as a share of this machine's float32 matrix-multiply
peak (`benchmarks.matmul_peak`): a sweep over shapes finds the fastest chain, which is then timed
again in the same interleaved rounds as the models, next to a chain of BERT's feed-forward products.
Each share compares calls made in the same rounds, so a machine that speeds up or slows down during
the run moves both sides alike.

    python -m benchmarks.run --only inference
"""

from __future__ import annotations

import dataclasses
import tempfile

import numpy as np
import tensorflow as tf

import bert_tf
from benchmarks.contenders import TORCH_NAME, keras_hub_backbone, random_ids, torch_encoder
from benchmarks.harness import Contender, interleaved, rate_cell, ratio
from benchmarks.matmul_peak import float32_error, naive_checks, peak_contenders, shape_name
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings
from bert_tf.inference import inference_function
from bert_tf.model import INPUT_NAMES
from bert_tf.precision import with_precision

NAME = "inference"
OURS = "bert_tf inference_function"
OURS_XLA = "bert_tf inference_function(jit_compile=True)"
OURS_BF16 = "bert_tf inference_function, mixed_bfloat16 (not float32)"
OURS_PROJECTIONS = "bert_tf's dense products alone (a ceiling, not BERT: no attention core, no LayerNorm)"
KERAS_HUB = "KerasHub BertBackbone, tf.function"
KERAS_HUB_XLA = "KerasHub BertBackbone, tf.function(jit_compile=True)"
# Agreement required between the float32 contenders' sequence outputs (same weights).
TOLERANCE = 1e-4
# Work per timed call of a matmul chain: ~0.15 s at 400 GFLOP/s.
GFLOP_PER_CALL = 60.0


def encoder_gflops(config: bert_tf.BertConfig, seq_length: int, attention_core: bool = True) -> float:
    """GFLOP of the matrix multiplies of one sequence through the encoder (2 per multiply-add).

    `attention_core=False` leaves out the two batched products of attention (scores and context)
    and the pooler: the work of `projections_only`.
    """
    hidden, inner = config.hidden_size, config.intermediate_size
    per_layer = 4 * seq_length * hidden * hidden + 2 * seq_length * hidden * inner
    if not attention_core:
        return 2 * config.num_hidden_layers * per_layer / 1e9
    per_layer += 2 * seq_length**2 * hidden
    return 2 * (config.num_hidden_layers * per_layer + hidden * hidden) / 1e9


def projections_only(model: bert_tf.BertModel):
    """A `tf.function` running only `model`'s dense products (same weights, same shapes): a ceiling.

    Each block keeps its six products (query, key, value, attention output, intermediate with its
    GELU, output) and its residual adds; the attention core (scores, softmax, context), the
    LayerNorms and the pooler are left out, so the outputs are not BERT's. Its share of the
    matmul peak bounds what the whole encoder can reach with these matrix-multiply kernels.
    """
    hidden = model.config.hidden_size

    @tf.function(input_signature=[{name: tf.TensorSpec([None, None], tf.int32) for name in INPUT_NAMES}])
    def run(inputs):
        embedded = model.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
        tokens = tf.reshape(embedded, [-1, hidden])
        for block in model.blocks:
            attention = block.attention
            mixed = tf.add_n([attention.query(tokens), attention.key(tokens), attention.value(tokens)])
            tokens = attention.output_dense(mixed) + tokens
            tokens = block.output_dense(block.intermediate(tokens)) + tokens
        return tf.reshape(tokens, tf.shape(embedded))

    return run


def _model_calls(ours, ours_bf16, backbone, torch_model, ids) -> dict:
    """{contender: function returning its float32 sequence output as NumPy} for one batch of ids."""
    import torch

    mask, types = np.ones_like(ids), np.zeros_like(ids)
    ours_inputs = {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask), "input_type_ids": tf.constant(types)}
    hub_inputs = {"token_ids": tf.constant(ids), "padding_mask": tf.constant(mask), "segment_ids": tf.constant(types)}
    torch_inputs = {"input_ids": torch.from_numpy(ids.astype(np.int64)),
                    "attention_mask": torch.from_numpy(mask.astype(np.int64)),
                    "token_type_ids": torch.from_numpy(types.astype(np.int64))}
    ours_fn, ours_xla = inference_function(ours), inference_function(ours, jit_compile=True)
    ours_bf16_fn = inference_function(ours_bf16)
    ours_projections = projections_only(ours)
    hub_fn = tf.function(lambda x: backbone(x, training=False))
    hub_xla = tf.function(lambda x: backbone(x, training=False), jit_compile=True)

    def torch_call():
        with torch.inference_mode():
            return torch_model(**torch_inputs).last_hidden_state.numpy()

    return {
        OURS: lambda: ours_fn(ours_inputs)["sequence_output"].numpy(),
        OURS_XLA: lambda: ours_xla(ours_inputs)["sequence_output"].numpy(),
        KERAS_HUB: lambda: np.asarray(hub_fn(hub_inputs)["sequence_output"]),
        KERAS_HUB_XLA: lambda: np.asarray(hub_xla(hub_inputs)["sequence_output"]),
        TORCH_NAME: torch_call,
        OURS_BF16: lambda: tf.cast(ours_bf16_fn(ours_inputs)["sequence_output"], tf.float32).numpy(),
        OURS_PROJECTIONS: lambda: ours_projections(ours_inputs).numpy(),
    }


def _checked_differences(calls: dict) -> dict:
    """Largest difference of each BERT contender's output from bert_tf's; float32 ones must be within TOLERANCE."""
    reference = calls[OURS]()
    differences = {name: float(np.abs(call() - reference).max()) for name, call in calls.items()
                   if name != OURS_PROJECTIONS}
    for name, difference in differences.items():
        if name != OURS_BF16 and difference > TOLERANCE:
            raise RuntimeError(f"inference: {name} differs from {OURS} by {difference:.2e} (> {TOLERANCE}).")
    return differences


def _repeated(function, calls: int):
    def run():
        for _ in range(calls):
            function()
    return run


def run(settings: Settings) -> BenchmarkResult:
    config = settings.config("base")
    seq_length = 16 if settings.quick else 128
    batch_sizes = (1, 2) if settings.quick else (1, 8)
    gflop_per_call = 0.05 if settings.quick else GFLOP_PER_CALL
    gflops_per_sequence = encoder_gflops(config, seq_length)
    gflops = {OURS_PROJECTIONS: encoder_gflops(config, seq_length, attention_core=False)}

    naive = naive_checks(256 if settings.quick else 2048)
    error = float32_error()
    shapes = [(b * seq_length, config.hidden_size, config.intermediate_size) for b in batch_sizes]
    shapes += [(b * seq_length, config.hidden_size, config.hidden_size) for b in batch_sizes]
    shapes += [(512, 512, 512)] if settings.quick else [(2048, 2048, 2048), (4096, 4096, 4096)]
    sweep = interleaved(peak_contenders(shapes, gflop_per_call)
                        + peak_contenders(shapes[-1:], gflop_per_call, dtype=tf.bfloat16),
                        settings.rounds, max_seconds=settings.max_seconds, description="matmul peak")
    float32_sweep = {name: t for name, t in sweep.items() if name.endswith("float32")}
    peak_name = max(float32_sweep, key=lambda name: float32_sweep[name].best)
    peak_shape = next(shape for shape in shapes if shape_name(*shape) == peak_name)

    backbone = keras_hub_backbone(config)
    ours = bert_tf.from_pretrained(backbone)
    ours_bf16 = with_precision(ours, "mixed_bfloat16")
    with tempfile.TemporaryDirectory() as directory:
        torch_model = torch_encoder(ours, directory)
    by_batch, differences = {}, {}
    for batch in batch_sizes:
        calls_per_measure = 4 if batch == 1 and not settings.quick else 1
        calls = _model_calls(ours, ours_bf16, backbone, torch_model, random_ids(config, batch, seq_length))
        differences[batch] = _checked_differences(calls)
        contenders = [Contender(name, _repeated(call, calls_per_measure), items=batch * calls_per_measure)
                      for name, call in calls.items()]
        bert_chain = (batch * seq_length, config.hidden_size, config.intermediate_size)
        contenders += peak_contenders(list(dict.fromkeys([bert_chain, peak_shape])), gflop_per_call)
        by_batch[batch] = interleaved(contenders, settings.rounds, max_seconds=settings.max_seconds,
                                      description=f"inference batch {batch}")

    rows, fastest, peaks = [], {}, {}
    for batch, timings in by_batch.items():
        chain_name = shape_name(batch * seq_length, config.hidden_size, config.intermediate_size)
        peak = peaks[batch] = timings[peak_name]
        models = {name: t for name, t in timings.items() if not name.startswith("[")}  # chains are "[m,k]x..."
        fastest[batch] = max((n for n in models if n not in (OURS_BF16, OURS_PROJECTIONS)),
                             key=lambda n: models[n].median)
        for name, timing in models.items():
            per_sequence = gflops.get(name, gflops_per_sequence)
            difference = differences[batch].get(name)
            rows.append([batch, name, rate_cell(timing, 2), f"{timing.median * per_sequence:.0f}",
                         f"{timing.best * per_sequence / peak.best:.0%}",
                         f"{timing.cpu_median * per_sequence / peak.cpu_median:.0%}",
                         f"{ratio(timings, OURS, name):.2f}", "" if difference is None else f"{difference:.0e}"])
        for name, role in {chain_name: "BERT's feed-forward chain", peak_name: "peak chain"}.items():
            chain = timings[name]
            rows.append([batch, f"matmul {role} {name} (same rounds)", "", rate_cell(chain, 0),
                         f"{chain.best / peak.best:.0%}", f"{chain.cpu_median / peak.cpu_median:.0%}", "", ""])

    sweep_rows = [[name, rate_cell(t, 0), f"{t.best:.0f}", f"{t.cpu_median:.0f}"] for name, t in sweep.items()]
    markdown = "\n\n".join([
        f"## Encoder inference, BERT-base{' (quick: tiny model)' if settings.quick else ''}, seq {seq_length}, float32",
        f"Same random weights in all packages (KerasHub's tanh-GELU everywhere). {gflops_per_sequence:.2f} GFLOP of "
        "matrix multiplies per sequence. Sequences/s: median (25th–75th percentile) of "
        f"{min(t.rounds for ts in by_batch.values() for t in ts.values())}+ interleaved rounds after warm-up. "
        f"Float32 matmul peak of this machine: the fastest chain of the sweep below, {peak_name}, timed again in "
        "the same rounds as the models (best call " + ", ".join(f"**{p.best:.0f} GFLOP/s** at batch {b}" for b, p
                                                                 in peaks.items()) + "). "
        "\"Best call, of peak\": the contender's best call against that chain's best call in the same rounds "
        "(both the least disturbed by other processes); \"CPU time, of peak\": the same on the CPU-time basis "
        "(medians per CPU-second of all cores). The last column is the largest difference from bert_tf's output. "
        f"The ceiling row runs only the dense products ({gflops[OURS_PROJECTIONS]:.2f} GFLOP per sequence) and "
        "the residual adds, with the same weights: no encoder built from these matrix-multiply kernels can "
        "reach a higher share of the peak.",
        markdown_table(["batch", "contender", "sequences/s", "GFLOP/s", "best call, of peak", "CPU time, of peak",
                        "bert_tf ÷ this", "max diff"], rows),
        "Fastest float32 contender (median): " + "; ".join(f"batch {b}: {n}" for b, n in fastest.items()) + ".",
        f"### Matrix-multiply peak: chains of dependent products in one tf.function, ~{gflop_per_call:g} GFLOP per "
        "call, interleaved rounds (oneDNN)",
        markdown_table(["chain", "GFLOP/s median (q1–q3)", "best call", "per CPU-second, all cores"], sweep_rows),
        f"Float32 check: a TF float32 product [1024,768]x[768,3072] is within {error:.1e} (relative) of float64: "
        "float32 arithmetic (bfloat16 would give ~1e-3). The quick checks that mislead (GFLOP/s):",
        markdown_table(["naive check", "GFLOP/s"], [[name, f"{value:.0f}"] for name, value in naive.items()]),
    ])
    data = {
        "config": dataclasses.asdict(config),
        "seq_length": seq_length,
        "gflops_per_sequence": gflops_per_sequence,
        "gflops_per_sequence_of": gflops,
        "peak_chain": peak_name,
        "peak_same_rounds": {str(b): {"best": p.best, "cpu_median": p.cpu_median} for b, p in peaks.items()},
        "peak_sweep": {name: t.summary() for name, t in sweep.items()},
        "naive_checks": naive,
        "float32_relative_error": error,
        "max_differences": {str(b): d for b, d in differences.items()},
        "fastest_float32": {str(b): n for b, n in fastest.items()},
        "results": {str(b): {n: t.summary() for n, t in timings.items()} for b, timings in by_batch.items()},
    }
    return BenchmarkResult(NAME, markdown, data)
