"""Reranking speed: a query and its 100 candidates scored per call, bert-tf's float32 SavedModel and int8
`model.tflite` against sentence-transformers' `CrossEncoder` and ONNX Runtime on the same model; and the chained
search index (hybrid first stage → the reranker on its top 100 → top 10) served under 1 and 16 gRPC clients.

    python -m benchmarks.run --only rerank_speed           # ~25 minutes on 2 quiet cores, more when loaded
    python -m benchmarks.run --only rerank_speed --quick   # 2 claims, 2 rounds, few served requests

The model: a `BertReranker` on all-MiniLM-L6-v2 as installed (the preset `all-minilm-l6-v2`: 6 layers of 384) with
a seeded random one-logit head, saved by `bert_tf.save_pretrained(task="rerank", seq_length=256)`: the shape and
weights of a reranker trained from it (speed does not depend on the head's trained values); pairs cut at 256 tokens.
The work: the first 8 SciFact train claims, each with BM25's top 100 of the 5,183 abstracts
(`bert_tf.retrieval.bm25.BM25Index`), raw text in on every side, one claim and its 100 abstracts per call →
100 scores (most pairs reach the 256 tokens: abstracts are ~250 words).
Contenders, every one holding exactly the same weights:
- bert-tf: the rerank export's `serving_default` (`serving.export.saved_model.export_saved_model`: `query`
  [1], `document` [1, 100] → `score` [1, 100]; tokenizer in the graph), float32; and the int8 `model.tflite` of
  `quantize="int8"` (LiteRT, raw text in), as `bert-tf serve` serves them;
- sentence-transformers: `CrossEncoder` of the CrossEncoder folder bert-tf writes (`RerankTask.folder_format`),
  `predict` of the 100 pairs in one batch, raw logits, float32, torch threads = the usable cores;
- ONNX Runtime: transformers' `BertForSequenceClassification` of that folder exported to ONNX
  (`benchmarks.contenders.export_onnx`), fused by ONNX Runtime's BERT optimizer (float32) and with int8 weights
  (`quantize_dynamic`) (`benchmarks.cpu_serving.onnx_runtime_files`), ids from the Rust tokenizer of the pairs
  (`tokenizers`, longest-first truncation to 256, padded to the longest pair; its time counted).
Every contender's scores on every pair are compared with the float32 SavedModel's (largest difference, and each
claim's Spearman rank correlation of the 100 scores, the lowest shown). Interleaved rounds
(`benchmarks.harness.interleaved`), a round being one pass over the claims per contender; the agreement pass is the
warm-up.

Served: `bert-tf index --rerank`'s chained index over the 5,183 abstracts (`serving.export.search_index`
`write_search_index(..., reranker=reranker_spec(DIR))` through `benchmarks.search_speed.write_index`): BM25 and
all-MiniLM-L6-v2 fused by reciprocal rank (its `hybrid` signature), the first stage's top 100 reranked, top 10
returned. The dense side stores random unit vectors (as `benchmarks.search_speed`: a vector's values do not change
what its product costs, and embedding the abstracts would take ~20 minutes here); the query is embedded by the
model. `benchmarks.serving_load` serves it (request batching off), one claim per request over kept gRPC connections
from 1 and 16 clients; every answer is compared with the claim run alone in process; the direct row is one claim per
in-process call.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import tensorflow as tf
from tqdm import tqdm

import bert_tf
from benchmarks import search_speed
from benchmarks.contenders import export_onnx, use_all_cores_in_torch
from benchmarks.cpu_serving import ORT, ORT_INT8, onnx_runtime_files, onnx_runtime_predictors
from benchmarks.harness import Contender, Timing, interleaved, rate_cell, usable_cores
from benchmarks.machine import machine_info
from benchmarks.one_text_race import cpu_words
from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "rerank_speed"
PRESET = "all-minilm-l6-v2"
SCIFACT = ("scifact",)
QUERIES, QUICK_QUERIES = 8, 2
CANDIDATES = 100
LENGTH = 256
F32, INT8 = "bert-tf SavedModel float32 (raw text)", "bert-tf int8 model.tflite (raw text)"
CROSS_ENCODER = "sentence-transformers CrossEncoder float32"
ORT_F32, ORT_I8 = "ONNX Runtime float32 fused + Rust tokenizer", "ONNX Runtime int8 dynamic + Rust tokenizer"
PRECISION = {F32: "float32", CROSS_ENCODER: "float32", ORT_F32: "float32", INT8: "int8", ORT_I8: "int8"}
OURS = {"float32": F32, "int8": INT8}
# benchmarks.serving_load's requests per row, rounds, bound on the timed part (s) and each request's deadline (s):
# 16 clients share the cores, so a request waits for ~16 others.
SERVED_LOAD = {"requests": 32, "rounds": 2, "max_seconds": 900, "timeout_s": 900}
QUICK_LOAD = {"requests": 4, "rounds": 2, "max_seconds": 300, "timeout_s": 900}

Score = Callable[[str, list[str]], np.ndarray]  # a query and its documents → one score per document


def reranking_work(settings: Settings, count: int):
    """The SciFact train set and its first `count` claims, each with BM25's top `CANDIDATES` abstracts:
    (set, [(claim, [abstract, ...]), ...])."""
    from bert_tf.retrieval.bm25 import BM25Index
    from bert_tf.retrieval.retrieval_set import read_retrieval_set

    scifact = read_retrieval_set(settings.data_file(*SCIFACT), "train")
    claims = scifact.queries[:count]
    indices, _ = BM25Index(scifact.documents).search(claims, CANDIDATES)
    return scifact, [(claim, [scifact.documents[index] for index in row])
                     for claim, row in zip(claims, indices.tolist())]


def reranker_dir(directory: Path) -> Path:
    """A `BertReranker` on the installed all-MiniLM-L6-v2 with a seeded random head, as a bert-tf model directory."""
    import keras

    from bert_tf.tasks.rerank.model import BertReranker

    keras.utils.set_random_seed(0)
    model = BertReranker(bert_tf.load_model_directory(PRESET).encoder)
    return bert_tf.save_pretrained(model, directory, task="rerank", seq_length=LENGTH)


def bert_tf_contenders(model_dir: Path, scratch: Path, threads: int) -> dict[str, Score]:
    """The float32 SavedModel's `serving_default` and the int8 `model.tflite` of the rerank export."""
    from serving.export.saved_model import export_saved_model
    from serving.tflite_runner import TfliteModel

    float32 = export_saved_model(model_dir, scratch / "serving", "rerank_float32")
    int8 = export_saved_model(model_dir, scratch / "serving", "rerank_int8", quantize="int8")
    signature = tf.saved_model.load(str(float32)).signatures["serving_default"]
    tflite = TfliteModel(int8 / "model.tflite", num_threads=threads)
    return {F32: lambda query, documents: signature(query=tf.constant([query]),
                                                    document=tf.constant([documents]))["score"].numpy()[0],
            INT8: lambda query, documents: tflite.run({"query": np.array([query], object),
                                                       "document": np.array([documents], object)})["score"][0]}


def cross_encoder_folder(model_dir: Path, scratch: Path) -> Path:
    """The reranker written as sentence-transformers' CrossEncoder folder, by bert-tf."""
    from bert_tf.tasks.rerank.task import RerankTask

    return RerankTask.folder_format.write(bert_tf.load_model_directory(model_dir).model, scratch / "cross_encoder",
                                          seq_length=LENGTH)


def cross_encoder_contender(folder: Path) -> dict[str, Score]:
    """`CrossEncoder.predict` of the query's pairs, one batch, raw logits."""
    import torch
    from sentence_transformers import CrossEncoder

    use_all_cores_in_torch()
    model = CrossEncoder(str(folder), max_length=LENGTH, device="cpu")
    identity = torch.nn.Identity()
    return {CROSS_ENCODER: lambda query, documents: model.predict(
        [(query, document) for document in documents], batch_size=CANDIDATES, activation_fn=identity,
        convert_to_numpy=True, show_progress_bar=False)}


def pair_tokenizer(vocab_file: Path) -> Callable[[str, list[str]], dict[str, np.ndarray]]:
    """(query, documents) → the three id arrays [documents, longest] of `[CLS] query [SEP] document [SEP]` by the Rust
    tokenizer (bert_tf's input names), each pair cut to `LENGTH` tokens longest first."""
    import tokenizers

    rust = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    rust.enable_truncation(LENGTH)
    rust.enable_padding()

    def tokenize(query: str, documents: list[str]) -> dict[str, np.ndarray]:
        encodings = rust.encode_batch([(query, document) for document in documents])
        return {name: np.array([getattr(encoding, field) for encoding in encodings], np.int64)
                for name, field in (("input_word_ids", "ids"), ("input_mask", "attention_mask"),
                                    ("input_type_ids", "type_ids"))}

    return tokenize


def onnx_runtime_contenders(folder: Path, scratch: Path, threads: int) -> tuple[dict[str, Score], dict[str, int]]:
    """ONNX Runtime's fused float32 and int8 graphs of transformers' classifier of the folder, behind the Rust
    tokenizer; and the fused graph's counts of fused operators."""
    import transformers

    transformers.logging.set_verbosity_error()
    model = transformers.BertForSequenceClassification.from_pretrained(str(folder), attn_implementation="eager").eval()
    (scratch / "onnx").mkdir()
    files, fused = onnx_runtime_files(export_onnx(model, scratch / "onnx" / "plain.onnx", output="logits"),
                                      model.config)
    tokenize = pair_tokenizer(folder / "vocab.txt")
    names = {ORT: ORT_F32, ORT_INT8: ORT_I8}
    return {names[name]: (lambda query, documents, p=predict: p(tokenize(query, documents))[:, 0])
            for name, predict in onnx_runtime_predictors(files, threads).items()}, fused


def rank_correlations(scores: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Spearman's rank correlation of each row of `scores` with the same row of `reference`.

    >>> rank_correlations(np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]]), np.array([[0.1, 0.2, 0.3], [1, 2, 3]])).tolist()
    [1.0, -0.5]
    """
    from scipy.stats import spearmanr

    return np.array([spearmanr(row, expected).statistic for row, expected in zip(scores, reference)])


def agreement(calls: dict[str, Score], work) -> dict[str, dict]:
    """Per contender: the largest score difference from the float32 SavedModel's over every pair, and the lowest and
    the mean of the claims' rank correlations with it. The first call of each contender: the warm-up."""
    scores = {name: np.stack([np.asarray(call(query, documents), np.float32)
                              for query, documents in tqdm(work, desc=f"scores: {name}", leave=False)])
              for name, call in calls.items()}
    reference = scores[F32]
    out = {}
    for name, values in scores.items():
        correlations = rank_correlations(values, reference)
        out[name] = {"max_difference": float(np.abs(values - reference).max()),
                     "lowest_rank_correlation": float(correlations.min()),
                     "mean_rank_correlation": float(correlations.mean())}
    return out


def ratios(timings: dict[str, Timing]) -> list[list[str]]:
    """Rows: per precision, bert-tf's export against the fastest peer of that precision, by wall-clock and by CPU-time
    rates.

    >>> timed = {F32: Timing(F32, 1, [0.5], [1.0]), CROSS_ENCODER: Timing(CROSS_ENCODER, 1, [1.0], [1.0]),
    ...          ORT_F32: Timing(ORT_F32, 1, [0.25], [0.5]), INT8: Timing(INT8, 1, [0.2], [0.4]),
    ...          ORT_I8: Timing(ORT_I8, 1, [0.4], [0.4])}
    >>> [row[2:] for row in ratios(timed)]
    [['0.50×', '0.50×'], ['2.00×', '1.00×']]
    """
    rows = []
    for precision, ours in OURS.items():
        peers = [name for name in timings if PRECISION[name] == precision and name != ours]
        fastest = max(peers, key=lambda name: timings[name].median)
        rows.append([precision, f"{ours} against {fastest}", f"{timings[ours].median / timings[fastest].median:.2f}×",
                     f"{timings[ours].cpu_median / timings[fastest].cpu_median:.2f}×"])
    return rows


def contenders_race(model_dir: Path, work, scratch: Path, settings: Settings):
    """Every contender built, checked against the float32 SavedModel and raced: (agreement, timings, fused operators).
    The models are let go on return, before the served index loads its own."""
    threads = usable_cores()
    calls = bert_tf_contenders(model_dir, scratch, threads)
    folder = cross_encoder_folder(model_dir, scratch)
    calls.update(cross_encoder_contender(folder))
    onnx, fused = onnx_runtime_contenders(folder, scratch, threads)
    calls.update(onnx)
    agreed = agreement(calls, work)
    runs = [Contender(name, lambda call=call: [call(query, documents) for query, documents in work], items=len(work))
            for name, call in calls.items()]
    timings = interleaved(runs, settings.rounds, warmup=0, max_seconds=settings.max_seconds, description="rerank")
    return agreed, timings, fused


def chain(model_dir: Path, scifact, work, scratch: Path, settings: Settings) -> tuple[dict, list[dict]]:
    """The chained index over every abstract written and served: (what writing it measured, serving_load's rows)."""
    from serving.export.search_index import reranker_spec
    from serving.export.signatures import serving_spec

    preset = bert_tf.load_model_directory(PRESET)
    base_path = scratch / "reranked_index"
    print(f"rerank_speed: writing the chained index of {len(scifact.documents):,} abstracts", flush=True)
    built = search_speed.write_index(serving_spec(preset), preset.encoder.config.hidden_size, scifact.documents,
                                     base_path / "1", reranker=reranker_spec(model_dir))
    queries_file = scratch / "claims.txt"
    queries_file.write_text("\n".join(claim.replace("\n", " ") for claim, _ in work) + "\n", encoding="utf-8")
    load = QUICK_LOAD if settings.quick else SERVED_LOAD
    extra = ["--sentence_count", str(len(work)), "--reference_batch", "1", "--warmup", "1",
             *(flag for name, value in load.items() for flag in (f"--{name}", str(value)))]
    print("rerank_speed: serving it", flush=True)
    return built, search_speed.served(base_path, queries_file, scratch / "served", settings, tuple(extra))


def run(settings: Settings) -> BenchmarkResult:
    title = (f"## Reranking speed: a query and {CANDIDATES} candidates, bert-tf against sentence-transformers' "
             "CrossEncoder and ONNX Runtime")
    if settings.data_file(*SCIFACT) is None:
        message = f"no {settings.data_dir.joinpath(*SCIFACT)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    machine = machine_info()
    scifact, work = reranking_work(settings, QUICK_QUERIES if settings.quick else QUERIES)
    with tempfile.TemporaryDirectory(prefix="rerank-speed-") as directory:
        scratch = Path(directory)
        model_dir = reranker_dir(scratch / "reranker")
        agreed, timings, fused = contenders_race(model_dir, work, scratch, settings)
        built, served_rows = chain(model_dir, scifact, work, scratch, settings)
    return report(title, machine, work, agreed, timings, fused, built, served_rows, settings)


def report(title, machine, work, agreed, timings, fused, built, served_rows, settings) -> BenchmarkResult:
    best = max(timing.median for timing in timings.values())
    rows = [[name, PRECISION[name], rate_cell(timing, 2), f"{timing.median_seconds / len(work) * 1e3:,.0f}",
             f"{timing.median * CANDIDATES:,.0f}", f"{timing.cpu_median:,.2f}", f"{timing.median / best:.2f}",
             f"{agreed[name]['max_difference']:.1e}", f"{agreed[name]['lowest_rank_correlation']:.4f}"]
            for name, timing in sorted(timings.items(), key=lambda item: -item[1].median)]
    served = [[row["label"], f"{row['requests']:,}", f"{row['requests_per_s']:,.2f}", f"{row['p50_ms']:,.0f}",
               f"{row['p99_ms']:,.0f}", str(row["errors"])] for row in served_rows]
    quick = ("\n\n**Quick mode: 2 claims, 2 rounds, a few served requests: the code runs, the figures mean little.**"
             if settings.quick else "")
    paragraphs = [paragraph.strip() for paragraph in __doc__.split("\n\n")]
    fused_ops = ", ".join(f"{op} {count}" for op, count in fused.items())
    load = QUICK_LOAD if settings.quick else SERVED_LOAD
    setting = " ".join([
        f"Run on {cpu_words(machine)}, {usable_cores()} threads per runtime; load average at the start",
        f"{'/'.join(f'{x:.1f}' for x in machine['load_average'])}. {len(work)} claims × {CANDIDATES} abstracts",
        f"a round. Rates: queries (of {CANDIDATES} candidates) per second, median (quartiles) of the rounds'",
        f"wall-clock rates; ms per query from the median round; pairs/s = queries/s × {CANDIDATES}; CPU time: from",
        "the median CPU seconds of a round (every thread of this process), as if the process had every usable core",
        "to itself, the figure a",
        f"loaded machine disturbs less. ONNX Runtime's fused graph: {fused_ops}."])
    served_setting = " ".join([
        f"The index: {built['disk_bytes'] / 2**20:,.0f} MiB on disk, written in {built['write_seconds']:,.0f} s.",
        f"Each row sends {load['requests']} requests in {load['rounds']} interleaved rounds (timing stopped after",
        f"{load['max_seconds']} s), each request given {load['timeout_s']} s: 16 clients share the cores, so each",
        "request waits for the others' reranking. With so few requests the p99 is close to the slowest one."])
    markdown = f"""{title}{quick}

{paragraphs[2]}

{setting}

{markdown_table(["contender", "precision", "queries/s, wall clock", "ms per query", "pairs/s",
                 "queries/s, CPU time", "vs fastest", "largest score difference from the float32 SavedModel",
                 "lowest rank correlation with it (Spearman, per claim)"], rows)}

bert-tf against the fastest peer of each precision:

{markdown_table(["precision", "contenders", "× wall clock", "× CPU time"], ratios(timings))}

### Served: the chained index (hybrid first stage → reranked top {CANDIDATES} → top 10), `bert-tf serve`

{paragraphs[3]}

{served_setting}

{markdown_table(["what is timed", "requests", "queries/s", "p50 ms", "p99 ms", "errors"], served)}
"""
    data = {"agreement": agreed, "timings": {name: timing.summary() for name, timing in timings.items()},
            "fused_operators": fused, "index": built, "serving_load": served_rows, "claims": len(work),
            "candidates": CANDIDATES, "seq_length": LENGTH}
    return BenchmarkResult(NAME, markdown, data)
