"""The suite's targets against the latest results (benchmarks/results/*.json): one table, met or not.

Targets (issue 8): float32 encoder inference within 10% of the machine's matmul peak and no
slower than the fastest contender; raw text at least 6x KerasHub (sequence_length=128) and
1.3x transformers (padding to the longest); pre-training and fine-tuning at least 1.2x
KerasHub on the same config; an input pipeline that never limits training. Issue 20: the fastest
TF-native CPU serving path at least as fast as ONNX Runtime's int8 at BERT-base, seq 128, batch 1
and 8, on the same work (128 real tokens), losing at most 0.5 point of SST-2 accuracy and CoNLL F1,
and served by `bert-tf serve` with the float32 model's label on at least 99% of SST-2 dev. Issue 24:
`bert-tf finetune` from the trained BERT-Mini within max(1 point, 2 std) of transformers with the same recipe,
task by task; int8 and bf16 losing at most 0.5 point on the models fine-tuned from it. Issue 25: a distilled
student of the SST-2 teacher keeping ≥ 97% of its dev score at ≥ 4× its float32 sentences/s (batches of 32),
and ≥ 96% at ≥ 12× in int8. Issue 36: sentence embeddings trained by `bert-tf finetune --task embed` within max(1 point,
2 std) of sentence-transformers' STS-B dev Spearman, recipe by recipe; int8 losing at most 0.5 point; each bert-tf
precision at least as fast as the fastest peer of that precision (raw text → vector, BERT-base). Issue 44: on SciFact's
dev split, the best bert-tf search pipeline ≥ BM25 + 3 nDCG@10 and ahead of all-MiniLM-L6-v2 as installed; fine-tuned
on hard negatives within max(1 point, 2 std) of sentence-transformers' nDCG@10.

Example:
    >>> summarize(Path("benchmarks/results")).name   # doctest: +SKIP
    'summary'
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.report import BenchmarkResult, markdown_table

NAME = "summary"


def _load(json_dir: Path, name: str) -> dict | None:
    path = json_dir / f"{name}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return None if data.get("skipped") else data


def _median(results: dict, name: str) -> float:
    return results[name]["median_per_s"]


def _row(target: str, measured: float, goal: float | None, unit: str = "×", source: str = "") -> list[str]:
    """A table row; `goal` None marks a figure shown for context, not a target."""
    shown = f"{measured:.1%}" if unit == "%" else f"{measured:.2f}×"
    if goal is None:
        return [target, shown, "(context)", "", source]
    wanted = f"≥ {goal:.0%}" if unit == "%" else f"≥ {goal:.2f}×"
    return [target, shown, wanted, "met" if measured >= goal else "**not met**", source]


def _inference_rows(data: dict) -> list[list[str]]:
    from benchmarks.inference import OURS, OURS_PROJECTIONS

    rows, per_sequence = [], data["gflops_per_sequence"]
    for batch, results in data["results"].items():
        ours, peak = results[OURS], data["peak_same_rounds"][batch]
        best_fraction = ours["max_per_s"] * per_sequence / peak["best"]
        cpu_fraction = ours["cpu_median_per_s"] * per_sequence / peak["cpu_median"]
        rows.append(_row(f"inference batch {batch}: best call's share of the float32 matmul peak's best call "
                         "(same rounds)", best_fraction, 0.9, "%", f"on the CPU-time basis: {cpu_fraction:.1%}"))
        if OURS_PROJECTIONS in results:
            ceiling = results[OURS_PROJECTIONS]["max_per_s"] * data["gflops_per_sequence_of"][OURS_PROJECTIONS]
            rows.append(_row(f"inference batch {batch}: the ceiling, bert_tf's dense products alone (no attention "
                             "core, no LayerNorm), same measure", ceiling / peak["best"], None, "%"))
        # Other packages only (not bert_tf's own XLA variant; the matmul chain is named "[m,k]x...").
        others = {n: r for n, r in results.items() if not n.startswith(("bert_tf", "["))}
        fastest = max(others, key=lambda n: others[n]["median_per_s"])
        rows.append(_row(f"inference batch {batch}: bert_tf ÷ fastest other package (float32)",
                         ours["median_per_s"] / others[fastest]["median_per_s"], 1.0, source=fastest))
    return rows


def _text_rows(data: dict) -> list[list[str]]:
    from benchmarks.text import KERAS_HUB, KERAS_HUB_BF16, KERAS_HUB_FUNCTION, OURS, OURS_BF16, TORCH

    results = data["results"]
    ours = _median(results, OURS)
    rows = [
        _row("raw text (SST-2 dev): bert_tf ÷ KerasHub BertTextClassifier.predict, seq 128", ours / _median(results, KERAS_HUB),
             6.0, source=KERAS_HUB),
        _row("raw text (SST-2 dev): bert_tf ÷ KerasHub's faster path (preprocessor + model in a tf.function)",
             ours / _median(results, KERAS_HUB_FUNCTION), 6.0, source=KERAS_HUB_FUNCTION),
        _row("raw text (SST-2 dev): bert_tf mixed_bfloat16 ÷ KerasHub's faster path",
             _median(results, OURS_BF16) / _median(results, KERAS_HUB_FUNCTION), None, source="not float32"),
    ]
    if KERAS_HUB_BF16 in results:
        rows.append(_row("raw text (SST-2 dev): bert_tf mixed_bfloat16 ÷ KerasHub's faster path, mixed_bfloat16",
                         _median(results, OURS_BF16) / _median(results, KERAS_HUB_BF16), None,
                         source="same precision, not float32"))
    rows.append(_row("raw text (SST-2 dev): bert_tf ÷ transformers, padding to longest", ours / _median(results, TORCH), 1.3,
                     source=TORCH))
    return rows


def _training_rows(data: dict) -> list[list[str]]:
    from benchmarks.training import (KERAS_HUB_CLASSIFIER, KERAS_HUB_MLM, KERAS_HUB_MLM_BF16, OURS_BUCKETED, OURS_FIXED,
                                     OURS_PRETRAINER, OURS_PRETRAINER_BF16)

    rows = []
    for preset, results in data["results"].items():
        finetuning, pretraining = results["finetuning"], results["pretraining"]
        hub = _median(finetuning, KERAS_HUB_CLASSIFIER)
        rows.append(_row(f"fine-tuning {preset}: bert_tf (length-bucketed, as `bert-tf finetune`) ÷ KerasHub (steps/s)",
                         _median(finetuning, OURS_BUCKETED) / hub, 1.2))
        rows.append(_row(f"fine-tuning {preset}: bert_tf padded to 128 (the same work) ÷ KerasHub",
                         _median(finetuning, OURS_FIXED) / hub, None))
        rows.append(_row(f"pre-training {preset}: bert_tf ÷ KerasHub (tokens/s)",
                         _median(pretraining, OURS_PRETRAINER) / _median(pretraining, KERAS_HUB_MLM), 1.2))
        if OURS_PRETRAINER_BF16 in pretraining:
            rows.append(_row(f"pre-training {preset}: bert_tf mixed_bfloat16 ÷ KerasHub float32",
                             _median(pretraining, OURS_PRETRAINER_BF16) / _median(pretraining, KERAS_HUB_MLM), None,
                             source="not float32"))
        if KERAS_HUB_MLM_BF16 in pretraining:
            rows.append(_row(f"pre-training {preset}: bert_tf mixed_bfloat16 ÷ KerasHub mixed_bfloat16",
                             _median(pretraining, OURS_PRETRAINER_BF16) / _median(pretraining, KERAS_HUB_MLM_BF16), None,
                             source="same precision, not float32"))
    return rows


def _pipeline_rows(data: dict) -> list[list[str]]:
    rows, pipeline = [], data["pretraining_pipeline"]["sustained_per_s"]
    for preset, results in data["training_live_and_cached"].items():
        live = next(n for n in results if n.endswith("live pipeline"))
        cached = next(n for n in results if n.endswith("cached batches"))
        rows.append(_row(f"pre-training pipeline ÷ {preset} training step (examples/s)",
                         pipeline / _median(results, cached), 1.0))
        rows.append(_row(f"{preset} training fed live ÷ fed from cache (1.0: the pipeline costs nothing)",
                         _median(results, live) / _median(results, cached), 0.95))
    return rows


def _cpu_serving_rows(data: dict) -> list[list[str]]:
    from benchmarks.cpu_serving import LITERT_INT8, ORT_INT8

    rows = []
    for description, measured in data["fixed_length"].items():
        if description.startswith("128 real tokens"):
            results = measured["results"]
            rows.append(_row(f"CPU serving, BERT-base, {description}: LiteRT int8 (`export --quantize int8`) ÷ "
                             "ONNX Runtime int8", _median(results, LITERT_INT8) / _median(results, ORT_INT8), 1.0))
    return rows


def _quantized_accuracy_rows(data: dict) -> list[list[str]]:
    rows = []
    for task, result in data["results"].items():
        scores = {path: measured["score"] for path, measured in result["paths"].items()}  # in points
        for path in ("bf16", "int8"):
            lost = scores["float32"] - scores[path]
            rows.append([f"{task} dev, {path} against float32: points of {result['metric']} lost", f"{lost:+.2f}",
                         "≤ 0.50", "met" if lost <= 0.5 else "**not met**",
                         f"{scores[path]:.2f} vs {scores['float32']:.2f}"])
    return rows


def _quality_rows(data: dict) -> list[list[str]]:
    rows = []
    for task, metrics in data["summaries"].items():
        metric, entry = next(iter(metrics.items()))  # the rule's score
        rule = entry.get("rule")
        if rule is None:
            continue
        rows.append([f"{task} dev {metric}, bert-tf finetune against transformers from the trained BERT-Mini "
                     f"({rule['seeds']} seeds each): |difference of means|", f"{abs(rule['difference']):.2f}",
                     f"≤ {rule['bound']:.2f}", "met" if rule["holds"] else "**not met**",
                     f"{entry['bert_tf']['mean']:.2f} vs {entry['transformers']['mean']:.2f}"])
    return rows


def _distillation_rows(data: dict) -> list[list[str]]:
    from benchmarks.distillation import TARGETS, fastest_keeping

    rows = []
    for precision, (share, speed) in TARGETS.items():
        best, measured = fastest_keeping(data["results"]["sst2"], precision)
        rows.append(_row(f"distillation, SST-2: the fastest {precision} student keeping ≥ {share:.0%} of the "
                         "teacher's dev accuracy, × the float32 teacher's sentences/s (batch 32)",
                         measured, speed, "×", best or "no student keeps that share"))
    return rows


def _served_quantized_rows(data: dict) -> list[list[str]]:
    results = data["results"]
    rows = []
    for path in ("bf16", "int8"):
        speed = results[path]["sentences_per_s"]["32"] / results["none"]["sentences_per_s"]["32"]
        rows.append(_row(f"`bert-tf serve`, SST-2 dev: {path} labels equal to float32's",
                         results[path]["same_labels_as_float32"], 0.99, "%",
                         f"served batch 32: {speed:.2f}× float32's sentences/s"))
    return rows


def _embedding_quality_rows(data: dict) -> list[list[str]]:
    rows = []
    for recipe, metrics in data["summaries"].items():
        entry = metrics["spearman"]
        rule = entry.get("rule")
        if rule is None:
            continue
        seeds = min(len(entry["bert_tf"]["values"]), len(entry["sentence_transformers"]["values"]))
        rows.append([f"embeddings, {recipe}: STS-B dev Spearman, bert-tf against sentence-transformers ({seeds} seeds "
                     "each): |difference of means|", f"{abs(rule['difference']):.2f}", f"≤ {rule['bound']:.2f}",
                     "met" if rule["holds"] else "**not met**",
                     f"{entry['bert_tf']['mean']:.2f} vs {entry['sentence_transformers']['mean']:.2f}"])
    lost = max(entry["float32"] - entry["int8"] for entry in data["int8"].values())
    rows.append([f"embeddings: STS-B dev points the int8 model.tflite loses (worst of {len(data['int8'])} seeds)",
                 f"{lost:.2f}", "≤ 0.50", "met" if lost <= 0.5 else "**not met**", ""])
    return rows


def _embedding_speed_rows(data: dict) -> list[list[str]]:
    from benchmarks.embedding_speed import OURS, PRECISION

    rows = []
    for label, timings in data["timings"].items():
        for ours in OURS:
            peers = [name for name in timings if PRECISION[name] == PRECISION[ours] and name not in OURS]
            fastest = max(peers, key=lambda name: _median(timings, name))
            rows.append(_row(f"embeddings, {label}: {ours} against the fastest {PRECISION[ours]} peer",
                             _median(timings, ours) / _median(timings, fastest), 1.0, "×", fastest))
    return rows


def _seed_rule_row(label: str, rule: dict, ours: dict, theirs: dict) -> list[str]:
    """The row of a seed rule (`benchmarks.seed_rule.rule`) between bert-tf's and sentence-transformers' nDCG@10."""
    return [f"{label}, bert-tf against sentence-transformers ({min(len(ours['values']), len(theirs['values']))} seeds "
            "each): |difference of nDCG@10 means|", f"{abs(rule['difference']):.2f}", f"≤ {rule['bound']:.2f}",
            "met" if rule["holds"] else "**not met**", f"{ours['mean']:.2f} vs {theirs['mean']:.2f}"]


def _search_quality_rows(data: dict) -> list[list[str]]:
    goal, rule = data["target"], data["summaries"].get("rule")
    rows = [[f"search, SciFact dev: the best bert-tf pipeline's nDCG@10 ahead of BM25 ({goal['bm25']:.2f}) and of "
             f"all-MiniLM-L6-v2 as installed ({goal['installed']:.2f})", f"{goal['ahead_of_bm25']:+.2f}, "
             f"{goal['ahead_of_installed']:+.2f}", "≥ +3.00, > 0", "met" if goal["met"] else "**not met**",
             f"{goal['best']}: {goal['ndcg@10']:.2f}"]]
    if rule is not None:
        rows.append(_seed_rule_row("search, SciFact dev: all-MiniLM-L6-v2 fine-tuned on hard negatives", rule,
                                   *(data["summaries"][key]["retrieval"]["ndcg@10"]
                                     for key in ("minilm/bert_tf", "minilm/sentence_transformers"))))
    return rows


def _rerank_quality_rows(data: dict) -> list[list[str]]:
    from benchmarks.rerank_quality import TARGET_POINTS

    summaries, first = data["summaries"], data["first_stage"]["ndcg@10"]
    best = max((key for key in summaries if key.endswith("/bert_tf")),
               key=lambda key: summaries[key]["ndcg@10"]["mean"])
    gain = summaries[best]["ndcg@10"]["mean"] - first
    rows = [[f"reranking, SciFact dev: the best bert-tf reranker's nDCG@10 over its first stage ({first:.2f})",
             f"{gain:+.2f}", f"≥ +{TARGET_POINTS:.2f}", "met" if gain >= TARGET_POINTS else "**not met**",
             f"{best}: {summaries[best]['ndcg@10']['mean']:.2f}"]]
    rule = summaries.get("rule")
    if rule is not None:
        rows.append(_seed_rule_row("reranking, SciFact dev: all-MiniLM-L6-v2 reranker", rule,
                                   *(summaries[key]["ndcg@10"]
                                     for key in ("minilm/bert_tf", "minilm/sentence_transformers"))))
    return rows


def summarize(json_dir: Path) -> BenchmarkResult:
    """The targets table from whichever results exist in `json_dir`."""
    sections = {"inference": _inference_rows, "text": _text_rows, "training": _training_rows,
                "pipelines": _pipeline_rows, "cpu_serving": _cpu_serving_rows,
                "quantized_accuracy": _quantized_accuracy_rows, "served_quantized": _served_quantized_rows,
                "quality": _quality_rows, "distillation": _distillation_rows,
                "embedding_quality": _embedding_quality_rows, "embedding_speed": _embedding_speed_rows,
                "search_quality": _search_quality_rows, "rerank_quality": _rerank_quality_rows}
    rows, sources = [], {}
    for name, make_rows in sections.items():
        data = _load(json_dir, name)
        if data is None:
            rows.append([f"{name}: no results", "", "", "", ""])
            continue
        try:
            rows += make_rows(data)
        except KeyError:
            rows.append([f"{name}: results in an older format; run `python -m benchmarks.run --only {name}`", "", "", "", ""])
            continue
        sources[name] = f"{data['date_utc'][:16]} UTC, load {data['machine']['load_average'][0]:.1f}"
    markdown = "\n\n".join([
        "## Targets of the benchmark suite",
        "From the latest `python -m benchmarks.run` results (" +
        "; ".join(f"{name}: {when}" for name, when in sources.items()) + "). Ratios of medians.",
        markdown_table(["target", "measured", "goal", "", "against / detail"], rows),
    ])
    return BenchmarkResult(NAME, markdown, {"rows": rows})
