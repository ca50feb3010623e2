"""Sentence-embedding quality from the team's trained BERT-Mini: bert-tf against sentence-transformers, the same
recipes, three seeds.

    python -m benchmarks.run --only embedding_quality          # about 1.5 hours on 2 cores; a stopped run resumes
    python -m benchmarks.run --only embedding_quality --quick  # smoke mode: one seed, two recipes, a few examples
    BERT_TF_EMBEDDING_SEEDS=1 python -m benchmarks.run --only embedding_quality   # fewer seeds (the section says so)

Recipes (`RECIPES`), each from `../shared/data/pretrained/bert-mini-uncased-books` with mean pooling:
- CoSENT on the STS Benchmark's training pairs (and the same with Matryoshka sizes 256, 128, 64);
- in-batch negatives on (question → its paragraph) pairs of the SQuAD subset's training articles and MRPC's
  training paraphrases (`benchmarks.embedding_data`);
- unsupervised SimCSE on sentences of the books.
Contenders: `bert_tf` = `bert-tf finetune --task embed` as a command; `sentence_transformers` =
`benchmarks.sentence_transformers_reference` on the `FinetuneConfig` the same flags make (its own model, losses
and evaluators; its own data order). Both are scored on STS-B dev (Spearman × 100 of the cosine: the rule's
score) and on retrieval over the SQuAD subset's held-back articles (nDCG@10, MRR@10, Recall@1/10/100); bert-tf's
vectors come from `bert-tf embed` on the trained model directory and are scored by `bert_tf.tasks.embedding.metrics`
(checked against scipy and pytrec_eval in the tests). Beside them: the checkpoint's untrained poolings, BM25
(`bm25s`) on the retrieval set, the points the int8 `model.tflite` loses against float32, and the points the
Matryoshka sizes lose against the full vector. Rule per recipe: |mean(bert_tf) − mean(sentence_transformers)| ≤
max(1 point, 2 × the larger std).

Every finished run is kept in WORK_DIR/results.json with its flags, so the benchmark resumes; a run whose flags
changed is run again. Quick mode works in a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import embedding_data
from benchmarks.report import BenchmarkResult, markdown_table, portable_command
from benchmarks.seed_rule import RULE_POINTS, mean_std, rule
from benchmarks.settings import Settings

NAME = "embedding_quality"
CHECKPOINT = ("pretrained", "bert-mini-uncased-books")
STS_TRAIN, STS_DEV = ("stsb", "sts-train.csv"), ("stsb", "sts-dev.csv")
WORK_DIR = Path(tempfile.gettempdir()) / "bert_tf_embedding_quality"
SEEDS = tuple(int(seed) for seed in os.environ.get("BERT_TF_EMBEDDING_SEEDS", "1,2,3").split(","))
CONTENDERS = ("bert_tf", "sentence_transformers")
COMMON_FLAGS = ("--learning-rate", "1e-4", "--warmup-proportion", "0.1", "--last-epoch")
BOOK_SENTENCES = 5_000
# Tokens read per text when the trained models are scored, by both contenders, whatever the recipe trained at: the
# retrieval paragraphs are longer than SimCSE's 64 (sentence-transformers scored at its training length until
# 2026-11-28, which cut them there: its SimCSE nDCG@10 then trailed by 3.7 points).
SCORING_LENGTH = 128
MATRYOSHKA_DIMS = (256, 128, 64)
UNTRAINED_POOLINGS = ("mean", "cls", "pooled")
QUICK_EXAMPLES = 64
# PyTorch's threads for the reference: on a loaded 2-core machine two OpenMP threads spin against the other
# processes and a step takes 8 times as long as with one; the scores do not depend on it.
REFERENCE_THREADS = 1


@dataclasses.dataclass(frozen=True)
class Recipe:
    name: str
    title: str
    data: str  # "stsb", "pairs" or "sentences": the training file (`training_file`)
    flags: tuple[str, ...]  # this recipe's `bert-tf finetune` flags
    contenders: tuple[str, ...] = CONTENDERS


RECIPES = (
    Recipe("cosent", "CoSENT on STS-B train", "stsb", ("--batch-size", "16", "--epochs", "1", "--seq-length", "128")),
    Recipe("matryoshka", "CoSENT + Matryoshka 256/128/64 on STS-B train", "stsb",
           ("--batch-size", "16", "--epochs", "1", "--seq-length", "128",
            "--matryoshka-dims", ",".join(map(str, MATRYOSHKA_DIMS))), ("bert_tf",)),
    Recipe("pairs", "in-batch negatives on SQuAD question → paragraph + MRPC paraphrases", "pairs",
           ("--batch-size", "32", "--epochs", "1", "--seq-length", "128")),
    Recipe("simcse", f"unsupervised SimCSE on {BOOK_SENTENCES:,} book sentences", "sentences",
           ("--batch-size", "64", "--epochs", "1", "--seq-length", "64")),
)
QUICK_RECIPES = ("cosent", "pairs")
INT8_RECIPE = "cosent"


CUTS = MATRYOSHKA_DIMS[1:]  # the sizes every model is also scored at


def bert_tf_command(name: str) -> list[str]:
    return [str(Path(sys.executable).with_name("bert-tf")), name]


def training_file(recipe: Recipe, settings: Settings, work: Path) -> Path:
    limit = QUICK_EXAMPLES if settings.quick else None
    if recipe.data == "pairs":
        return embedding_data.training_pairs(settings, work, limit)
    if recipe.data == "sentences":
        return embedding_data.book_sentences(settings, work, limit or BOOK_SENTENCES)
    train = settings.data_file(*STS_TRAIN)
    if limit:
        out = work / "sts-train-quick.csv"
        out.write_text("".join(train.read_text(encoding="utf-8").splitlines(keepends=True)[:limit]), encoding="utf-8")
        return out
    return train


def finetune_flags(recipe: Recipe, seed: int, settings: Settings, work: Path) -> list[str]:
    flags = ["--task", "embed", "--train", str(training_file(recipe, settings, work)),
             "--dev", str(settings.data_file(*STS_DEV)), "--init", str(settings.data_file(*CHECKPOINT)),
             "--out", str(work / "models" / f"{recipe.name}_{seed}"), "--overwrite", "--seed", str(seed),
             *COMMON_FLAGS, *recipe.flags]
    if settings.quick:
        flags[flags.index("--epochs") + 1] = "1"
    return flags


def run_command(command: list[str], log: Path) -> None:
    with open(log, "w") as output:
        completed = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT)
    if completed.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({completed.returncode}); see {log}")


class Scorer:
    """The STS dev pairs and the retrieval set, scored from any model's vectors of their texts."""

    def __init__(self, settings: Settings, work: Path):
        from bert_tf.tasks.embedding.data import read_embedding_file
        from bert_tf.retrieval.retrieval_set import read_retrieval_set

        self.sts_pairs = read_embedding_file(settings.data_file(*STS_DEV))
        self.retrieval_folder = embedding_data.retrieval_set(settings, work)
        self.retrieval = read_retrieval_set(self.retrieval_folder)
        texts = [text for pair in self.sts_pairs.texts for text in pair] + self.retrieval.queries + self.retrieval.documents
        self.texts = list(dict.fromkeys(texts))
        self.index = {text: i for i, text in enumerate(self.texts)}
        self.texts_file = work / "scored_texts.txt"
        self.texts_file.write_text("\n".join(" ".join(text.split()) for text in self.texts) + "\n", encoding="utf-8")

    def vectors_of(self, model: str, log: Path, *flags: str) -> np.ndarray:
        """`bert-tf embed --model MODEL` on every text (one a line)."""
        out = log.with_suffix(".npy")
        run_command([*bert_tf_command("embed"), "--model", model, "--in", str(self.texts_file), "--out", str(out),
                     "--no-progress", "--max-length", str(SCORING_LENGTH), *flags], log)
        return np.load(out)

    def sts(self, vectors: np.ndarray, dim: int | None = None) -> dict:
        from bert_tf.tasks.embedding.metrics import sts_scores

        unit = _unit(vectors[:, :dim])
        first, second = ([self.index[pair[i]] for pair in self.sts_pairs.texts] for i in (0, 1))
        return sts_scores(np.sum(unit[first] * unit[second], axis=-1), self.sts_pairs.scores)

    def retrieval_scores(self, vectors: np.ndarray) -> dict:
        from bert_tf.retrieval.ranking_metrics import retrieval_scores

        unit = _unit(vectors)
        queries = unit[[self.index[text] for text in self.retrieval.queries]]
        documents = unit[[self.index[text] for text in self.retrieval.documents]]
        return retrieval_scores(queries @ documents.T, self.retrieval.relevant)

    def scores(self, vectors: np.ndarray) -> dict:
        sts = self.sts(vectors)
        cuts = {f"spearman@{dim}": self.sts(vectors, dim)["spearman"] for dim in CUTS}
        return {"scores": {"spearman": sts["spearman"], "pearson": sts["pearson"], **cuts},
                "retrieval": _retrieval_numbers(self.retrieval_scores(vectors))}

    def bm25(self) -> dict:
        """BM25 (`bm25s`, English stop words, no stemming) of every query against every document."""
        import bm25s

        from bert_tf.retrieval.ranking_metrics import retrieval_scores

        index = bm25s.BM25()
        index.index(bm25s.tokenize(self.retrieval.documents, stopwords="en", show_progress=False), show_progress=False)
        queries = bm25s.tokenize(self.retrieval.queries, stopwords="en", return_ids=False, show_progress=False)
        scores = np.stack([index.get_scores(tokens) for tokens in queries])
        return _retrieval_numbers(retrieval_scores(scores, self.retrieval.relevant))


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = vectors.astype(np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def _retrieval_numbers(scores: dict) -> dict:
    return {name: scores[name] for name in ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100")}


def run_bert_tf(flags: list[str], scorer: Scorer, log: Path) -> dict:
    run_command([*bert_tf_command("finetune"), *flags], log)
    model_dir = flags[flags.index("--out") + 1]
    metadata = json.loads((Path(model_dir) / "bert_tf.json").read_text(encoding="utf-8"))
    training = metadata["training"]
    vectors = scorer.vectors_of(model_dir, log.with_name(log.stem + "_embed.log"))
    return {**scorer.scores(vectors), "spearman_during_training": metadata["dev_scores"]["spearman"],
            "epoch_losses": training["history"]["loss"],
            **{key: training[key] for key in ("train_examples", "train_steps", "train_seconds")}}


def reference_recipe(flags: list[str], scorer: Scorer) -> dict:
    """What `benchmarks.sentence_transformers_reference` reads: the FinetuneConfig of `bert-tf finetune FLAGS`."""
    from bert_tf_cli import parse_arguments
    from bert_tf_cli.finetune import config_from_args

    config = config_from_args(parse_arguments(["finetune", *flags]))
    return {"checkpoint": config.init, "train": config.train_file, "sts_dev": config.dev_file,
            "retrieval": str(scorer.retrieval_folder), "seed": config.seed, "epochs": config.epochs,
            "batch_size": config.batch_size, "learning_rate": config.learning_rate,
            "warmup_proportion": config.warmup_proportion, "weight_decay": config.weight_decay,
            "seq_length": config.seq_length, "scale": config.settings.similarity_scale,
            "scoring_length": SCORING_LENGTH, "evaluated_dims": list(CUTS),
            "threads": REFERENCE_THREADS}


def run_reference(recipe: dict, log: Path) -> dict:
    config, out = log.with_suffix(".config.json"), log.with_suffix(".json")
    config.write_text(json.dumps(recipe, indent=2), encoding="utf-8")
    run_command([sys.executable, "-m", "benchmarks.sentence_transformers_reference", "--config", str(config),
                 "--out", str(out)], log)
    result = json.loads(out.read_text(encoding="utf-8"))
    result.pop("recipe")
    return result


def run_one(recipe: Recipe, contender: str, seed: int, settings: Settings, work: Path, scorer: Scorer) -> dict:
    flags = finetune_flags(recipe, seed, settings, work)
    log = work / "logs" / f"{recipe.name}_{contender}_{seed}.log"
    started = time.perf_counter()
    if contender == "bert_tf":
        result = run_bert_tf(flags, scorer, log)
    else:
        result = run_reference(reference_recipe(flags, scorer), log)
    return {**result, "flags": flags, "wall_seconds": round(time.perf_counter() - started, 1)}


def int8_points(settings: Settings, work: Path, scorer: Scorer, seeds) -> dict:
    """Per seed of the INT8_RECIPE model: STS-B dev Spearman of its float32 vectors (`bert-tf embed`) and of its int8
    `model.tflite` (`bert-tf export --format tflite --tflite-input text --quantize int8`, run by LiteRT)."""
    from serving.tflite_runner import TfliteModel

    results = {}
    for seed in seeds:
        model_dir = work / "models" / f"{INT8_RECIPE}_{seed}"
        out = work / "exports" / f"{INT8_RECIPE}_{seed}_int8.tflite"
        out.parent.mkdir(exist_ok=True)
        run_command([*bert_tf_command("export"), "--model", str(model_dir), "--out", str(out), "--format", "tflite",
                     "--tflite-input", "text", "--quantize", "int8"], work / "logs" / f"export_int8_{seed}.log")
        tflite = TfliteModel(out)
        vectors = np.concatenate([tflite.predict_texts(scorer.texts[start:start + 64])["embedding"]
                                  for start in range(0, len(scorer.texts), 64)])
        float32 = scorer.vectors_of(str(model_dir), work / "logs" / f"float32_{seed}_embed.log")
        results[str(seed)] = {"float32": scorer.sts(float32)["spearman"], "int8": scorer.sts(vectors)["spearman"],
                              "int8_retrieval": _retrieval_numbers(scorer.retrieval_scores(vectors)),
                              "command": portable_command(["bert-tf", "export", "--model", str(model_dir), "--out",
                                                           str(out), "--format", "tflite", "--tflite-input", "text",
                                                           "--quantize", "int8"])}
    return results


def baselines(settings: Settings, work: Path, scorer: Scorer) -> dict:
    """The checkpoint's untrained poolings (`bert-tf embed --pooling P`) and BM25."""
    checkpoint = str(settings.data_file(*CHECKPOINT))
    out = {f"untrained {pooling}": scorer.scores(scorer.vectors_of(checkpoint, work / "logs" / f"untrained_{pooling}.log",
                                                                   "--pooling", pooling))
           for pooling in UNTRAINED_POOLINGS}
    out["BM25"] = {"retrieval": scorer.bm25()}
    return out


def run_all(settings: Settings, work: Path) -> dict:
    for folder in (work, work / "logs", work / "models"):
        folder.mkdir(parents=True, exist_ok=True)
    scorer = Scorer(settings, work)
    results_file = work / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    seeds = SEEDS[:1] if settings.quick else SEEDS
    for seed in seeds:  # every recipe's first seed first: a run stopped early still covers them all
        for recipe in recipes(settings):
            for contender in recipe.contenders:
                key = f"{recipe.name}/{contender}/{seed}"
                if key in results and results[key]["flags"] == finetune_flags(recipe, seed, settings, work):
                    continue
                print(f"{key}: running", flush=True)
                results[key] = run_one(recipe, contender, seed, settings, work, scorer)
                print(f"{key}: Spearman {results[key]['scores']['spearman']:.2f}, nDCG@10 "
                      f"{results[key]['retrieval']['ndcg@10']:.2f} ({results[key]['wall_seconds']:.0f} s)", flush=True)
                results_file.write_text(json.dumps(results, indent=2) + "\n")
    print("untrained poolings, BM25, int8", flush=True)
    return {"runs": results, "baselines": baselines(settings, work, scorer),
            "int8": int8_points(settings, work, scorer, seeds),
            "retrieval_set": {"queries": len(scorer.retrieval.queries), "documents": len(scorer.retrieval.documents)}}


def recipes(settings: Settings) -> list[Recipe]:
    return [recipe for recipe in RECIPES if not settings.quick or recipe.name in QUICK_RECIPES]


def summary(runs: dict, recipe: Recipe, read) -> dict:
    """Per contender, `read(result)` over the seeds run, and the rule between the two."""
    out = {contender: mean_std([read(result) for key, result in runs.items()
                                if key.startswith(f"{recipe.name}/{contender}/")]) for contender in recipe.contenders}
    if len(out) == 1:
        return out
    out["rule"] = rule(out["bert_tf"], out["sentence_transformers"])
    return out


def run(settings: Settings) -> BenchmarkResult:
    title = "## Sentence-embedding quality from a trained checkpoint: bert-tf against sentence-transformers"
    needed = [CHECKPOINT, STS_TRAIN, STS_DEV, embedding_data.SQUAD, embedding_data.MRPC_TRAIN, embedding_data.BOOKS]
    missing = [str(settings.data_dir.joinpath(*parts)) for parts in needed if settings.data_file(*parts) is None]
    if missing:
        message = f"no {', '.join(missing)} (the team data folder; set BERT_TF_DATA)"
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: {message}.", {"skipped": message})
    with tempfile.TemporaryDirectory(prefix="embedding-quality-") as scratch:
        results = run_all(settings, Path(scratch) if settings.quick else WORK_DIR)
    summaries = {recipe.name: {"spearman": summary(results["runs"], recipe, lambda r: r["scores"]["spearman"]),
                               "ndcg@10": summary(results["runs"], recipe, lambda r: r["retrieval"]["ndcg@10"])}
                 for recipe in recipes(settings)}
    return BenchmarkResult(NAME, markdown(title, results, summaries, settings),
                           {**results, "summaries": summaries, "common_flags": COMMON_FLAGS})


def _mean_std(entry: dict) -> str:
    return f"{entry['mean']:.2f} ± {entry['std']:.2f} ({len(entry['values'])})"


def markdown(title: str, results: dict, summaries: dict, settings: Settings) -> str:
    runs = results["runs"]
    rows = []
    for recipe in recipes(settings):
        for metric, label in (("spearman", "STS-B dev Spearman"), ("ndcg@10", "SQuAD held-back nDCG@10")):
            entry = summaries[recipe.name][metric]
            rule = entry.get("rule")
            if rule is None:  # bert-tf alone (its cuts are the point)
                rows.append([recipe.title, label, _mean_std(entry["bert_tf"]), "not run", "", "", ""])
                continue
            rows.append([recipe.title, label, _mean_std(entry["bert_tf"]), _mean_std(entry["sentence_transformers"]),
                         f"{rule['difference']:+.2f}", f"{rule['bound']:.2f}",
                         ("holds" if rule["holds"] else "**MISS**") if metric == "spearman" else "(not the rule)"])
    baseline_rows = [[name, f"{entry['scores']['spearman']:.2f}" if "scores" in entry else "",
                      *(f"{entry['retrieval'][metric]:.2f}" for metric in ("ndcg@10", "mrr@10", "recall@1",
                                                                            "recall@10", "recall@100"))]
                     for name, entry in results["baselines"].items()]
    for recipe in recipes(settings):
        for contender in recipe.contenders:
            chosen = [result for key, result in runs.items() if key.startswith(f"{recipe.name}/{contender}/")]
            baseline_rows.append([f"{recipe.name}, {contender} (mean of {len(chosen)})",
                                  f"{statistics.mean(r['scores']['spearman'] for r in chosen):.2f}",
                                  *(f"{statistics.mean(r['retrieval'][metric] for r in chosen):.2f}"
                                    for metric in ("ndcg@10", "mrr@10", "recall@1", "recall@10", "recall@100"))])
    int8_rows = [[seed, f"{entry['float32']:.2f}", f"{entry['int8']:.2f}", f"{entry['int8'] - entry['float32']:+.2f}"]
                 for seed, entry in results["int8"].items()]
    cut_rows = []
    for recipe in recipes(settings):
        for contender in recipe.contenders:
            chosen = [result for key, result in runs.items() if key.startswith(f"{recipe.name}/{contender}/")]
            full = statistics.mean(r["scores"]["spearman"] for r in chosen)
            cuts = [statistics.mean(r["scores"][f"spearman@{dim}"] for r in chosen) for dim in CUTS]
            cut_rows.append([recipe.name, contender, f"{full:.2f}", *(f"{cut:.2f} ({cut - full:+.2f})" for cut in cuts)])
    detail = [[key.split("/")[0], key.split("/")[2], key.split("/")[1], f"{r['scores']['spearman']:.2f}",
               f"{r['retrieval']['ndcg@10']:.2f}", " / ".join(f"{loss:.4f}" for loss in r["epoch_losses"]),
               str(r["train_steps"]), f"{r['train_seconds']:.0f}", f"{r['wall_seconds']:.0f}"]
              for key, r in sorted(runs.items())]
    agreement = max((abs(r["spearman_during_training"] - r["scores"]["spearman"]) for key, r in runs.items()
                     if "spearman_during_training" in r), default=0.0)
    commands = "\n".join(f"- {recipe.name}: `{portable_command(['bert-tf', 'finetune', *runs[key]['flags']])}`"
                         for recipe in recipes(settings) if (key := f"{recipe.name}/bert_tf/{SEEDS[0]}") in runs)
    quick = "\n\n**Quick mode: one seed, a few dozen examples: the code runs, the figures mean nothing.**" \
        if settings.quick else ""
    sizes = results["retrieval_set"]
    seeds_note = "" if SEEDS == (1, 2, 3) else (f" only (`BERT_TF_EMBEDDING_SEEDS={','.join(map(str, SEEDS))}`; the "
                                                "benchmark's own are 1, 2, 3)")
    return f"""{title}{quick}

From `../shared/data/pretrained/bert-mini-uncased-books` (BERT-Mini, L4/H256, mean pooling): **bert_tf** =
`bert-tf finetune --task embed`, its vectors from `bert-tf embed` on the trained model directory;
**sentence_transformers** = sentence-transformers 6.2's `Transformer` + mean `Pooling` modules and its loss modules
(`CoSENTLoss`, `MultipleNegativesRankingLoss`; the Matryoshka recipe is bert-tf's alone, for its cuts), trained by `benchmarks.sentence_transformers_reference`
on the same examples with the same recipe (AdamW β 0.9/0.999, ε 1e-6, weight decay 0.01 but on biases and LayerNorm
weights, warm-up over 10% of the steps then linear decay, clipping at norm 1, scale 20, dropout 0.1; each its own
seeded data order) and scored by its own evaluators. Shared flags: `{' '.join(COMMON_FLAGS)}`; per recipe below.
Scores × 100 of the last epoch (none chosen on dev). STS-B dev: 1,500 pairs, Spearman of the cosine. Retrieval:
the {sizes['queries']} questions of the SQuAD subset's last {embedding_data.HELD_BACK_ARTICLES} articles (never
trained on) against their {sizes['documents']} paragraphs. Seeds {', '.join(map(str, SEEDS))}{seeds_note}: dropout and the
data order. bert-tf's Spearman from `bert-tf embed` agrees with the one `finetune` scored on dev within {agreement:.4f}.

Rule (STS-B dev Spearman): |mean(bert_tf) − mean(sentence_transformers)| ≤ max({RULE_POINTS:.0f} point, 2 × the larger std).

{markdown_table(["recipe", "score", "bert_tf mean ± std (seeds)", "sentence_transformers", "difference", "bound",
                 "rule"], rows)}

Beside them: what users have without training (the checkpoint's poolings through `bert-tf embed --pooling`), BM25
(`bm25s` 0.3, English stop words, no stemming) and the trained models (means over seeds):

{markdown_table(["model", "STS-B Spearman", "nDCG@10", "MRR@10", "Recall@1", "Recall@10", "Recall@100"],
                baseline_rows)}

int8: the {INT8_RECIPE} models exported as `model.tflite` with raw-text input and LiteRT's dynamic-range int8
(`bert-tf export --format tflite --tflite-input text --quantize int8`), STS-B dev Spearman against the same model's
float32 vectors:

{markdown_table(["seed", "float32", "int8", "points"], int8_rows)}

Matryoshka: STS-B dev Spearman of the vectors cut to their first values (the cut `bert-tf export --dims N` serves),
means over seeds, the change against the full 256 in brackets:

{markdown_table(["recipe", "contender", f"{MATRYOSHKA_DIMS[0]} (full)", *map(str, CUTS)], cut_rows)}

Each run (loss: mean training loss per epoch):

{markdown_table(["recipe", "seed", "contender", "STS-B Spearman", "nDCG@10", "loss per epoch", "steps", "train s",
                 "wall s"], detail)}

Commands (seed 1; the other seeds differ in `--seed` and `--out`; sentence_transformers runs the FinetuneConfig of
the bert-tf command):
{commands}
"""
