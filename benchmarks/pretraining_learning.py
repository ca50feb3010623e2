"""Pre-training learns, and learns as transformers does: BERT-Mini, MLM + NSP, from one start, on the same batches.

    python -m benchmarks.pretraining_learning --steps 2000 --out /tmp/pretraining_learning   # about an hour on 2 cores

1. The shared books are prepared with `bert-tf prepare-corpus`; one book is held out.
2. bert-tf's pre-training pipeline (`pipelines.pretraining`: NSP pairs, dynamic masks) writes `--steps` batches of
   32 examples of 128 tokens once (`batches.npz`), and 40 held-out batches (`held_out.npz`).
3. One random start, transformers' `BertForPreTraining` initialisation (`init/`, seeded), is loaded by both.
4. bert-tf trains with `bert_tf.training.run_pretraining` (the loop of `bert-tf pretrain`) on the batches in order;
   `benchmarks.torch_pretraining` trains transformers with PyTorch on the same batches in the same order, with the
   same recipe (AdamW, peak learning rate `--learning-rate` after `--warmup-steps`, linear decay to 0, weight decay
   0.01 except biases and LayerNorm weights, clipping at 1, dropout 0.1).
5. Both models score the held-out batches: masked-LM and next-sentence accuracy (chance: the most frequent masked
   token; 50%). The two loss curves (mean of every 20 steps) go to `benchmarks/pretraining_loss.png`.
Targets (issue 24): the curves agree within noise; held-out masked-LM accuracy equal within 0.01.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("BERT_TF_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
HELD_OUT_BOOK = "1260.txt"  # Jane Eyre: not seen in pre-training
NAME = "pretraining_learning"  # its RESULTS.md section and results/NAME.json
BATCH_SIZE, SEQ_LENGTH, MAX_PREDICTIONS, HELD_OUT_BATCHES, LOG_EVERY = 32, 128, 20, 40, 20
ACCURACY_TOLERANCE = 0.01


def write_batches(files: list[str], vocab: str, batches: int, out: Path, seed: int) -> Path:
    """`batches` batches of bert-tf's pre-training pipeline, one array per feature [batches, 32, ...], as .npz."""
    from pipelines.pretraining import pretraining_dataset

    dataset = pretraining_dataset(files, vocab, seq_length=SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS,
                                  batch_size=BATCH_SIZE, seed=seed, repeat=True).take(batches)
    stacked = {}
    for features in dataset:
        for name, value in features.items():
            stacked.setdefault(name, []).append(value.numpy())
    np.savez(out, **{name: np.stack(values) for name, values in stacked.items()})
    return out


def random_start(out: Path, vocab: str, seed: int) -> Path:
    """A `BertForPreTraining` of BERT-Mini's shape with transformers' initialisation, seeded, written to `out`."""
    import torch
    import transformers

    import bert_tf
    from bert_tf.vocabulary import read_vocab_file

    config = bert_tf.BertConfig.preset("mini", vocab_size=len(read_vocab_file(vocab)))
    torch.manual_seed(seed)
    model = transformers.BertForPreTraining(transformers.BertConfig(**config.to_hf_dict()))
    model.save_pretrained(out)
    shutil.copyfile(vocab, out / "vocab.txt")
    return out


def bert_tf_run(init: Path, batches: Path, vocab: str, args, out: Path) -> tuple[list, dict, float]:
    """Pre-trains with `run_pretraining` on the batches in order: (loss curve, held-out scores, seconds)."""
    import tensorflow as tf

    from bert_tf.training import PretrainingConfig, run_pretraining

    arrays = dict(np.load(batches))
    config = PretrainingConfig(output_dir=str(out), init_checkpoint=str(init), vocab_file=vocab,
                               seq_length=SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS,
                               global_batch_size=BATCH_SIZE, num_train_steps=args.steps,
                               num_warmup_steps=args.warmup_steps, learning_rate=args.learning_rate,
                               log_every=LOG_EVERY, checkpoint_minutes=None, seed=args.seed)
    started = time.perf_counter()
    run_pretraining(config, lambda context: tf.data.Dataset.from_tensor_slices(arrays), progress=False)
    seconds = time.perf_counter() - started
    return loss_curve(out / "logs"), held_out_accuracy(out / "model", batches.with_name("held_out.npz")), seconds


def loss_curve(log_dir: Path) -> list[tuple[int, float]]:
    """The `loss` scalars (the mean of each `log_every` steps) that run_pretraining wrote for TensorBoard."""
    import tensorflow as tf
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    accumulator.Reload()
    return sorted((event.step, float(tf.make_ndarray(event.tensor_proto))) for event in accumulator.Tensors("loss"))


def held_out_accuracy(model_dir: Path, held_out: Path) -> dict[str, float]:
    import bert_tf

    pretrainer = bert_tf.BertPretrainer.from_pretrained(model_dir)
    arrays = dict(np.load(held_out))
    correct = total = nsp_correct = nsp_total = 0
    for step in range(len(arrays["input_word_ids"])):
        features = {name: values[step] for name, values in arrays.items()}
        outputs = pretrainer(features)
        weights = features["masked_lm_weights"] > 0
        correct += (np.argmax(outputs["mlm_logits"].numpy(), -1) == features["masked_lm_ids"])[weights].sum()
        total += weights.sum()
        nsp_correct += (np.argmax(outputs["nsp_logits"].numpy(), -1) == features["next_sentence_labels"].reshape(-1)).sum()
        nsp_total += len(weights)
    return {"mlm_accuracy": float(correct / total), "nsp_accuracy": float(nsp_correct / nsp_total)}


def chance(held_out: Path) -> dict[str, float]:
    """Masked-LM accuracy of always predicting the most frequent masked token; the masked tokens and pairs scored."""
    arrays = dict(np.load(held_out))
    labels = arrays["masked_lm_ids"][arrays["masked_lm_weights"] > 0]
    return {"mlm_chance": float(np.bincount(labels).max() / len(labels)), "masked_tokens": int(len(labels)),
            "pairs": int(arrays["input_word_ids"].shape[0] * arrays["input_word_ids"].shape[1])}


def plot(curves: dict[str, list], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 3.8), dpi=100)
    for name, points in curves.items():
        axis.plot([step for step, _ in points], [loss for _, loss in points], label=name, linewidth=1.2)
    axis.set_xlabel("step (batch 32, seq 128)")
    axis.set_ylabel(f"MLM + NSP training loss (mean of {LOG_EVERY} steps)")
    axis.set_title("BERT-Mini pre-training from one start on the same batches")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(png)


def compare(curves: dict[str, list]) -> dict[str, float]:
    """How far apart the two curves are: mean and largest |difference| of the logged means, and of the last 200 steps."""
    ours, theirs = (np.array([loss for _, loss in curves[name]]) for name in ("bert-tf", "transformers"))
    difference = ours - theirs
    tail = max(1, 200 // LOG_EVERY)
    return {"mean_abs_difference": float(np.abs(difference).mean()), "max_abs_difference": float(np.abs(difference).max()),
            "mean_difference": float(difference.mean()), "last_200_steps": [float(ours[-tail:].mean()), float(theirs[-tail:].mean())],
            # Noise: how much one curve moves between neighbouring logs, late in training.
            "step_to_step_noise": float(np.abs(np.diff(theirs[len(theirs) // 2:])).mean())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--warmup-steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1, help="the start's weights, the batches, dropout")
    parser.add_argument("--out", default="/tmp/pretraining_learning", help="work directory")
    parser.add_argument("--results", default=str(Path(__file__).with_name("RESULTS.md")))
    args = parser.parse_args(argv)
    if not (DATA / "corpus").is_dir():
        print(f"Skipped: the shared corpus is not at {DATA / 'corpus'}.")
        return 0
    from benchmarks.machine import machine_info, machine_line
    from benchmarks.report import BenchmarkResult, markdown_table, portable_command, write_result
    from pipelines.corpus import prepare_corpus

    out = Path(args.out)
    prepared = out / "corpus"
    if not prepared.is_dir():
        prepare_corpus(sorted((DATA / "corpus").glob("*.txt")), prepared)
    train_files = sorted(str(p) for p in prepared.glob("*.txt") if p.name != HELD_OUT_BOOK)
    vocab = str(DATA / "vocab" / "bert-base-uncased-vocab.txt")
    batches = write_batches(train_files, vocab, args.steps, out / "batches.npz", args.seed)
    held_out = write_batches([str(prepared / HELD_OUT_BOOK)], vocab, HELD_OUT_BATCHES, out / "held_out.npz", args.seed)
    init = random_start(out / "init", vocab, args.seed)

    torch_result = out / "transformers.json"
    command = [sys.executable, "-m", "benchmarks.torch_pretraining", "--init", str(init), "--batches", str(batches),
               "--held-out", str(held_out), "--learning-rate", str(args.learning_rate),
               "--warmup-steps", str(args.warmup_steps), "--log-every", str(LOG_EVERY), "--seed", str(args.seed),
               "--out", str(torch_result)]
    with open(out / "transformers.log", "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)
    theirs = json.loads(torch_result.read_text())
    shutil.rmtree(out / "bert_tf", ignore_errors=True)
    curve, ours, seconds = bert_tf_run(init, batches, vocab, args, out / "bert_tf")
    curves = {"bert-tf": curve, "transformers": [tuple(point) for point in theirs["loss_curve"]]}
    png = Path(__file__).with_name("pretraining_loss.png")
    plot(curves, png)
    agreement = compare(curves)
    baseline = chance(held_out)
    accuracy_gap = ours["mlm_accuracy"] - theirs["held_out"]["mlm_accuracy"]

    suite_command = portable_command(["python", "-m", "benchmarks.pretraining_learning",
                                      *(argv if argv is not None else sys.argv[1:])])
    rows = [["masked-LM accuracy", f"{ours['mlm_accuracy']:.4f}", f"{theirs['held_out']['mlm_accuracy']:.4f}",
             f"{accuracy_gap:+.4f}", f"{baseline['mlm_chance']:.4f} (most frequent masked token)"],
            ["next-sentence accuracy", f"{ours['nsp_accuracy']:.4f}", f"{theirs['held_out']['nsp_accuracy']:.4f}",
             f"{ours['nsp_accuracy'] - theirs['held_out']['nsp_accuracy']:+.4f}", "0.5000"]]
    section = f"""## Pre-training learns, as transformers does: BERT-Mini from one start on the same batches ({datetime.date.today()})

- Command: `{suite_command}`
- Machine: {machine_line(machine_info())}
- Model: BERT-Mini (L4/H256/A4, 30,522-token uncased vocabulary), one random start (transformers'
  `BertForPreTraining` initialisation, seed {args.seed}) loaded by both frameworks.
- Data: {args.steps} batches of {BATCH_SIZE} examples of {SEQ_LENGTH} tokens, written once by bert-tf's pipeline
  (`pipelines.pretraining`: next-sentence pairs, 15% of tokens masked 80/10/10, at most {MAX_PREDICTIONS} per row) from
  11 of the 12 shared books, read by both in the same order; held out: `{HELD_OUT_BOOK}` (never trained on),
  {baseline['pairs']} pairs, {baseline['masked_tokens']} masked tokens.
- Recipe (both): AdamW (β 0.9/0.999, ε 1e-6, weight decay 0.01 except biases and LayerNorm weights), peak learning
  rate {args.learning_rate} after {args.warmup_steps} warm-up steps, linear decay to 0 at step {args.steps}, clipping at
  global norm 1, dropout 0.1. bert-tf: `bert_tf.training.run_pretraining` ({seconds / 60:.1f} min);
  transformers: `benchmarks.torch_pretraining` ({theirs['train_seconds'] / 60:.1f} min; torch {theirs['versions']['torch']},
  transformers {theirs['versions']['transformers']}).

{markdown_table(["held out", "bert-tf", "transformers", "difference", "chance"], rows)}

Training loss (MLM + NSP, mean of every {LOG_EVERY} steps): from {curve[0][1]:.2f} / {curves['transformers'][0][1]:.2f}
(bert-tf / transformers, first {LOG_EVERY} steps) to {agreement['last_200_steps'][0]:.3f} / {agreement['last_200_steps'][1]:.3f}
(last 200 steps); the curves differ by {agreement['mean_abs_difference']:.3f} on average (largest
{agreement['max_abs_difference']:.3f}, mean signed {agreement['mean_difference']:+.3f}), where one curve moves by
{agreement['step_to_step_noise']:.3f} from one log to the next in the second half. Curves:
`benchmarks/pretraining_loss.png`.

Targets: held-out masked-LM accuracy within {ACCURACY_TOLERANCE} — {'met' if abs(accuracy_gap) <= ACCURACY_TOLERANCE else '**not met**'}
({accuracy_gap:+.4f}); loss curves within noise — the mean |difference| {agreement['mean_abs_difference']:.3f} against
the step-to-step noise {agreement['step_to_step_noise']:.3f}.
"""
    data = {"command": suite_command, "steps": args.steps, "held_out": {"bert_tf": ours, "transformers": theirs["held_out"],
            **baseline}, "loss_curves": curves, "agreement": agreement, "seconds": {"bert_tf": seconds,
            "transformers": theirs["train_seconds"]}}
    results_md = Path(args.results)
    write_result(BenchmarkResult(NAME, section, data), results_md, results_md.parent / "results")
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
