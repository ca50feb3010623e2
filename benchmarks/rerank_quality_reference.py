"""The sentence-transformers side of `benchmarks.rerank_quality`: a `CrossEncoder` trained on mined groups with its own
listwise loss, then the candidate pairs scored.

    python -m benchmarks.rerank_quality_reference --config recipe.json --out result.json

The checkpoint (a Hugging Face BERT folder, e.g. all-MiniLM-L6-v2's) becomes a `BertForSequenceClassification` of one
label (transformers draws the new head, seeded), saved beside the scores and read by `CrossEncoder` with the recipe's
`max_length`. The loss is sentence-transformers' cross-encoder `MultipleNegativesRankingLoss` (sigmoid, scale 10) over
each row's positive and hard negatives, its random in-batch negatives off (`HardNegativesOnly`: bert-tf's listwise
loss has none). The loop is `benchmarks.sentence_transformers_reference`'s (its trainer needs `datasets` and
`accelerate`, which nothing else here uses): rows in a seeded order, `benchmarks.torch_reference.torch_updates`
(AdamW, weight decay but on biases and LayerNorm weights, linear warm-up and decay, clipping at bert-tf's norm).
Scores: `CrossEncoder.predict` of every pair, raw logits (no sigmoid), saved as .npy.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

from benchmarks.reference_command import reference_main

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="sentence_transformers")


def cross_encoder(checkpoint: str, seq_length: int, seed: int, folder: Path):
    """A CrossEncoder of one label on `checkpoint`'s encoder, its head drawn under `seed`."""
    import torch
    import transformers
    from sentence_transformers import CrossEncoder

    transformers.logging.set_verbosity_error()  # the new head is listed as newly initialized
    torch.manual_seed(seed)
    transformers.BertForSequenceClassification.from_pretrained(checkpoint, num_labels=1).save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(checkpoint).save_pretrained(folder)
    return CrossEncoder(str(folder), max_length=seq_length, device="cpu")


def hard_negatives_loss(model, scale: float):
    """The cross-encoder `MultipleNegativesRankingLoss` over each row's own documents only."""
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

    class HardNegativesOnly(MultipleNegativesRankingLoss):
        def get_in_batch_negatives(self, anchors, candidates):
            return iter(())

    return HardNegativesOnly(model, scale=scale)


def train(model, recipe: dict) -> dict:
    """`recipe["epochs"]` passes over its rows (query, positive, negative_1..N), shuffled anew each; the loss of
    each epoch, the steps and seconds."""
    import numpy as np
    import torch

    from benchmarks.torch_reference import torch_updates

    rows = [json.loads(line) for line in Path(recipe["train"]).read_text(encoding="utf-8").splitlines()]
    negatives = sorted((name for name in rows[0] if name.startswith("negative_")), key=lambda name: int(name[9:]))
    columns = [[row[name] for row in rows] for name in ("query", "positive", *negatives)]
    batch_size, epochs = recipe["batch_size"], recipe["epochs"]
    steps = math.ceil(len(rows) / batch_size) * epochs
    loss_module = hard_negatives_loss(model, recipe["scale"])
    update = torch_updates(model, recipe["learning_rate"], recipe["weight_decay"], steps,
                           int(steps * recipe["warmup_proportion"]))
    shuffle = np.random.default_rng(recipe["seed"])
    model.train()
    epoch_losses, started = [], time.perf_counter()
    for epoch in range(epochs):
        order, losses = shuffle.permutation(len(rows)), []
        for start in range(0, len(rows), batch_size):
            batch = order[start:start + batch_size]
            losses.append(update(loss_module([[column[i] for i in batch] for column in columns],
                                             torch.zeros(len(batch)))))
            print(f"epoch {epoch + 1}, step {len(losses)}: loss {losses[-1]:.4f}", flush=True)
        epoch_losses.append(float(np.mean(losses)))
    model.eval()
    return {"epoch_losses": epoch_losses, "train_steps": steps, "train_seconds": time.perf_counter() - started}


def run_recipe(recipe: dict) -> dict:
    import numpy as np
    import torch

    torch.set_num_threads(recipe["threads"])
    scores = Path(recipe["scores"])
    model = cross_encoder(recipe["checkpoint"], recipe["seq_length"], recipe["seed"],
                          scores.with_name(scores.stem + "_model"))
    training = train(model, recipe)
    pairs = [json.loads(line) for line in Path(recipe["pairs"]).read_text(encoding="utf-8").splitlines()]
    started = time.perf_counter()
    logits = model.predict([(pair["query"], pair["document"]) for pair in pairs], batch_size=recipe["scoring_batch"],
                           activation_fn=torch.nn.Identity(), convert_to_numpy=True, show_progress_bar=False)
    np.save(scores, np.asarray(logits, np.float32).reshape(-1))
    return {**training, "score_seconds": time.perf_counter() - started}


def main(argv=None) -> int:
    return reference_main("benchmarks.rerank_quality_reference", __doc__.split("\n\n")[0],
                          "benchmarks.rerank_quality", run_recipe, argv)


if __name__ == "__main__":
    sys.exit(main())
