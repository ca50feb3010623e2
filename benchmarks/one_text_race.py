"""The real-sentence race on the CPU at hand: each precision's bert-tf exports against its fastest peer, one
sentence per call and batches of 32, raw text in on every side, with the CPU's model, flags and load recorded.

The same seeded random BERT-base classifier as `benchmarks.cpu_serving`, in every contender:
- bert-tf, text in (tokenized in the graph): the float32 and `quantize="bf16"` SavedModels' `serving_default`
  (what TF Serving loads), the float32 raw-text `.tflite`, and the int8 `model.tflite` `bert-tf serve` serves.
- peers, ids from the Rust tokenizer (`tokenizers`, the same ids; its time counted), at the texts' own length:
  ONNX Runtime float32 (fused) and int8 (`quantize_dynamic`), OpenVINO float32 and, on CPUs with bfloat16
  units, bf16.
Each input (one sentence per call; 32 per call) is one interleaved run of every contender
(`benchmarks.harness.interleaved`, each round one pass over the sentences), `--rounds` rounds bounded by
`--max-seconds`. Rates: the median of the rounds' wall-clock rates, and beside it the rate from the median CPU
seconds per round (all threads of this process, as if it had every usable core to itself): on a machine others
load, the wall-clock rates fall with the load, the CPU-time rates much less (a runtime whose idle threads spin
counts them as busy). The targets (issue 47), per input: each precision's fastest bert-tf export ≥ 0.9× its
fastest peer; the float32 and bf16 SavedModels ≥ 0.8× ONNX Runtime float32; on an AVX2-only CPU (no AVX-512),
int8 ≥ 1.0× ONNX Runtime int8.

    python -m benchmarks.run --only one_text_race --rounds 5 --max-seconds 60
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import tensorflow as tf

from benchmarks.cpu_serving import (ORT, ORT_INT8, OPENVINO, OPENVINO_BF16, SAVED_TEXT, SAVED_TEXT_BF16, SEQ_LENGTH,
                                    SERVED_INT8, TEXT_TFLITE, other_runtimes, saved_classifier)
from benchmarks.data import sst2
from benchmarks.harness import Contender, Timing, interleaved, rate_cell, usable_cores
from benchmarks.machine import machine_info
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "one_text_race"
SENTENCES = 64  # SST-2 dev sentences per round: 64 calls of one, 2 calls of 32
BATCH = 32
OURS = {"float32": (SAVED_TEXT, TEXT_TFLITE), "bf16": (SAVED_TEXT_BF16,), "int8": (SERVED_INT8,)}
PEERS = {"float32": (ORT, OPENVINO), "bf16": (OPENVINO_BF16,), "int8": (ORT_INT8,)}
SAVED_MODELS = (SAVED_TEXT, SAVED_TEXT_BF16)

Texts = list[str]


def bert_tf_contenders(model_dir: Path, scratch: Path, threads: int) -> dict[str, Callable[[Texts], np.ndarray]]:
    """bert-tf's raw-text exports, {name: texts → logits}."""
    from serving.export.saved_model import export_saved_model
    from serving.export.tflite import export_tflite
    from serving.tflite_runner import TfliteModel

    contenders = {}
    for name, quantize in ((SAVED_TEXT, "none"), (SAVED_TEXT_BF16, "bf16")):
        signature = tf.saved_model.load(str(export_saved_model(model_dir, scratch / "serving", quantize,
                                                               quantize=quantize))).signatures["serving_default"]
        contenders[name] = lambda texts, s=signature: s(text=tf.constant(texts))["logits"].numpy()
    int8 = TfliteModel(export_saved_model(model_dir, scratch / "serving", "int8", quantize="int8") / "model.tflite",
                       num_threads=threads)
    contenders[SERVED_INT8] = lambda texts: int8.run({"text": texts})["logits"]
    text_tflite = TfliteModel(export_tflite(model_dir, scratch / "text.tflite", inputs="text"), num_threads=threads)
    contenders[TEXT_TFLITE] = lambda texts: text_tflite.run({"text": texts})["logits"]
    return contenders


def rust_batch_tokenizer(vocab_file: Path) -> Callable[[Texts], dict[str, np.ndarray]]:
    """texts → the three int32 id arrays [batch, longest] by the Rust tokenizer (cut to SEQ_LENGTH tokens)."""
    import tokenizers

    rust = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    rust.enable_truncation(SEQ_LENGTH)
    rust.enable_padding()

    def tokenize(texts: Texts) -> dict[str, np.ndarray]:
        encodings = rust.encode_batch(texts)
        ids = np.array([encoding.ids for encoding in encodings], np.int32)
        mask = np.array([encoding.attention_mask for encoding in encodings], np.int32)
        return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}

    return tokenize


def race(contenders: dict[str, Callable[[Texts], np.ndarray]], sentences: Texts, batch: int,
         settings: Settings) -> tuple[dict[str, Timing], dict[str, np.ndarray]]:
    """One interleaved run: each round, each contender takes every sentence in calls of `batch`; the timings and
    each contender's logits of every sentence."""
    calls = [sentences[start:start + batch] for start in range(0, len(sentences), batch)]
    logits = {name: np.concatenate([predict(texts) for texts in calls]) for name, predict in contenders.items()}
    runs = [Contender(name, lambda p=predict: [p(texts) for texts in calls], items=len(sentences))
            for name, predict in contenders.items()]
    return interleaved(runs, settings.rounds, warmup=0, max_seconds=settings.max_seconds,
                       description=f"{batch} per call"), logits


def targets(timings: dict[str, Timing], avx512: bool) -> list[list[str]]:
    """Rows: each target of issue 47 on these timings, by wall-clock and by CPU-time rates, met or not."""
    def best(names) -> str | None:
        present = [name for name in names if name in timings]
        return max(present, key=lambda name: timings[name].median) if present else None

    def row(what: str, ours: str | None, theirs: str | None, bound: float) -> list[str] | None:
        if ours is None or theirs is None:
            return None
        wall = timings[ours].median / timings[theirs].median
        cpu = timings[ours].cpu_median / timings[theirs].cpu_median
        met = "**met**" if min(wall, cpu) >= bound else "met by wall clock only" if wall >= bound else \
            "met by CPU time only" if cpu >= bound else "not met"
        return [what, f"{ours} against {theirs}", f"{wall:.2f}×", f"{cpu:.2f}×", f"≥ {bound}", met]

    rows = [row(f"{precision}: fastest bert-tf export", best(OURS[precision]), best(PEERS[precision]), 0.9)
            for precision in OURS]
    rows += [row("SavedModel TF Serving loads", name, ORT, 0.8) for name in SAVED_MODELS]
    if not avx512:
        rows.append(row("int8 on an AVX2-only CPU", SERVED_INT8, ORT_INT8, 1.0))
    return [r for r in rows if r is not None]


def run(settings: Settings) -> BenchmarkResult:
    info = machine_info()
    title = f"## One text per call and batches of {BATCH}: the real-sentence race on {cpu_words(info)}"
    dev_file = settings.data_file("sst2", "dev.tsv")
    if not settings.vocab_file.exists() or dev_file is None:
        message = f"vocabulary or SST-2 dev set not found under {settings.data_dir}"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    sentences = sst2(dev_file, 16 if settings.quick else SENTENCES)[0]
    threads, config = usable_cores(), settings.config("base")
    tokenize = rust_batch_tokenizer(settings.vocab_file)
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        classifier, model_dir = saved_classifier(config, settings.vocab_file, scratch / "model")
        contenders = bert_tf_contenders(model_dir, scratch, threads)
        samples = {"first sentences": tokenize(sentences[:4])}
        peers, setup = other_runtimes(classifier, scratch, threads, samples)
        for name, predict in peers.items():
            if any(name in names for names in PEERS.values()):
                contenders[name] = lambda texts, p=predict: p(tokenize(texts))
        results = {batch: race(contenders, sentences, batch, settings) for batch in (1, BATCH)}
    avx512 = info["cpu_flags"].get("avx512f", False)
    parts = [title, description(sentences, threads, setup["notes"])]
    data = {}
    for batch, (timings, logits) in results.items():
        reference = logits[SAVED_TEXT]
        rows = [[name, precision_of(name), rate_cell(timing), f"{timing.cpu_median:,.1f}",
                 f"{np.abs(logits[name] - reference).max():.1e}"]
                for name, timing in sorted(timings.items(), key=lambda item: -item[1].median)]
        heading = "One sentence per call" if batch == 1 else f"Batches of {batch} sentences"
        if not any(name in timings for name in PEERS["bf16"]):
            heading += " (no bf16 peer on this CPU: OpenVINO's bf16 needs bfloat16 units)"
        parts += [f"### {heading}",
                  markdown_table(["contender", "precision", "sentences/s, wall clock",
                                  "sentences/s, CPU time", "max |Δ logit| vs the float32 SavedModel"], rows),
                  markdown_table(["target", "contenders", "× wall clock", "× CPU time", "bound", ""],
                                 targets(timings, avx512))]
        data[f"batch_{batch}"] = {"results": {n: t.summary() for n, t in timings.items()},
                                  "max_logit_difference": {n: float(np.abs(v - reference).max())
                                                           for n, v in logits.items()}}
    return BenchmarkResult(NAME, "\n\n".join(parts), data)


def cpu_words(info: dict) -> str:
    """The CPU for a title: its model, its widest vector instructions, and "loaded" when other work kept more
    threads runnable than it has cores (the load average when the run began)."""
    flags = info["cpu_flags"]
    isa = "AVX-512" if flags.get("avx512f") else "AVX2 only" if flags.get("avx2") else "no AVX2"
    hidden = " under benchmarks.avx2_only's CPUID mask (emulated)" if info.get("cpuid_hidden_flags") else ""
    load = info["load_average"][0]
    loaded = f", loaded (load average {load:.1f} on {info['usable_cores']} cores)" if load > info["usable_cores"] \
        else ""
    return f"{info['cpu_model']} (family/model {info['cpu_family_model']}, {isa}{hidden}){loaded}"


def precision_of(name: str) -> str:
    return next(precision for precision in OURS if name in OURS[precision] + PEERS[precision])


def description(sentences: Texts, threads: int, notes: list[str]) -> str:
    return " ".join([
        f"The first {len(sentences)} SST-2 dev sentences, raw text in on every side, {threads} threads per runtime; "
        "bert-tf's exports tokenize in their graph, the peers get ids from the Rust tokenizer (its time counted). "
        "Each round is one pass over the sentences per contender, interleaved. Wall clock: the median of the rounds' "
        "rates; CPU time: from the median CPU seconds of a round (every thread of this process), as if the process "
        "had every usable core to itself: the figure a loaded machine disturbs less. Logits are compared with the "
        "float32 SavedModel's on every sentence.", *notes])
