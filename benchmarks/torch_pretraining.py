"""The transformers/PyTorch side of `benchmarks.pretraining_learning`: MLM + NSP pre-training on batches bert-tf wrote.

    python -m benchmarks.torch_pretraining --init DIR --batches batches.npz --held-out held_out.npz \\
        --learning-rate 5e-4 --warmup-steps 200 --log-every 20 --out result.json

`DIR` is a transformers `BertForPreTraining` directory (the random start both frameworks load). The batches are
bert-tf's pre-training features (`pipelines.pretraining`, google-research/bert's names), one array per feature with
a leading step axis; the run takes one batch per step, in order, with the recipe of `bert-tf pretrain`: PyTorch's
AdamW with bert-tf's betas and epsilon, weight decay 0.01 except biases and LayerNorm weights, linear warm-up and
decay to 0 at the last step, clipping at global norm 1, dropout 0.1. The loss is `BertForPreTraining`'s: the masked
LM cross-entropy averaged over the masked positions plus the next-sentence cross-entropy; the heads are applied at
the masked positions only, which gives the same loss (transformers ignores every other position) at a tenth of the
cost. Writes the mean loss of every `log_every` steps and the held-out masked-LM and next-sentence accuracy.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def heads(model, features, training: bool):
    """(MLM logits at the masked positions [batch, predictions, vocab], NSP logits [batch, 2])."""
    import torch

    from benchmarks.torch_reference import torch_inputs

    model.train(training)
    output = model.bert(**torch_inputs(features))
    positions = torch.as_tensor(features["masked_lm_positions"], dtype=torch.long)
    masked = torch.gather(output.last_hidden_state, 1,
                          positions[:, :, None].expand(-1, -1, output.last_hidden_state.shape[-1]))
    return model.cls.predictions(masked), model.cls.seq_relationship(output.pooler_output)


def pretraining_loss(model, features):
    import torch

    mlm_logits, nsp_logits = heads(model, features, training=True)
    labels = torch.as_tensor(features["masked_lm_ids"], dtype=torch.long)
    labels = labels.masked_fill(torch.as_tensor(features["masked_lm_weights"]) == 0, -100)  # padding predictions
    mlm = torch.nn.functional.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]), labels.reshape(-1),
                                            ignore_index=-100)
    nsp = torch.nn.functional.cross_entropy(
        nsp_logits, torch.as_tensor(features["next_sentence_labels"], dtype=torch.long).reshape(-1))
    return mlm + nsp


def batch(arrays: dict, step: int) -> dict:
    return {name: np.asarray(values[step]) for name, values in arrays.items()}


def held_out_accuracy(model, arrays: dict) -> dict:
    import torch

    correct = total = nsp_correct = nsp_total = 0
    with torch.no_grad():
        for step in range(len(arrays["input_word_ids"])):
            features = batch(arrays, step)
            mlm_logits, nsp_logits = heads(model, features, training=False)
            weights = features["masked_lm_weights"] > 0
            correct += (mlm_logits.argmax(-1).numpy() == features["masked_lm_ids"])[weights].sum()
            total += weights.sum()
            nsp_correct += (nsp_logits.argmax(-1).numpy() == features["next_sentence_labels"].reshape(-1)).sum()
            nsp_total += len(nsp_logits)
    return {"mlm_accuracy": float(correct / total), "nsp_accuracy": float(nsp_correct / nsp_total)}


def run(init: Path, batches: Path, held_out: Path, learning_rate: float, warmup_steps: int, log_every: int,
        seed: int) -> dict:
    import torch
    import transformers

    from benchmarks.torch_reference import torch_updates

    torch.manual_seed(seed)
    model = transformers.BertForPreTraining.from_pretrained(init)
    arrays = dict(np.load(batches))
    steps = len(arrays["input_word_ids"])
    update = torch_updates(model, learning_rate, 0.01, steps, warmup_steps)
    curve, losses, started = [], [], time.perf_counter()
    for step in range(steps):
        losses.append(update(pretraining_loss(model, batch(arrays, step))))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            curve.append((step + 1, float(np.mean(losses))))
            losses = []
            print(f"step {step + 1}: loss {curve[-1][1]:.3f}", flush=True)
    seconds = time.perf_counter() - started
    return {"loss_curve": curve, "held_out": held_out_accuracy(model, dict(np.load(held_out))),
            "train_seconds": round(seconds, 1), "steps": steps,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--init", type=Path, required=True)
    parser.add_argument("--batches", type=Path, required=True)
    parser.add_argument("--held-out", type=Path, required=True)
    parser.add_argument("--learning-rate", type=float, required=True)
    parser.add_argument("--warmup-steps", type=int, required=True)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    result = run(args.init, args.batches, args.held_out, args.learning_rate, args.warmup_steps, args.log_every,
                 args.seed)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
