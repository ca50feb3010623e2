"""Peak resident memory of BERT-base inference and of a training step, one fresh process per contender and task.

Each child process imports its framework, builds the model (random weights, BERT-base,
tanh-GELU), runs the task, and reports its peak resident set after each stage. The peak is
the kernel's high-water mark of the process' own memory (`VmHWM` in /proc/self/status);
`resource.getrusage(RUSAGE_SELF).ru_maxrss` would be the same for a process started from a
small one, but on Linux a process started by a large one (this suite, holding several
models) keeps the parent's peak in `ru_maxrss` across fork and exec: every row would show the
suite's own size. Where /proc is missing, `ru_maxrss` is used. Stages:
- inference: two forward passes, batch 8, seq 128 (bert_tf `inference_function`,
  KerasHub `BertBackbone` in a `tf.function`, transformers `BertModel` under `inference_mode`);
- training: two optimizer steps of a 2-class sequence classifier, batch 32, seq 128, AdamW
  (bert_tf `BertClassifier.train_on_batch`, KerasHub `BertTextClassifier.train_on_batch`,
  transformers `BertForSequenceClassification` with `torch.optim.AdamW`).
Quick mode runs only bert_tf, on the tiny model.

    python -m benchmarks.run --only memory
    python -m benchmarks.memory --child bert_tf inference     # one child, prints JSON
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import QUICK_CONFIG, Settings

NAME = "memory"
CONTENDERS = ("bert_tf", "keras_hub", "transformers")
TASKS = ("inference", "training")
LABELS = {"bert_tf": "bert_tf", "keras_hub": "KerasHub", "transformers": "transformers (PyTorch)"}
SHAPES = {"inference": (8, 128), "training": (32, 128)}  # (batch, seq)


def _peak_mib() -> float:
    """This process' peak resident memory so far, MiB (see the module docstring)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux and most Unixes report KiB


def _config(quick: bool) -> dict:
    base = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                max_position_embeddings=512)
    return QUICK_CONFIG if quick else base


def child(contender: str, task: str, quick: bool) -> dict:
    """Runs one contender's task in this process; the peak resident MiB after imports, model, and task."""
    import numpy as np

    batch, seq = (2, 16) if quick else SHAPES[task]
    shape = _config(quick)
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, (batch, seq)).astype(np.int32)
    labels = rng.integers(0, 2, batch).astype(np.int32)
    stages = {}
    if contender == "transformers":
        import torch
        import transformers

        stages["imports"] = _peak_mib()
        hf_config = transformers.BertConfig(vocab_size=30522, hidden_act="gelu_pytorch_tanh", num_labels=2,
                                            **{key: value for key, value in shape.items()})
        model = (transformers.BertForSequenceClassification if task == "training" else transformers.BertModel)(hf_config)
        stages["model"] = _peak_mib()
        inputs = {"input_ids": torch.from_numpy(ids.astype(np.int64)), "attention_mask": torch.ones(batch, seq, dtype=torch.int64),
                  "token_type_ids": torch.zeros(batch, seq, dtype=torch.int64)}
        if task == "inference":
            model.eval()
            with torch.inference_mode():
                for _ in range(2):
                    model(**inputs)
        else:
            optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
            for _ in range(2):
                loss = model(**inputs, labels=torch.from_numpy(labels.astype(np.int64))).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
    else:
        import keras
        import tensorflow as tf

        import bert_tf

        config = bert_tf.BertConfig(hidden_act="gelu_tanh", **shape)
        features = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
        if contender == "keras_hub":
            import keras_hub

            from benchmarks.contenders import keras_hub_backbone

            stages["imports"] = _peak_mib()
            backbone = keras_hub_backbone(config)
            features = {"token_ids": ids, "padding_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
            model = keras_hub.models.BertTextClassifier(backbone, 2, preprocessor=None) if task == "training" else backbone
            run = tf.function(lambda x: backbone(x, training=False))
        else:
            from bert_tf.inference import inference_function

            stages["imports"] = _peak_mib()
            encoder = bert_tf.BertModel(config)
            model = bert_tf.BertClassifier(encoder, 2) if task == "training" else encoder
            run = inference_function(encoder)
        stages["model"] = _peak_mib()
        if task == "inference":
            for _ in range(2):
                run({name: tf.constant(value) for name, value in features.items()})
        else:
            model.compile(optimizer=keras.optimizers.AdamW(2e-5),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            for _ in range(2):
                model.train_on_batch(features, labels)
    stages["peak"] = _peak_mib()
    return stages


def run(settings: Settings) -> BenchmarkResult:
    contenders = ("bert_tf",) if settings.quick else CONTENDERS
    results = {}
    for task in TASKS:
        for contender in contenders:
            command = [sys.executable, "-m", "benchmarks.memory", "--child", contender, task]
            command += ["--quick"] if settings.quick else []
            finished = subprocess.run(command, capture_output=True, text=True, check=False,
                                      env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
            if finished.returncode != 0:
                raise RuntimeError(f"memory: {' '.join(command)} failed:\n{finished.stderr[-3000:]}")
            results[f"{task}/{contender}"] = json.loads(finished.stdout.strip().splitlines()[-1])
    rows = []
    for task in TASKS:
        batch, seq = (2, 16) if settings.quick else SHAPES[task]
        for contender in contenders:
            stages = results[f"{task}/{contender}"]
            rows.append([f"{task} (batch {batch}, seq {seq})", LABELS[contender], f"{stages['imports']:,.0f}",
                         f"{stages['model']:,.0f}", f"{stages['peak']:,.0f}", f"{stages['peak'] - stages['imports']:,.0f}"])
    markdown = "\n\n".join([
        f"## Peak resident memory{' (quick: tiny model)' if settings.quick else ', BERT-base'}",
        "MiB, peak resident set (VmHWM) of a fresh process per row after each stage: framework imported, model "
        "built, task run "
        "(inference: two forward passes; training: two AdamW steps of a 2-class classifier).",
        markdown_table(["task", "contender", "after imports", "after model", "peak", "peak − imports"], rows),
    ])
    return BenchmarkResult(NAME, markdown, {"results_mib": results, "shapes": SHAPES})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("CONTENDER", "TASK"), required=True,
                        help=f"contender ({', '.join(CONTENDERS)}) and task ({', '.join(TASKS)})")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    contender, task = args.child
    if contender not in CONTENDERS or task not in TASKS:
        parser.error(f"unknown contender or task: {contender} {task}")
    print(json.dumps(child(contender, task, args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
