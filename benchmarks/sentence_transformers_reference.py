"""The sentence-transformers side of `benchmarks.embedding_quality`: one recipe trained and scored with its tools.

    python -m benchmarks.sentence_transformers_reference --config recipe.json --out result.json

From the checkpoint (a Hugging Face BERT folder), a `SentenceTransformer` of its `Transformer` and mean `Pooling`
modules trains on the recipe's file (read by bert-tf's reader, so both frameworks see the same examples) with
sentence-transformers' own loss modules: `CoSENTLoss` for scored pairs, `MultipleNegativesRankingLoss` for pairs
and for sentences (each paired with itself: unsupervised SimCSE). The loop is the one sentence-transformers' trainer (transformers' `Trainer`) runs, written out here
because that trainer needs `datasets` and `accelerate`, which nothing else in this project uses: batches of the
examples in a seeded order drawn anew each epoch, AdamW with bert-tf's recipe (`benchmarks.torch_reference`:
weight decay but on biases and LayerNorm weights, linear warm-up and decay, clipping at global norm 1).
Scores come from sentence-transformers' evaluators: `EmbeddingSimilarityEvaluator` (Spearman and Pearson of the
cosine on the STS file, also at each Matryoshka size: `truncate_dim`) and `InformationRetrievalEvaluator`.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings

from benchmarks.reference_command import reference_main

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# sentence-transformers 6 moved its modules; their old names warn on import (`sentence_transformers.losses`).
warnings.filterwarnings("ignore", category=DeprecationWarning, module="sentence_transformers")

EVAL_BATCH_SIZE = 64


def build_model(checkpoint: str, seq_length: int):
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformers.logging.set_verbosity_error()  # the checkpoint's pre-training heads, unused here, are listed
    encoder = Transformer(checkpoint, max_seq_length=seq_length)
    return SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "mean")], device="cpu")


def build_loss(model, recipe: dict, kind: str):
    from sentence_transformers.sentence_transformer import losses

    if kind == "scored":
        return losses.CoSENTLoss(model, scale=recipe["scale"])
    if recipe.get("mini_batch_size"):  # cached in-batch negatives (benchmarks.search_quality)
        return losses.CachedMultipleNegativesRankingLoss(model, scale=recipe["scale"],
                                                         mini_batch_size=recipe["mini_batch_size"])
    return losses.MultipleNegativesRankingLoss(model, scale=recipe["scale"])


def train(model, recipe: dict) -> dict:
    """Trains `model` on `recipe["train"]`; the mean loss of each epoch, the steps and seconds."""
    import numpy as np
    import torch

    from benchmarks.torch_reference import torch_updates
    from bert_tf.tasks.embedding.data import read_embedding_file

    examples = read_embedding_file(recipe["train"])
    groups = [texts * 2 if examples.kind == "sentences" else texts for texts in examples.texts]
    labels = np.asarray(examples.scores if examples.scores else [0.0] * len(groups), np.float32)
    batch_size, epochs = recipe["batch_size"], recipe["epochs"]
    steps = math.ceil(len(groups) / batch_size) * epochs
    torch.manual_seed(recipe["seed"])
    order = np.random.default_rng(recipe["seed"])
    loss_module = build_loss(model, recipe, examples.kind)
    update = torch_updates(model, recipe["learning_rate"], recipe["weight_decay"], steps,
                           int(steps * recipe["warmup_proportion"]))
    model.train()
    epoch_losses, started = [], time.perf_counter()
    for epoch in range(epochs):
        losses = []
        permutation = order.permutation(len(groups))
        for start in range(0, len(groups), batch_size):
            batch = permutation[start:start + batch_size]
            features = [model.preprocess([groups[i][column] for i in batch]) for column in range(len(groups[0]))]
            losses.append(update(loss_module(features, torch.from_numpy(labels[batch]))))
        epoch_losses.append(float(np.mean(losses)))
        print(f"epoch {epoch + 1}: loss {epoch_losses[-1]:.4f}", flush=True)
    model.eval()
    return {"epoch_losses": epoch_losses, "train_steps": steps, "train_examples": len(groups),
            "train_seconds": time.perf_counter() - started}


def sts_scores(model, sts_file: str, dims) -> dict:
    """Spearman and Pearson × 100 of the cosine on an STS file, at full size and at each of `dims`."""
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    from bert_tf.tasks.embedding.data import read_embedding_file

    examples = read_embedding_file(sts_file)
    first, second = ([texts[i] for texts in examples.texts] for i in (0, 1))
    scores = {}
    for dim in (None, *dims):
        evaluator = EmbeddingSimilarityEvaluator(first, second, examples.scores, batch_size=EVAL_BATCH_SIZE,
                                                 main_similarity="cosine", write_csv=False, truncate_dim=dim)
        result = evaluator(model)
        suffix = "" if dim is None else f"@{dim}"
        scores[f"spearman{suffix}"] = 100 * result["spearman_cosine"]
        scores[f"pearson{suffix}"] = 100 * result["pearson_cosine"]
    return scores


def retrieval_scores(model, folder: str, split: str = "test") -> dict:
    """nDCG@10, MRR@10 and Recall@1/10/100 × 100 of the queries against the corpus (a BEIR folder's `split`)."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    from bert_tf.retrieval.retrieval_set import read_retrieval_set

    retrieval = read_retrieval_set(folder, split)
    queries = {str(i): text for i, text in enumerate(retrieval.queries)}
    corpus = {str(i): text for i, text in enumerate(retrieval.documents)}
    relevant = {str(i): {str(document) for document in judged} for i, judged in enumerate(retrieval.relevant)}
    evaluator = InformationRetrievalEvaluator(queries, corpus, relevant, ndcg_at_k=[10], mrr_at_k=[10],
                                              precision_recall_at_k=[1, 10, 100], accuracy_at_k=[1],
                                              map_at_k=[100], batch_size=EVAL_BATCH_SIZE, write_csv=False)
    result = evaluator(model)
    return {"ndcg@10": 100 * result["cosine_ndcg@10"], "mrr@10": 100 * result["cosine_mrr@10"],
            **{f"recall@{k}": 100 * result[f"cosine_recall@{k}"] for k in (1, 10, 100)}}


def run_reference(recipe: dict) -> dict:
    import torch

    torch.set_num_threads(recipe["threads"])
    model = build_model(recipe["checkpoint"], recipe["seq_length"])
    training = train(model, recipe) if recipe["epochs"] else {}
    model.max_seq_length = recipe["scoring_length"]  # scored as bert-tf scores: the same tokens of every text
    return {**training, "scores": sts_scores(model, recipe["sts_dev"], recipe["evaluated_dims"]),
            "retrieval": retrieval_scores(model, recipe["retrieval"]), "recipe": recipe}


def main(argv=None) -> int:
    return reference_main("benchmarks.sentence_transformers_reference", __doc__.split("\n\n")[0],
                          "benchmarks.embedding_quality", run_reference, argv)


if __name__ == "__main__":
    sys.exit(main())
