"""The sentence-transformers side of `benchmarks.search_quality`: hard negatives mined, a model trained with cached
in-batch negatives and scored on the dev split, all with its own tools.

    python -m benchmarks.search_quality_reference --config recipe.json --out result.json

`mine`: `mine_hard_negatives` (output "n-tuple", with scores) of the mining model over the folder's train split,
written as JSON lines of query, positive, negative_1..N, scores (what both frameworks' trainings read).
`train`: the loop of `benchmarks.sentence_transformers_reference` (a `Transformer` + mean `Pooling` model) with
`CachedMultipleNegativesRankingLoss`, on the recipe's mined file; `epochs` 0 scores the checkpoint as it is.
Scored: the cosine of every dev query with every document, saved as .npy for the benchmark's own metrics and its
fusion with BM25, and with `evaluator`, `InformationRetrievalEvaluator` on the dev split (its numbers).
"""

from __future__ import annotations

import json
import os
import sys
import warnings

from benchmarks.reference_command import reference_main

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="sentence_transformers")


def mine(recipe: dict) -> dict:
    """Mines recipe["mined"] from the folder's train split with recipe["mining_model"]; the rows written."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import mine_hard_negatives

    from benchmarks.in_memory_datasets import Dataset, mining_datasets
    from bert_tf.retrieval.retrieval_set import read_retrieval_set

    train = read_retrieval_set(recipe["folder"], "train")
    pairs = [(query, train.documents[index]) for query, relevant in zip(train.queries, train.relevant)
             for index in sorted(relevant)]
    model = SentenceTransformer(recipe["mining_model"], device="cpu")
    model.max_seq_length = recipe["scoring_length"]
    settings = recipe["mining"]
    with mining_datasets():
        mined = mine_hard_negatives(
            Dataset.from_dict({"query": [query for query, _ in pairs], "positive": [text for _, text in pairs]}),
            model, corpus=train.documents, num_negatives=settings["num_negatives"], range_min=settings["range_min"],
            relative_margin=settings["relative_margin"], sampling_strategy="top", output_format="n-tuple",
            output_scores=True, batch_size=64, verbose=False)
    negatives = [name for name in mined.column_names if name.startswith("negative_")]
    with open(recipe["mined"], "w", encoding="utf-8") as file:
        for row in range(len(mined)):
            file.write(json.dumps({name: mined[name][row] for name in ["query", "positive", *negatives, "scores"]},
                                  ensure_ascii=False) + "\n")
    return {"rows": len(mined)}


def train_and_score(recipe: dict) -> dict:
    import numpy as np
    import torch

    from benchmarks.sentence_transformers_reference import build_model, retrieval_scores, train
    from bert_tf.retrieval.retrieval_set import read_retrieval_set

    torch.set_num_threads(recipe["threads"])
    model = build_model(recipe["checkpoint"], recipe["seq_length"])
    training = train(model, recipe) if recipe["epochs"] else {}
    model.max_seq_length = recipe["scoring_length"]
    dev = read_retrieval_set(recipe["folder"], "dev")
    queries = model.encode(dev.queries, batch_size=64, convert_to_tensor=True, normalize_embeddings=True)
    documents = model.encode(dev.documents, batch_size=64, convert_to_tensor=True, normalize_embeddings=True)
    np.save(recipe["score_matrix"], (queries @ documents.T).numpy().astype(np.float32))
    if not recipe["evaluator"]:  # it embeds the corpus once more
        return training
    return {**training, "evaluator": retrieval_scores(model, recipe["folder"], "dev")}


def run_recipe(recipe: dict) -> dict:
    return mine(recipe) if recipe["action"] == "mine" else train_and_score(recipe)


def main(argv=None) -> int:
    return reference_main("benchmarks.search_quality_reference", __doc__.split("\n\n")[0],
                          "benchmarks.search_quality", run_recipe, argv)


if __name__ == "__main__":
    sys.exit(main())
