"""Search quality on SciFact: BM25, all-MiniLM-L6-v2 as installed and fine-tuned on mined hard negatives (bert-tf
against sentence-transformers), the team's BERT-Mini with the same recipe, and each fused with BM25.

    python -m benchmarks.run --only search_quality          # hours on 2 cores; a stopped run resumes
    python -m benchmarks.run --only search_quality --quick  # smoke: 40 claims, a 300-document sub-corpus, one seed
    BERT_TF_SEARCH_SEEDS=1 python -m benchmarks.run --only search_quality   # fewer seeds (the section says so)
    BERT_TF_SEARCH_RECORDED=1 python -m benchmarks.run --only search_quality  # the section from the runs kept so far

The dev split (`DEV_CLAIMS`): the last 200 of SciFact's 809 train claims by numeric id, their judgments in
qrels/dev.tsv; the other 609 claims' in qrels/train.tsv, of a BEIR folder made in the work folder (corpus.jsonl and
queries.jsonl linked, nothing copied). Rows, nDCG@10 / MRR@10 / Recall@k × 100 over the dev claims against all
5,183 abstracts:
- BM25: `bm25s` 0.3, English stop words, no stemming (k1 1.5, b 0.75);
- all-MiniLM-L6-v2 as installed: bert-tf (`bert_tf.retrieval.dense` on the preset `all-minilm-l6-v2`) and
  sentence-transformers (`InformationRetrievalEvaluator` on the package's folder): the two must agree;
- fine-tuned, 1 epoch over the train claims' (claim, cited abstract) pairs with `NEGATIVES` hard negatives each,
  mined from all-MiniLM-L6-v2's candidates (`MINING`: sentence-transformers' relative margin 0.05 against the
  positive's score) — bert-tf: `bert-tf mine` + `bert-tf finetune --task embed --mini-batch-size`; the reference:
  `mine_hard_negatives` + `CachedMultipleNegativesRankingLoss` (`benchmarks.search_quality_reference`); batch
  `BATCH` in chunks of `MINI_BATCH`, texts cut at `TRAIN_LENGTH` tokens in training and `SCORING_LENGTH` in scoring,
  AdamW with 10% warm-up then linear decay, the rate `LEARNING_RATES` of the start; seeds `SEEDS`;
- BERT-Mini (`../shared/data/pretrained/bert-mini-uncased-books`) with bert-tf and the same recipe (its data mined
  by all-MiniLM-L6-v2 as the others');
- hybrid: each dense row's ranking fused with BM25's by reciprocal rank (Σ 1 / (60 + rank)).
Rule (fine-tuned all-MiniLM-L6-v2): |mean(bert_tf) − mean(sentence_transformers)| ≤ max(1 point, 2 × the larger
std). Target (issue 44): the best bert-tf pipeline ≥ BM25 + 3 nDCG@10, and ahead of the installed model. Every finished
run is kept in WORK_DIR/results.json with its flags, the mined rows and the installed model's scores beside it, so
the benchmark resumes (on a new machine, from the runs its last section recorded); `JOBS` jobs run at a time.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks.report import RESULTS_JSON_DIR, BenchmarkResult, markdown_table, portable_command
from benchmarks.seed_rule import mean_std, rule
from benchmarks.settings import Settings

NAME = "search_quality"
SCIFACT = ("scifact",)
BERT_MINI = ("pretrained", "bert-mini-uncased-books")
PRESET = "all-minilm-l6-v2"
WORK_DIR = Path(tempfile.gettempdir()) / "bert_tf_search_quality"
SEEDS = tuple(int(seed) for seed in os.environ.get("BERT_TF_SEARCH_SEEDS", "1,2,3").split(","))
RECORDED_ONLY = os.environ.get("BERT_TF_SEARCH_RECORDED") == "1"
DEV_CLAIMS = 200
QUICK_CLAIMS, QUICK_DOCUMENTS = 40, 300
NEGATIVES = 2
MINING = {"num_negatives": NEGATIVES, "range_min": 0, "relative_margin": 0.05}
BATCH, MINI_BATCH = 64, 16
TRAIN_LENGTH, SCORING_LENGTH = 128, 256
LEARNING_RATES = {"minilm": 2e-5, "bert_mini": 1e-4}
RRF_K = 60
TARGET_POINTS = 3.0  # nDCG@10 points ahead of BM25 (issue 44)
JOBS = 2  # runs at a time (each mostly a process of its own): on a shared machine two get more of it
REFERENCE_THREADS = 1  # PyTorch's threads: on a loaded 2-core machine more spin against the other processes
METRICS = ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100")


def bert_tf_command(name: str) -> list[str]:
    return [str(Path(sys.executable).with_name("bert-tf")), name]


def run_command(command: list[str], log: Path) -> None:
    with open(log, "w") as output:
        completed = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT)
    if completed.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({completed.returncode}); see {log}")


def kept_runs(results_file: Path, name: str, quick: bool) -> dict:
    """The finished runs kept in the work folder; where it has none (a new machine), those the benchmark's last
    section recorded (benchmarks/results/NAME.json), so that a stopped run resumes there too."""
    if results_file.exists():
        return json.loads(results_file.read_text(encoding="utf-8"))
    recorded = RESULTS_JSON_DIR / f"{name}.json"
    if quick or not recorded.exists():
        return {}
    return json.loads(recorded.read_text(encoding="utf-8")).get("runs", {})


def split_folder(settings: Settings, work: Path) -> Path:
    """The BEIR folder of the train/dev split (module docstring); in quick mode a few claims and a sub-corpus of their
    abstracts and others."""
    source = settings.data_file(*SCIFACT)
    folder = work / "scifact_split"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    lines = (source / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()
    header, judged = lines[0], [line.split("\t") for line in lines[1:] if line.strip()]
    claims = sorted({claim for claim, _, _ in judged}, key=int)
    if settings.quick:
        claims = claims[-QUICK_CLAIMS:]
    dev = set(claims[-(QUICK_CLAIMS // 2 if settings.quick else DEV_CLAIMS):])
    for name, chosen in (("dev", dev), ("train", set(claims) - dev)):
        rows = [line for line in judged if line[0] in chosen]
        _write(folder / "qrels" / f"{name}.tsv", "\n".join([header, *("\t".join(row) for row in rows)]) + "\n")
    if settings.quick:  # the judged abstracts and the first others, to QUICK_DOCUMENTS
        cited = {document for claim, document, _ in judged if claim in claims}
        corpus = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        kept = [line for line in corpus if json.loads(line)["_id"] in cited]
        kept += [line for line in corpus if json.loads(line)["_id"] not in cited][:QUICK_DOCUMENTS - len(kept)]
        _write(folder / "corpus.jsonl", "\n".join(kept) + "\n")
    else:
        _link(folder / "corpus.jsonl", source / "corpus.jsonl")
    _link(folder / "queries.jsonl", source / "queries.jsonl")
    return folder


def _write(path: Path, text: str) -> None:
    """`text` into `path`, untouched when it holds it already (a second run reads the folder while a first uses it)."""
    if path.is_symlink():
        path.unlink()
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _link(path: Path, target: Path) -> None:
    """`path` a link to `target`, untouched when it is one already."""
    if path.is_symlink() and path.readlink() == target:
        return
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)


class Scorer:
    """The dev split's relevant documents, BM25's scores, and any score matrix's retrieval numbers."""

    def __init__(self, folder: Path):
        from bert_tf.retrieval.retrieval_set import read_retrieval_set

        self.dev = read_retrieval_set(folder, "dev")
        self.bm25_matrix = self._bm25()

    def _bm25(self) -> np.ndarray:
        import bm25s

        index = bm25s.BM25(k1=1.5, b=0.75)
        index.index(bm25s.tokenize(self.dev.documents, stopwords="en", show_progress=False), show_progress=False)
        queries = bm25s.tokenize(self.dev.queries, stopwords="en", return_ids=False, show_progress=False)
        return np.stack([index.get_scores(tokens) for tokens in queries]).astype(np.float32)

    def numbers(self, matrix: np.ndarray) -> dict:
        from bert_tf.retrieval.ranking_metrics import retrieval_scores

        scores = retrieval_scores(matrix, self.dev.relevant)
        return {name: scores[name] for name in METRICS}

    def hybrid(self, matrix: np.ndarray) -> dict:
        """The numbers of `matrix`'s ranking fused with BM25's by reciprocal rank."""
        return self.numbers(reciprocal_rank_fusion([matrix, self.bm25_matrix]))


def reciprocal_rank_fusion(matrices: list[np.ndarray], k: int = RRF_K) -> np.ndarray:
    """Σ over the rankings of 1 / (k + rank), rank 1 the best, per query and document.

    >>> reciprocal_rank_fusion([np.array([[0.9, 0.1, 0.5]]), np.array([[1.0, 3.0, 2.0]])], k=1).round(3).tolist()
    [[0.75, 0.75, 0.667]]
    """
    fused = np.zeros(matrices[0].shape, np.float64)
    for matrix in matrices:
        ranks = np.empty(matrix.shape, np.int64)
        order = np.argsort(-matrix, axis=1, kind="stable")
        np.put_along_axis(ranks, order, np.arange(1, matrix.shape[1] + 1)[None, :].repeat(len(matrix), 0), axis=1)
        fused += 1.0 / (k + ranks)
    return fused


def bert_tf_matrix(model: str, scorer: Scorer) -> np.ndarray:
    """The cosine of every dev claim with every abstract, by bert-tf's vectors (texts cut at SCORING_LENGTH)."""
    from bert_tf.retrieval.dense import DenseIndex, model_embedder

    index = DenseIndex(model_embedder(model, batch_size=64, seq_length=SCORING_LENGTH), scorer.dev.documents)
    return _unit(index.embed(scorer.dev.queries)) @ index.vectors.T


def _unit(vectors) -> np.ndarray:
    vectors = np.asarray(vectors, np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def run_reference(recipe: dict, log: Path, module: str = "benchmarks.search_quality_reference") -> dict:
    """The result of the reference script `module` on `recipe`; one kept from a run of the same recipe reused."""
    config, out = log.with_suffix(".config.json"), log.with_suffix(".json")
    text = json.dumps(recipe, indent=2)
    if out.exists() and config.exists() and config.read_text(encoding="utf-8") == text:
        return json.loads(out.read_text(encoding="utf-8"))
    out.unlink(missing_ok=True)
    config.write_text(text, encoding="utf-8")
    run_command([sys.executable, "-m", module, "--config", str(config),
                 "--out", str(out)], log)
    return json.loads(out.read_text(encoding="utf-8"))


def mine_command(folder: Path, out: Path) -> list[str]:
    return [*bert_tf_command("mine"), "--data", str(folder), "--split", "train", "--candidates", PRESET,
            "--out", str(out), "--num-negatives", str(NEGATIVES), "--range-min", str(MINING["range_min"]),
            "--relative-margin", str(MINING["relative_margin"]), "--no-progress"]


def mined_files(work: Path) -> dict:
    """Where each framework's mined training rows go: {contender: path}."""
    return {"bert_tf": work / "mined_bert_tf.jsonl", "sentence_transformers": work / "mined_sentence_transformers.jsonl"}


def mine(contender: str, folder: Path, work: Path) -> None:
    """Mines `contender`'s training rows, unless a run kept them."""
    from bert_tf.checkpoints.installed import installed_model_folder

    out = mined_files(work)[contender]
    if out.exists():
        return
    partial = out.with_suffix(".partial.jsonl")
    if contender == "bert_tf":
        run_command(mine_command(folder, partial), work / "logs" / "mine_bert_tf.log")
    else:
        run_reference({"action": "mine", "folder": str(folder), "mining_model": str(installed_model_folder(PRESET)),
                       "scoring_length": SCORING_LENGTH, "mining": MINING, "mined": str(partial)},
                      work / "logs" / "mine_sentence_transformers.log")
    partial.rename(out)  # complete files only: a stopped run mines again


def finetune_flags(start: str, init: str, train: Path, seed: int, work: Path) -> list[str]:
    return ["--task", "embed", "--train", str(train), "--init", init, "--out", str(work / "models" / f"{start}_{seed}"),
            "--overwrite", "--seed", str(seed), "--epochs", "1", "--batch-size", str(BATCH), "--mini-batch-size",
            str(MINI_BATCH), "--seq-length", str(TRAIN_LENGTH), "--learning-rate", str(LEARNING_RATES[start]),
            "--warmup-proportion", "0.1", "--last-epoch"]


def run_trained(start: str, init: str, contender: str, seed: int, folder: Path, work: Path, scorer: Scorer,
                in_process) -> dict:
    """One fine-tuning run, scored; `in_process` serializes this process's own TensorFlow work."""
    log = work / "logs" / f"{start}_{contender}_{seed}.log"
    matrix_file = work / "matrices" / f"{start}_{contender}_{seed}.npy"
    started = time.perf_counter()
    flags = finetune_flags(start, init, mined_files(work)[contender], seed, work)
    if contender == "bert_tf":
        run_command([*bert_tf_command("finetune"), *flags], log)
        training = json.loads((work / "models" / f"{start}_{seed}" / "bert_tf.json").read_text())["training"]
        with in_process:
            np.save(matrix_file, bert_tf_matrix(str(work / "models" / f"{start}_{seed}"), scorer))
        extra = {"epoch_losses": training["history"]["loss"], "train_seconds": training["train_seconds"],
                 "train_steps": training["train_steps"]}
    else:
        from bert_tf.checkpoints.installed import installed_model_folder

        checkpoint = str(installed_model_folder(init) or init)  # the preset's folder, which sentence-transformers reads
        extra = run_reference({"action": "train", "checkpoint": checkpoint, "train": str(mined_files(work)[contender]),
                               "folder": str(folder), "seed": seed, "epochs": 1, "batch_size": BATCH,
                               "mini_batch_size": MINI_BATCH, "learning_rate": LEARNING_RATES[start],
                               "warmup_proportion": 0.1, "weight_decay": 0.01, "seq_length": TRAIN_LENGTH,
                               "scale": 20.0, "scoring_length": SCORING_LENGTH, "threads": REFERENCE_THREADS,
                               "score_matrix": str(matrix_file), "evaluator": False}, log)
    matrix = np.load(matrix_file)
    return {**extra, "retrieval": scorer.numbers(matrix), "hybrid": scorer.hybrid(matrix), "flags": flags,
            "wall_seconds": round(time.perf_counter() - started, 1),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def installed_matrix(contender: str, folder: Path, work: Path, scorer: Scorer, in_process) -> np.ndarray:
    """all-MiniLM-L6-v2 as installed: a framework's cosines of the dev claims with the abstracts, kept for a rerun."""
    from bert_tf.checkpoints.installed import installed_model_folder

    matrix_file = work / "matrices" / f"installed_{contender}.npy"
    if contender == "bert_tf":
        shape = (len(scorer.dev.queries), len(scorer.dev.documents))
        if not (matrix_file.exists() and np.load(matrix_file).shape == shape):
            with in_process:
                np.save(matrix_file, bert_tf_matrix(PRESET, scorer))
    else:
        run_reference({"action": "train", "checkpoint": str(installed_model_folder(PRESET)), "epochs": 0,
                       "folder": str(folder), "seq_length": SCORING_LENGTH, "scoring_length": SCORING_LENGTH,
                       "threads": REFERENCE_THREADS, "score_matrix": str(matrix_file), "evaluator": True},
                      work / "logs" / "installed_sentence_transformers.log")
    return np.load(matrix_file)


def installed_rows(folder: Path, work: Path, scorer: Scorer, in_process) -> dict:
    """all-MiniLM-L6-v2 as installed: bert-tf's numbers, and sentence-transformers' (its evaluator's and ours of its
    cosines)."""
    rows = {}
    for contender in ("bert_tf", "sentence_transformers"):
        matrix = installed_matrix(contender, folder, work, scorer, in_process)
        rows[contender] = {"retrieval": scorer.numbers(matrix), "hybrid": scorer.hybrid(matrix)}
    evaluator = work / "logs" / "installed_sentence_transformers.json"
    rows["sentence_transformers"]["evaluator"] = json.loads(evaluator.read_text(encoding="utf-8"))["evaluator"]
    return rows


def run_all(settings: Settings, work: Path) -> dict:
    """Every job not kept from an earlier run, `JOBS` at a time: the installed model scored by each framework, the
    mining, and the fine-tuning runs seed by seed (every start's first seed first: a run stopped early still covers
    them all), each as soon as its framework's mined rows are there. With `RECORDED_ONLY`, no job: the runs kept so
    far, and those missing."""
    for name in ("logs", "models", "matrices"):
        (work / name).mkdir(parents=True, exist_ok=True)
    folder = split_folder(settings, work)
    scorer = Scorer(folder)
    results_file = work / "results.json"
    results = kept_runs(results_file, NAME, settings.quick)
    seeds = SEEDS[:1] if settings.quick else SEEDS
    in_process, writing = threading.Lock(), threading.Lock()
    starts = [("minilm", PRESET, ("bert_tf", "sentence_transformers")),
              ("bert_mini", str(settings.data_file(*BERT_MINI)), ("bert_tf",))]
    wanted = {f"{start}/{contender}/{seed}": (start, init, contender, seed) for seed in seeds
              for start, init, contenders in starts for contender in contenders}
    missing = [key for key, (start, init, contender, seed) in wanted.items() if key not in results
               or results[key]["flags"] != finetune_flags(start, init, mined_files(work)[contender], seed, work)]

    def train(key: str, mined) -> None:
        start, init, contender, seed = wanted[key]
        mined.result()  # its training rows (a job taken before this one: no wait on a job not yet started)
        print(f"{key}: running", flush=True)
        result = run_trained(start, init, contender, seed, folder, work, scorer, in_process)
        print(f"{key}: nDCG@10 {result['retrieval']['ndcg@10']:.2f} ({result['wall_seconds']:.0f} s)", flush=True)
        with writing:
            results[key] = result
            results_file.write_text(json.dumps(results, indent=2) + "\n")

    if not RECORDED_ONLY:
        with ThreadPoolExecutor(JOBS) as pool:
            jobs = [pool.submit(installed_matrix, contender, folder, work, scorer, in_process)
                    for contender in ("sentence_transformers", "bert_tf")]
            mining = {contender: pool.submit(mine, contender, folder, work)
                      for contender in ("sentence_transformers", "bert_tf")}
            jobs += [*mining.values(), *(pool.submit(train, key, mining[wanted[key][2]]) for key in missing)]
            for job in jobs:
                job.result()
        missing = []
    else:
        needed = [work / "matrices" / f"installed_{contender}.npy" for contender in ("bert_tf", "sentence_transformers")]
        if not all(path.exists() for path in needed):
            raise RuntimeError(f"nothing to report yet: {', '.join(str(path) for path in needed if not path.exists())} "
                               "not made (the installed model's scoring comes first)")
    mined_rows = {contender: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
                  for contender, path in mined_files(work).items() if path.exists()}
    agreeing = None
    if len(mined_rows) == 2:
        same = {(row["query"], row["positive"]): row for row in mined_rows["sentence_transformers"]}
        agreeing = sum(same.get((row["query"], row["positive"])) is not None and all(
            same[(row["query"], row["positive"])][f"negative_{n}"] == row[f"negative_{n}"]
            for n in range(1, NEGATIVES + 1)) for row in mined_rows["bert_tf"])
    return {"runs": {key: results[key] for key in wanted if key not in missing}, "missing": missing,
            "installed": installed_rows(folder, work, scorer, in_process),
            "bm25": scorer.numbers(scorer.bm25_matrix),
            "split": {"dev_claims": len(scorer.dev.queries), "documents": len(scorer.dev.documents),
                      "train_pairs": {name: len(rows) for name, rows in mined_rows.items()},
                      "same_negatives": agreeing},
            "mine_command": portable_command(["bert-tf", *mine_command(folder, mined_files(work)["bert_tf"])[1:]])}


def summaries(runs: dict) -> dict:
    """Per start and contender, nDCG@10 (dense and hybrid) over the seeds; the rule for all-MiniLM-L6-v2."""
    out = {}
    for key in sorted({key.rsplit("/", 1)[0] for key in runs}):
        chosen = [result for name, result in runs.items() if name.startswith(key + "/")]
        out[key] = {kind: {metric: mean_std([result[kind][metric] for result in chosen]) for metric in METRICS}
                    for kind in ("retrieval", "hybrid")}
    ours, theirs = out.get("minilm/bert_tf"), out.get("minilm/sentence_transformers")
    if ours and theirs:
        out["rule"] = rule(ours["retrieval"]["ndcg@10"], theirs["retrieval"]["ndcg@10"])
    return out


NAMES = {"minilm/bert_tf": "all-MiniLM-L6-v2 fine-tuned, bert-tf",
         "minilm/sentence_transformers": "all-MiniLM-L6-v2 fine-tuned, sentence-transformers",
         "bert_mini/bert_tf": "BERT-Mini fine-tuned, bert-tf"}
INSTALLED_HYBRID = "hybrid: BM25 + all-MiniLM-L6-v2 as installed (bert-tf)"


def target(results: dict) -> dict:
    """Issue 44's target: the best bert-tf pipeline (nDCG@10, mean over the seeds) at least `TARGET_POINTS` ahead of
    BM25 and ahead of all-MiniLM-L6-v2 as installed (bert-tf's numbers)."""
    pipelines = {INSTALLED_HYBRID: results["installed"]["bert_tf"]["hybrid"]["ndcg@10"]}
    for key, entry in results["summaries"].items():
        if key.endswith("/bert_tf"):
            pipelines[NAMES[key]] = entry["retrieval"]["ndcg@10"]["mean"]
            pipelines[f"hybrid: BM25 + {NAMES[key]}"] = entry["hybrid"]["ndcg@10"]["mean"]
    best = max(pipelines, key=pipelines.get)
    bm25, installed = results["bm25"]["ndcg@10"], results["installed"]["bert_tf"]["retrieval"]["ndcg@10"]
    return {"best": best, "ndcg@10": pipelines[best], "bm25": bm25, "installed": installed,
            "ahead_of_bm25": pipelines[best] - bm25, "ahead_of_installed": pipelines[best] - installed,
            "met": pipelines[best] - bm25 >= TARGET_POINTS and pipelines[best] > installed}


def run(settings: Settings) -> BenchmarkResult:
    title = "## Search quality on SciFact: BM25, all-MiniLM-L6-v2, hard negatives, hybrid"
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in (SCIFACT, BERT_MINI)
               if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory(prefix="search-quality-") as scratch:
        results = run_all(settings, Path(scratch) if settings.quick else WORK_DIR)
    results["summaries"] = summaries(results["runs"])
    results["target"] = target(results)
    return BenchmarkResult(NAME, markdown(title, results, settings), results)


def _row(name: str, numbers: dict) -> list[str]:
    return [name, *(f"{numbers[metric]:.2f}" for metric in METRICS)]


def _mean_row(name: str, entry: dict) -> list[str]:
    return [name, *(f"{entry[metric]['mean']:.2f} ± {entry[metric]['std']:.2f}" for metric in METRICS)]


def _mining_counts(split: dict) -> str:
    rows = split["train_pairs"]
    counts = "; ".join(f"{label}: {rows[contender]} rows" if contender in rows else f"{label}: not mined yet"
                       for contender, label in (("bert_tf", "bert-tf"),
                                                ("sentence_transformers", "sentence-transformers' `mine_hard_negatives`")))
    return counts if split["same_negatives"] is None else f"{counts}, the same negatives in {split['same_negatives']} of them"


def markdown(title: str, results: dict, settings: Settings) -> str:
    installed, split, summary, goal = results["installed"], results["split"], results["summaries"], results["target"]
    rows = [_row("BM25 (bm25s)", results["bm25"]),
            _row("all-MiniLM-L6-v2 as installed, bert-tf", installed["bert_tf"]["retrieval"]),
            _row("all-MiniLM-L6-v2 as installed, sentence-transformers", installed["sentence_transformers"]["retrieval"]),
            _row("(its InformationRetrievalEvaluator)", installed["sentence_transformers"]["evaluator"]),
            *(_mean_row(NAMES[key], summary[key]["retrieval"]) for key in NAMES if key in summary),
            _row(INSTALLED_HYBRID, installed["bert_tf"]["hybrid"]),
            *(_mean_row(f"hybrid: BM25 + {NAMES[key]}", summary[key]["hybrid"]) for key in NAMES if key in summary)]
    rule = summary.get("rule")
    rule_line = "Rule (fine-tuned all-MiniLM-L6-v2, nDCG@10): not judged, a contender's runs missing." if rule is None \
        else (f"Rule (fine-tuned all-MiniLM-L6-v2, nDCG@10): bert-tf − sentence-transformers = "
              f"{rule['difference']:+.2f}, bound {rule['bound']:.2f}: {'holds' if rule['holds'] else '**MISS**'}.")
    target_line = (
        f"Target (issue 44: the best bert-tf pipeline ≥ BM25 + {TARGET_POINTS:g} nDCG@10 and ahead of "
        f"all-MiniLM-L6-v2 as installed): {'**met**' if goal['met'] else '**not met**'}: the best, {goal['best']}, "
        f"{goal['ndcg@10']:.2f}: {goal['ahead_of_bm25']:+.2f} on BM25 ({goal['bm25']:.2f}), "
        f"{goal['ahead_of_installed']:+.2f} on the installed model ({goal['installed']:.2f}).")
    detail = [[key, *(f"{result['retrieval'][metric]:.2f}" for metric in ("ndcg@10", "recall@100")),
               f"{result['hybrid']['ndcg@10']:.2f}", " / ".join(f"{loss:.4f}" for loss in result["epoch_losses"]),
               f"{result['train_seconds']:.0f}", f"{result['wall_seconds']:.0f}",
               "/".join(f"{x:.1f}" for x in result["load_average"]) if "load_average" in result else "not kept"]
              for key, result in sorted(results["runs"].items())]
    commands = "\n".join(f"- `{portable_command(['bert-tf', 'finetune', *result['flags']])}`"
                         for key, result in sorted(results["runs"].items())
                         if key.endswith(f"/bert_tf/{SEEDS[0]}"))
    quick = ("\n\n**Quick mode: a few claims, a sub-corpus, one seed: the code runs, the figures mean nothing.**"
             if settings.quick else "")
    partial = (f"\n\n**Partial: the runs recorded so far; not yet run: {', '.join(results['missing'])}** (written by "
               "`BERT_TF_SEARCH_RECORDED=1 python -m benchmarks.run --only search_quality` from what the full command "
               "kept; the means are over the seeds shown; the full command goes on where it stopped)."
               if results["missing"] else "")
    seeds = ", ".join(sorted({key.rsplit("/", 1)[1] for key in results["runs"]})) or "none finished yet"
    hours = sum(result["wall_seconds"] for result in results["runs"].values()) / 3600
    runs = "No fine-tuning run finished yet." if not detail else f"""Each run ({JOBS} at a time; wall time {hours:.1f} h \
in all, the scoring of the installed model and the mining not counted; load average after the run, 1/5/15 min):

{markdown_table(["run", "nDCG@10", "Recall@100", "hybrid nDCG@10", "loss", "train s", "wall s", "load"], detail)}"""
    return f"""{title}{quick}{partial}

SciFact (BEIR layout, `../shared/data/scifact`): dev split = the last {DEV_CLAIMS} of the 809 train claims by
numeric id ({split['dev_claims']} claims here) against all {split['documents']:,} abstracts; training = the other
claims' (claim, cited abstract) pairs with {NEGATIVES} hard negatives each, mined from all-MiniLM-L6-v2's candidates
with a relative margin of {MINING['relative_margin']} ({_mining_counts(split)}). Recipe: 1 epoch, batch {BATCH} in chunks of {MINI_BATCH} (cached
in-batch negatives), texts cut at {TRAIN_LENGTH} tokens in training and {SCORING_LENGTH} in scoring, AdamW with 10%
warm-up then linear decay, rate {LEARNING_RATES['minilm']:g} from all-MiniLM-L6-v2 and {LEARNING_RATES['bert_mini']:g}
from BERT-Mini, scale 20; seeds {seeds} (mean ± std over them). Hybrid: reciprocal-rank fusion with BM25 (k {RRF_K}) of the
whole rankings (`bert-tf index` fuses each one's top 100).
Scores × 100; nothing was tuned on the dev split (one recipe, fixed before the run).

{markdown_table(["model", "nDCG@10", "MRR@10", "Recall@1", "Recall@10", "Recall@100"], rows)}

{target_line}

{rule_line}

{runs}

Commands (`"$WORK"/bert_tf_search_quality/scifact_split` is the split's BEIR folder the benchmark makes):
`{results['mine_command']}`{f", then (seed {SEEDS[0]}; the others differ in `--seed` and `--out`):" if commands else "."}
{commands}""".rstrip() + "\n"
