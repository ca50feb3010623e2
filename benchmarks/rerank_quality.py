"""Reranking quality on SciFact: the best first stage's top `DEPTH` candidates re-ordered by cross-encoders trained
on mined hard negatives, from all-MiniLM-L6-v2 and from the team's BERT-Mini (bert-tf against sentence-transformers'
`CrossEncoder`, the same recipe, several seeds).

    python -m benchmarks.run --only rerank_quality          # hours on 2 cores; a stopped run resumes
    python -m benchmarks.run --only rerank_quality --quick  # smoke: search_quality's quick split, one seed
    BERT_TF_RERANK_SEEDS=1 python -m benchmarks.run --only rerank_quality   # fewer seeds (the section says so)
    BERT_TF_RERANK_RECORDED=1 python -m benchmarks.run --only rerank_quality  # the section from the runs kept so far

The split, its BM25 and the installed model's cosines are search_quality's (`search_quality.WORK_DIR`: the last 200
of SciFact's 809 train claims by id are the dev claims, the other claims train). The first stage is the best one
the project serves untrained: `bert-tf index --fusion weighted` (dense weight 0.5) of BM25 and all-MiniLM-L6-v2 as
installed, computed by the index's own graph code (`benchmarks.served_fusion.fused_matrix`); each dev claim's top
`DEPTH` abstracts are reranked, and the abstracts below them keep their first-stage order after the reranked ones.
Training rows: bert-tf's `bert-tf mine` file of search_quality (claim, cited abstract, 2 hard negatives), read by both
frameworks. Recipe: `EPOCHS` epochs, `BATCH` rows per step, pairs cut at `LENGTH` tokens (query first, the longer text
shortened), the listwise loss (softmax cross-entropy over sigmoid(logit) × 10 of the positive and its negatives —
sentence-transformers' cross-encoder `MultipleNegativesRankingLoss` with its random in-batch negatives turned off,
bert-tf's `--loss listwise`), AdamW (weight decay 0.01) with 10% warm-up then linear decay, rates `LEARNING_RATES`.
bert-tf: `bert-tf finetune --task rerank` then `BertReranker.predict` on the pairs; the reference:
`benchmarks.rerank_quality_reference`. Rule (all-MiniLM-L6-v2): |mean(bert_tf) − mean(sentence_transformers)| ≤
max(1 point, 2 × the larger std). Target (issue 46): reranking adds ≥ 2 nDCG@10 over the best first stage.
Every finished run is kept in `WORK_DIR/rerank_results.json`, so the benchmark resumes where it stopped (on a new
machine, from the runs its last section recorded).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import search_quality, served_fusion
from benchmarks.machine import machine_info
from benchmarks.report import BenchmarkResult, markdown_table, portable_command
from benchmarks.seed_rule import mean_std, rule
from benchmarks.settings import Settings

NAME = "rerank_quality"
SEEDS = tuple(int(seed) for seed in os.environ.get("BERT_TF_RERANK_SEEDS", "1,2,3").split(","))
RECORDED_ONLY = os.environ.get("BERT_TF_RERANK_RECORDED") == "1"
DEPTH = 100  # the first stage's candidates reranked per claim
QUICK_DEPTH = 20
FIRST_STAGE = ("weighted", 0.5)  # `bert-tf index --fusion weighted --dense-weight 0.5`
# Chosen from the training loss alone (nothing tuned on the dev claims): one epoch of 16 rows a step at 2e-5 (36
# updates) left the listwise loss at ln 3, the new head unlearned; rows of 8 (72 updates an epoch), two epochs.
EPOCHS, BATCH, LENGTH = 2, 8, 256
LEARNING_RATES = {"minilm": 5e-5, "bert_mini": 1e-4}
SCORING_BATCH = 64
TARGET_POINTS = 2.0  # nDCG@10 points over the best first stage (issue 46)
METRICS = search_quality.METRICS
NAMES = {"minilm/bert_tf": "all-MiniLM-L6-v2 reranker, bert-tf",
         "minilm/sentence_transformers": "all-MiniLM-L6-v2 reranker, sentence-transformers",
         "bert_mini/bert_tf": "BERT-Mini reranker, bert-tf"}


def first_stage(folder: Path, work: Path) -> tuple[search_quality.Scorer, np.ndarray]:
    """The dev split of `folder` (search_quality's split) as a scorer, and the served weighted fusion's scores
    [claims, abstracts] (search_quality's cosines of the installed model, computed here when it has not kept them)."""
    scorer = search_quality.Scorer(folder)
    dense = search_quality.installed_matrix("bert_tf", None, work, scorer, contextlib.nullcontext())
    return scorer, served_fusion.fused_matrix(dense, scorer.bm25_matrix, *FIRST_STAGE)


def candidates(fused: np.ndarray, depth: int) -> np.ndarray:
    """int [claims, depth]: each claim's best `depth` abstracts by the first stage, best first.

    >>> candidates(np.array([[0.1, 0.9, 0.5], [0.3, 0.2, 0.8]]), 2).tolist()
    [[1, 2], [2, 0]]
    """
    return np.argsort(-fused, axis=1, kind="stable")[:, :depth]


def reranked_matrix(fused: np.ndarray, chosen: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The first stage's ranking with each claim's candidates re-ordered by `scores` [claims, depth], all of them ahead
    of the abstracts that were not candidates (those keep their first-stage order).

    >>> reranked_matrix(np.array([[0.1, 0.9, 0.5]]), np.array([[1, 2]]), np.array([[-3.0, 4.0]])).argsort()[0, ::-1]
    array([2, 1, 0])
    """
    below = fused - fused.max() - 1.0  # every abstract left out under every candidate, in its first-stage order
    matrix = below.astype(np.float64)
    top = np.asarray(scores, np.float64)
    np.put_along_axis(matrix, chosen, top - top.min() + 1.0, axis=1)
    return matrix


def pairs_file(scorer: search_quality.Scorer, chosen: np.ndarray, path: Path) -> Path:
    """The (claim, abstract) pairs to score, one JSON line each, claim by claim in candidate order; kept."""
    lines = [json.dumps({"query": scorer.dev.queries[row], "document": scorer.dev.documents[column]},
                        ensure_ascii=False) for row, columns in enumerate(chosen.tolist()) for column in columns]
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def finetune_flags(start: str, init: str, train: Path, seed: int, work: Path) -> list[str]:
    return ["--task", "rerank", "--train", str(train), "--init", init,
            "--out", str(work / "models" / f"rerank_{start}_{seed}"), "--overwrite", "--seed", str(seed),
            "--epochs", str(EPOCHS), "--batch-size", str(BATCH), "--seq-length", str(LENGTH),
            "--learning-rate", str(LEARNING_RATES[start]), "--warmup-proportion", "0.1", "--last-epoch"]


def bert_tf_scores(model_dir: Path, pairs: Path) -> np.ndarray:
    """float32 [pairs]: the reranker's logit of each pair of `pairs`, in order."""
    import bert_tf

    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    model = bert_tf.load_model_directory(model_dir).model
    return np.asarray(model.predict(([row["query"] for row in rows], [row["document"] for row in rows]),
                                    batch_size=SCORING_BATCH, verbose=0), np.float32).reshape(-1)


def int8_scores(model_dir: Path, pairs: Path, depth: int, scratch: Path) -> np.ndarray:
    """float32 [pairs]: the reranker's int8 `model.tflite` (`bert-tf export --quantize int8`) on each claim's `depth`
    candidates, one claim per call, in order."""
    from serving.export.saved_model import export_saved_model
    from serving.tflite_runner import TfliteModel

    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    model = TfliteModel(export_saved_model(model_dir, scratch, "int8", quantize="int8") / "model.tflite",
                        num_threads=os.cpu_count() or 1)
    scores = [model.run({"query": [rows[start]["query"]], "document": [[row["document"] for row in
                                                                        rows[start:start + depth]]]})["score"]
              for start in range(0, len(rows), depth)]
    return np.concatenate(scores, axis=None).astype(np.float32)


def run_trained(start: str, init: str, contender: str, seed: int, work: Path, pairs: Path, scorer, fused,
                chosen) -> dict:
    """One reranker trained and scored on the candidates."""
    log = work / "logs" / f"rerank_{start}_{contender}_{seed}.log"
    scores_file = work / "matrices" / f"rerank_{start}_{contender}_{seed}.npy"
    started = time.perf_counter()
    train = search_quality.mined_files(work)["bert_tf"]
    flags = finetune_flags(start, init, train, seed, work)
    if contender == "bert_tf":
        search_quality.run_command([*search_quality.bert_tf_command("finetune"), *flags], log)
        training = json.loads((work / "models" / f"rerank_{start}_{seed}" / "bert_tf.json").read_text())["training"]
        scoring = time.perf_counter()
        np.save(scores_file, bert_tf_scores(work / "models" / f"rerank_{start}_{seed}", pairs))
        extra = {"epoch_losses": training["history"]["loss"], "train_seconds": training["train_seconds"],
                 "score_seconds": time.perf_counter() - scoring}
        if seed == SEEDS[0]:  # the int8 export's loss, measured once per start
            with tempfile.TemporaryDirectory(prefix="rerank-int8-") as scratch:
                int8 = int8_scores(work / "models" / f"rerank_{start}_{seed}", pairs, chosen.shape[1], Path(scratch))
            extra["int8_retrieval"] = scorer.numbers(reranked_matrix(fused, chosen, int8.reshape(chosen.shape)))
    else:
        from bert_tf.checkpoints.installed import installed_model_folder

        checkpoint = str(installed_model_folder(init) or init)
        extra = search_quality.run_reference(
            {"action": "rerank", "checkpoint": checkpoint, "train": str(train), "pairs": str(pairs), "seed": seed,
             "epochs": EPOCHS, "batch_size": BATCH, "learning_rate": LEARNING_RATES[start], "warmup_proportion": 0.1,
             "weight_decay": 0.01, "seq_length": LENGTH, "scale": 10.0, "scoring_batch": SCORING_BATCH,
             "threads": os.cpu_count() or 1, "scores": str(scores_file)}, log,
            module="benchmarks.rerank_quality_reference")
    scores = np.load(scores_file).reshape(chosen.shape)
    return {**extra, "retrieval": scorer.numbers(reranked_matrix(fused, chosen, scores)), "flags": flags,
            "wall_seconds": round(time.perf_counter() - started, 1),
            "load_average": [round(x, 2) for x in os.getloadavg()], "cpu": machine_info()["cpu_family_model"]}


def run_all(settings: Settings, work: Path) -> dict:
    """Every run not kept from an earlier one, seed by seed (each start's first seed first), one at a time."""
    for name in ("logs", "models", "matrices"):
        (work / name).mkdir(parents=True, exist_ok=True)
    folder = search_quality.split_folder(settings, work)
    scorer, fused = first_stage(folder, work)
    depth = QUICK_DEPTH if settings.quick else DEPTH
    chosen = candidates(fused, depth)
    pairs = pairs_file(scorer, chosen, work / f"rerank_pairs_{depth}.jsonl")
    results_file = work / "rerank_results.json"
    results = search_quality.kept_runs(results_file, NAME, settings.quick)
    seeds = SEEDS[:1] if settings.quick else SEEDS
    starts = [("minilm", search_quality.PRESET, ("bert_tf", "sentence_transformers")),
              ("bert_mini", str(settings.data_file(*search_quality.BERT_MINI)), ("bert_tf",))]
    wanted = {f"{start}/{contender}/{seed}": (start, init, contender, seed) for seed in seeds
              for start, init, contenders in starts for contender in contenders}
    train = search_quality.mined_files(work)["bert_tf"]
    missing = [key for key, (start, init, contender, seed) in wanted.items() if key not in results
               or results[key]["flags"] != finetune_flags(start, init, train, seed, work)
               or results[key].get("depth") != depth]
    if not RECORDED_ONLY:
        search_quality.mine("bert_tf", folder, work)
        for key in missing:
            print(f"{key}: running", flush=True)
            result = {**run_trained(*wanted[key], work, pairs, scorer, fused, chosen), "depth": depth}
            print(f"{key}: nDCG@10 {result['retrieval']['ndcg@10']:.2f} ({result['wall_seconds']:.0f} s)", flush=True)
            results[key] = result
            results_file.write_text(json.dumps(results, indent=2) + "\n")
        missing = []
    return {"runs": {key: results[key] for key in wanted if key not in missing}, "missing": missing, "depth": depth,
            "first_stage": scorer.numbers(fused), "bm25": scorer.numbers(scorer.bm25_matrix),
            "random_order": scorer.numbers(reranked_matrix(fused, chosen,
                                                           np.random.default_rng(0).random(chosen.shape))),
            "candidates_recall": 100 * float(np.mean([len(set(chosen[row].tolist()) & set(relevant)) / len(relevant)
                                                      for row, relevant in enumerate(scorer.dev.relevant)
                                                      if relevant])),
            "split": {"dev_claims": len(scorer.dev.queries), "documents": len(scorer.dev.documents),
                      "train_rows": sum(1 for _ in train.open(encoding="utf-8")) if train.exists() else 0}}


def summaries(runs: dict) -> dict:
    """Per start and contender, the metrics over the seeds; the rule for all-MiniLM-L6-v2."""
    out = {}
    for key in sorted({key.rsplit("/", 1)[0] for key in runs}):
        chosen = [result for name, result in runs.items() if name.startswith(key + "/")]
        out[key] = {metric: mean_std([result["retrieval"][metric] for result in chosen]) for metric in METRICS}
    ours, theirs = out.get("minilm/bert_tf"), out.get("minilm/sentence_transformers")
    if ours and theirs:
        out["rule"] = rule(ours["ndcg@10"], theirs["ndcg@10"])
    return out


def run(settings: Settings) -> BenchmarkResult:
    title = f"## Reranking on SciFact: the served hybrid's top {QUICK_DEPTH if settings.quick else DEPTH} reranked " \
            "by cross-encoders, bert-tf against sentence-transformers"
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in (search_quality.SCIFACT, search_quality.BERT_MINI)
               if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory(prefix="rerank-quality-") as scratch:
        results = run_all(settings, Path(scratch) if settings.quick else search_quality.WORK_DIR)
    results["summaries"] = summaries(results["runs"])
    return BenchmarkResult(NAME, markdown(title, results, settings), results)


def markdown(title: str, results: dict, settings: Settings) -> str:
    summary, first = results["summaries"], results["first_stage"]["ndcg@10"]
    rows = [[name, *(f"{numbers[metric]:.2f}" for metric in METRICS)]
            for name, numbers in (("BM25 (bm25s)", results["bm25"]),
                                  ("first stage: BM25 + all-MiniLM-L6-v2 as installed, weighted 0.5 (as served)",
                                   results["first_stage"]),
                                  (f"its top {results['depth']} in random order (a floor)", results["random_order"]))]
    rows += [[f"{NAMES[key]}, top {results['depth']} reranked",
              *(f"{summary[key][metric]['mean']:.2f} ± {summary[key][metric]['std']:.2f}" for metric in METRICS)]
             for key in NAMES if key in summary]
    ours = [summary[key]["ndcg@10"]["mean"] for key in NAMES if key in summary and key.endswith("/bert_tf")]
    target = ("not judged: no bert-tf run finished yet" if not ours else
              f"{'**met**' if max(ours) - first >= TARGET_POINTS else '**not met**'}: the best bert-tf reranker "
              f"{max(ours):.2f}, {max(ours) - first:+.2f} on the first stage ({first:.2f})")
    int8 = [f"{NAMES[key.rsplit('/', 1)[0]]} (seed {key.rsplit('/', 1)[1]}): nDCG@10 "
            f"{result['int8_retrieval']['ndcg@10']:.2f} against float32's {result['retrieval']['ndcg@10']:.2f} "
            f"({result['int8_retrieval']['ndcg@10'] - result['retrieval']['ndcg@10']:+.2f})"
            for key, result in sorted(results["runs"].items()) if "int8_retrieval" in result]
    verdict = summary.get("rule")
    rule_line = ("not judged, a contender's runs missing" if verdict is None else
                 f"bert-tf − sentence-transformers = {verdict['difference']:+.2f}, bound {verdict['bound']:.2f}: "
                 f"{'holds' if verdict['holds'] else '**MISS**'}")
    detail = [[key, f"{result['retrieval']['ndcg@10']:.2f}", " / ".join(f"{x:.4f}" for x in result["epoch_losses"]),
               f"{result['train_seconds']:.0f}", f"{result['wall_seconds']:.0f}",
               "/".join(f"{x:.1f}" for x in result["load_average"]), result.get("cpu", "not recorded")]
              for key, result in sorted(results["runs"].items())]
    runs = "No run finished yet." if not detail else markdown_table(
        ["run", "nDCG@10", "loss", "train s", "wall s", "load after", "CPU family/model"], detail)
    partial = (f"\n\n**Partial: not yet run: {', '.join(results['missing'])}** (the section written from the runs kept "
               "so far by `BERT_TF_RERANK_RECORDED=1 python -m benchmarks.run --only rerank_quality`; the full command "
               "goes on where it stopped)." if results["missing"] else "")
    quick = ("\n\n**Quick mode: a few claims, a sub-corpus, one seed: the code runs, the figures mean nothing.**"
             if settings.quick else "")
    command = next((portable_command(["bert-tf", "finetune", *result["flags"]])
                    for key, result in sorted(results["runs"].items()) if key.startswith("minilm/bert_tf/")), None)
    split = results["split"]
    return f"""{title}{quick}{partial}

{split['dev_claims']} dev claims against {split['documents']:,} abstracts (search_quality's split). First stage: the
index's weighted fusion of BM25 and all-MiniLM-L6-v2 as installed (`bert-tf index --fusion weighted`, dense weight 0.5,
the default weight, fixed before any run); its top {results['depth']} hold {results['candidates_recall']:.1f}% of the
relevant abstracts. Training: search_quality's `bert-tf mine` rows ({split['train_rows']} claims with their cited
abstract and 2 hard negatives), the same file for both frameworks; {EPOCHS} epochs, {BATCH} rows a step, pairs cut at {LENGTH}
tokens, listwise loss (scale 10, sigmoid; no random in-batch negatives), AdamW, 10% warm-up, linear decay, rate
{LEARNING_RATES['minilm']:g} from all-MiniLM-L6-v2 and {LEARNING_RATES['bert_mini']:g} from BERT-Mini (its head new in
both frameworks; the recipe chosen from the training loss alone: 1 epoch of 16 rows at 2e-5, 36 updates, left the
listwise loss at ln 3, the head unlearned). Seeds: {', '.join(sorted({key.rsplit('/', 1)[1] for key in results['runs']})) or 'none finished'}
(mean ± std). Scores × 100; nothing tuned on the dev split.

{markdown_table(["ranking", "nDCG@10", "MRR@10", "Recall@1", "Recall@10", "Recall@100"], rows)}

Target (issue 46: reranking ≥ first stage + {TARGET_POINTS:g} nDCG@10): {target}.

Rule (all-MiniLM-L6-v2 reranker, nDCG@10): {rule_line}.

The int8 `model.tflite` (`bert-tf export --quantize int8`, one claim and its candidates per call) of each start's
first seed: {'; '.join(int8) if int8 else 'not measured yet'}.

Each run, one at a time, alone on the machine (wall time: training, scoring the pairs, and for each start's first seed
the int8 check; a run kept from an earlier machine shows that machine's CPU):

{runs}

bert-tf's command (seed {SEEDS[0]}; the others differ in `--seed` and `--out`): {f'`{command}`' if command else 'no run yet'}.
""".rstrip() + "\n"
