"""Does pre-training learn? A `mini` BERT pre-trained on the shared Gutenberg corpus for a stated time.

Prepares the corpus with `bert-tf prepare-corpus`, holds one book out, pre-trains on the
rest with `bert-tf pretrain`'s code (MLM + NSP, dynamic masking), then measures masked-LM
and next-sentence accuracy on the held-out book against chance, plots the loss curve, and
writes the figures to its section of benchmarks/RESULTS.md (replaced on each run) and
benchmarks/results/pretraining_learning.json.

    python -m benchmarks.pretraining_learning --minutes 15 --out /tmp/pretraining_learning

Chance levels: NSP 50%; MLM the accuracy of always predicting the most frequent masked
token of the held-out data (measured on the same examples).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("BERT_TF_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
HELD_OUT_BOOK = "1260.txt"  # Jane Eyre: not seen in pre-training
NAME = "pretraining_learning"  # its RESULTS.md section and results/NAME.json


def loss_curve(log_dir: Path, png: Path) -> list[tuple[int, float]]:
    """Reads the `loss` scalars that run_pretraining wrote for TensorBoard and plots them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    accumulator.Reload()
    import tensorflow as tf

    points = sorted((e.step, float(tf.make_ndarray(e.tensor_proto))) for e in accumulator.Tensors("loss"))
    figure, axis = plt.subplots(figsize=(6, 3.5), dpi=100)
    axis.plot([s for s, _ in points], [v for _, v in points])
    axis.set_xlabel("step")
    axis.set_ylabel("MLM + NSP loss (training)")
    axis.set_title("mini BERT pre-training on the shared corpus")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(png)
    return points


def held_out_accuracy(model_dir: Path, held_out: Path, vocab: str, batches: int) -> dict[str, float]:
    import bert_tf
    from pipelines.pretraining import pretraining_dataset

    pretrainer = bert_tf.BertPretrainer.from_pretrained(model_dir)
    dataset = pretraining_dataset([str(held_out)], vocab, seq_length=128, max_predictions_per_seq=20,
                                  batch_size=32, seed=1, repeat=False).take(batches)
    correct = total = nsp_correct = nsp_total = 0
    labels_seen = []
    for features in dataset:
        outputs = pretrainer(features)
        weights = features["masked_lm_weights"].numpy() > 0
        predicted = np.argmax(outputs["mlm_logits"].numpy(), -1)
        labels = features["masked_lm_ids"].numpy()
        correct += (predicted == labels)[weights].sum()
        total += weights.sum()
        labels_seen.append(labels[weights])
        nsp = np.argmax(outputs["nsp_logits"].numpy(), -1)
        nsp_correct += (nsp == features["next_sentence_labels"].numpy()).sum()
        nsp_total += len(nsp)
    labels_seen = np.concatenate(labels_seen)
    majority = np.bincount(labels_seen).max() / len(labels_seen)
    return {"mlm_accuracy": correct / total, "mlm_chance": majority, "nsp_accuracy": nsp_correct / nsp_total,
            "masked_tokens": int(total), "pairs": int(nsp_total)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=15.0, help="pre-training time budget")
    parser.add_argument("--out", default="/tmp/pretraining_learning", help="work directory")
    parser.add_argument("--eval-batches", type=int, default=40, help="held-out batches of 32 pairs")
    parser.add_argument("--results", default=str(Path(__file__).with_name("RESULTS.md")))
    args = parser.parse_args(argv)
    if not (DATA / "corpus").is_dir():
        print(f"Skipped: the shared corpus is not at {DATA / 'corpus'}.")
        return 0
    from benchmarks.report import BenchmarkResult, write_result
    from bert_tf.training import PretrainingConfig, run_pretraining
    from pipelines.corpus import prepare_corpus
    from pipelines.pretraining import pretraining_dataset_fn

    out = Path(args.out)
    prepared = out / "corpus"
    if not prepared.is_dir():
        prepare_corpus(sorted((DATA / "corpus").glob("*.txt")), prepared)
    train_files = sorted(str(p) for p in prepared.glob("*.txt") if p.name != HELD_OUT_BOOK)
    vocab = str(DATA / "vocab" / "bert-base-uncased-vocab.txt")
    config = PretrainingConfig(output_dir=str(out / "run"), model="mini", train_files=train_files, vocab_file=vocab,
                               seq_length=128, max_predictions_per_seq=20, global_batch_size=32,
                               num_train_steps=100_000, num_warmup_steps=200, learning_rate=5e-4,
                               checkpoint_every=200, log_every=20)
    started = time.perf_counter()
    result = run_pretraining(config, pretraining_dataset_fn(config), max_seconds=args.minutes * 60)
    wall = time.perf_counter() - started
    scores = held_out_accuracy(out / "run" / "model", prepared / HELD_OUT_BOOK, vocab, args.eval_batches)
    png = Path(__file__).with_name("pretraining_loss.png")
    points = loss_curve(out / "run" / "logs", png)

    command = "python -m benchmarks.pretraining_learning " + shlex.join(argv if argv is not None else sys.argv[1:])
    section = f"""
## Pre-training learns: mini BERT on the shared corpus ({datetime.date.today()})

- Command: `{command}`
- Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end (shared machine)
- Model: `mini` (4 layers, hidden 256, 11.2M parameters), official uncased vocabulary, seq 128, batch 32,
  AdamW lr 5e-4 with 200 warm-up steps, dynamic masking; 11 of the 12 books (prepared with `bert-tf prepare-corpus`)
- Trained {result.step} steps ({result.step * 32:,} examples) in {wall / 60:.1f} minutes
- Held out: `{HELD_OUT_BOOK}` (never trained on), {scores['pairs']} sentence pairs, {scores['masked_tokens']} masked tokens

| metric | held-out | chance |
|---|---|---|
| masked-LM accuracy | {scores['mlm_accuracy']:.3f} | {scores['mlm_chance']:.3f} (most frequent masked token) |
| next-sentence accuracy | {scores['nsp_accuracy']:.3f} | 0.500 |

Training loss from {points[0][1]:.2f} (step {points[0][0]}) to {points[-1][1]:.2f} (step {points[-1][0]}); curve: `benchmarks/pretraining_loss.png`.
"""
    data = {"command": command, "steps": result.step, "minutes": wall / 60, "held_out": scores,
            "loss_curve": points}
    results_md = Path(args.results)
    write_result(BenchmarkResult(NAME, section, data), results_md, results_md.parent / "results")
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
