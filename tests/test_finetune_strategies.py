"""`finetune` and `distill` on several replicas and workers (logical CPUs, local worker processes), with gradient
accumulation, mixed precision and XLA: the global batch trains as on one device."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_pretraining_loop import free_port
from tiny_finetune_files import VOCAB, sentiment_rows, write_conll, write_sentiment_tsv, write_vocab

import bert_tf

WORKER = Path(__file__).with_name("finetune_worker.py")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A vocabulary, a dropout-free tiny config (replicas would draw other dropout masks) and 32 training rows."""
    folder = tmp_path_factory.mktemp("files")
    write_vocab(folder)
    bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0).write_json(folder / "bert_config.json")
    write_sentiment_tsv(folder / "train.tsv", 32, seed=0)
    write_sentiment_tsv(folder / "dev.tsv", 8, seed=1)
    return folder


def settings(files, out, **changes) -> dict:
    """FinetuneConfig fields: 2 epochs of 4 full batches of 8, in a fixed order (no buckets, whose last batches
    would split unevenly over replicas)."""
    return {"task": "classify", "train_file": str(files / "train.tsv"), "output_dir": str(out),
            "init": str(files / "bert_config.json"), "vocab_file": str(files / "vocab.txt"), "batch_size": 8,
            "epochs": 2, "dropout": 0.0, "learning_rate": 1e-3, "bucketing": False, "seq_length": 16, **changes}


def start(config: dict, weights_out, *extra, env=None):
    return subprocess.Popen([sys.executable, str(WORKER), json.dumps(config), str(weights_out), *map(str, extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def finish(process, timeout=240) -> list[float]:
    """The epoch losses the worker printed."""
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-3000:]
    return json.loads(output.strip().splitlines()[-1].removeprefix("LOSSES "))


def weights(path) -> list[np.ndarray]:
    saved = np.load(path)
    return [saved[f"arr_{index}"] for index in range(len(saved.files))]


def assert_same_training(first, second, atol):
    """The same epoch losses (within float rounding) and weights (within `atol`); prints the largest differences."""
    (losses, weights_a), (other_losses, weights_b) = first, second
    print(f"largest loss difference {np.abs(np.subtract(losses, other_losses)).max():.2e}, weight difference "
          f"{max(np.abs(a - b).max() for a, b in zip(weights_a, weights_b)):.2e}")
    np.testing.assert_allclose(other_losses, losses, rtol=1e-4)
    assert len(weights_a) == len(weights_b)
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_allclose(b, a, atol=atol)


def one_and_two_replicas(config_of, tmp_path):
    """(losses, weights) of the run on one device and on 2 logical CPUs (MirroredStrategy), the same global batch."""
    one = finish(start(config_of(tmp_path / "one", "default"), tmp_path / "one.npz"))
    two = finish(start(config_of(tmp_path / "two", "mirrored"), tmp_path / "two.npz", "--logical-cpus", 2))
    return (one, weights(tmp_path / "one.npz")), (two, weights(tmp_path / "two.npz"))


@pytest.mark.slow
@pytest.mark.parametrize("accumulation", [1, 2])
def test_two_replicas_fine_tune_as_one_device(files, tmp_path, accumulation):
    one, two = one_and_two_replicas(lambda out, strategy: settings(
        files, out, strategy=strategy, gradient_accumulation_steps=accumulation), tmp_path)
    # Adam divides each gradient element by its own running size, so an element whose gradient nearly cancels out
    # moves by a little of the learning rate (1e-3) when two replicas sum it in another order.
    assert_same_training(one, two, atol=5e-5)
    assert (tmp_path / "two" / "model.keras").is_file()


@pytest.fixture(scope="module")
def embedding_files(files):
    """32 pairs (anchor, positive) and 32 scored pairs of the training sentences, for the embedding losses."""
    rows = [text for text, _ in sentiment_rows(64, seed=2)]
    (files / "pairs.tsv").write_text("anchor\tpositive\n" + "".join(
        f"{rows[index]}\t{rows[index + 1]}\n" for index in range(0, 64, 2)))
    (files / "scored.tsv").write_text("sentence1\tsentence2\tscore\n" + "".join(
        f"{rows[index]}\t{rows[index + 1]}\t{index % 5}\n" for index in range(0, 64, 2)))
    return files


@pytest.mark.slow
@pytest.mark.parametrize("data", ["pairs", "scored"])
def test_two_replicas_train_an_embedder_as_one_device(embedding_files, tmp_path, data):
    """In-batch negatives and CoSENT compare every example of the batch with every other: each replica reads the
    global batch's vectors (all-gathered), as one device does, not only its own half."""
    one, two = one_and_two_replicas(lambda out, strategy: settings(
        embedding_files, out, strategy=strategy, task="embed", train_file=str(embedding_files / f"{data}.tsv")),
        tmp_path)
    assert_same_training(one, two, atol=5e-5)


@pytest.mark.slow
def test_two_replicas_fine_tune_ner_as_one_device(files, tmp_path):
    """The token loss is the mean over the global batch's labelled tokens, however many fall to each replica."""
    train = write_conll(tmp_path / "train.conll", copies=6)
    one, two = one_and_two_replicas(lambda out, strategy: settings(
        files, out, strategy=strategy, task="ner", train_file=str(train)), tmp_path)
    assert_same_training(one, two, atol=5e-5)


@pytest.fixture(scope="module")
def teacher(files, tmp_path_factory):
    from bert_tf.training.finetune import finetune
    from bert_tf.training.finetune_config import FinetuneConfig

    out = tmp_path_factory.mktemp("teacher") / "model"
    finetune(FinetuneConfig(**settings(files, out, epochs=1)), progress=False)
    return out


@pytest.mark.slow
def test_two_replicas_distil_as_one_device(files, teacher, tmp_path):
    def config_of(out, strategy):
        return settings(files, out, strategy=strategy, teacher=str(teacher), init="teacher", student_layers=1,
                        vocab_file=None, hidden_weight=1.0, attention_weight=1.0)

    one, two = one_and_two_replicas(config_of, tmp_path)
    assert_same_training(one, two, atol=5e-5)


@pytest.mark.slow
def test_gradient_accumulation_of_k_batches_is_one_batch_k_times_larger(files, tmp_path):
    from bert_tf.training.finetune import finetune
    from bert_tf.training.finetune_config import FinetuneConfig

    large = finetune(FinetuneConfig(**settings(files, tmp_path / "large", epochs=1)), progress=False)
    accumulated = finetune(FinetuneConfig(**settings(files, tmp_path / "accumulated", epochs=1, batch_size=4,
                                                     gradient_accumulation_steps=2)), progress=False)
    assert accumulated.train_steps == large.train_steps == 4  # optimizer updates
    differences = [np.abs(a - b).max() for a, b in zip(large.model.get_weights(), accumulated.model.get_weights())]
    print(f"largest weight difference {max(differences):.2e}")
    for a, b in zip(large.model.weights, accumulated.model.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=2e-5, err_msg=a.path)


def two_workers(config_of, tmp_path, name="worker") -> list[tuple[list[float], list[np.ndarray]]]:
    """(losses, weights) of each of two local worker processes (TF_CONFIG), `config_of(index)` their settings."""
    ports = [free_port(), free_port()]
    workers = []
    for index in range(2):
        tf_config = {"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                     "task": {"type": "worker", "index": index}}
        workers.append(start(config_of(index), tmp_path / f"{name}{index}.npz",
                             env={**os.environ, "TF_CONFIG": json.dumps(tf_config)}))
    try:
        losses = [finish(worker, timeout=300) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    return [(losses[index], weights(tmp_path / f"{name}{index}.npz")) for index in range(2)]


@pytest.mark.slow
def test_two_workers_finish_agree_and_only_the_chief_writes_the_model(files, tmp_path):
    out = tmp_path / "run" / "model"
    (losses, weights_0), (other_losses, weights_1) = two_workers(lambda index: settings(
        files, out, strategy="multi_worker", dev_file=str(files / "dev.tsv"), gradient_accumulation_steps=2), tmp_path)
    assert losses == other_losses and all(math.isfinite(loss) for loss in losses)
    for a, b in zip(weights_0, weights_1):
        np.testing.assert_array_equal(a, b)
    assert (out / "model.keras").is_file()
    assert sorted(path.name for path in out.parent.iterdir()) == ["model"]  # no worker's leftovers beside it


@pytest.mark.slow
def test_two_workers_train_with_xla_as_without(files, tmp_path):
    """XLA compiles each worker's forward pass and its gradient; the all-reduce stays outside (XLA's CPU backend
    compiles no collective), so the run trains as without XLA, within the rounding of fused kernels."""
    runs = {xla: two_workers(lambda index: settings(files, tmp_path / f"{xla}{index}", strategy="multi_worker",
                                                    jit_compile=xla), tmp_path, name=f"xla{xla}")
            for xla in (False, True)}
    assert runs[True][0][0] == runs[True][1][0]  # the workers agree
    assert_same_training(runs[False][0], runs[True][0], atol=1e-4)


def test_xla_is_refused_for_several_replicas_on_this_hosts_cpus_only():
    from types import SimpleNamespace

    from bert_tf.training.strategy import check_xla

    def strategy(*devices):
        return SimpleNamespace(num_replicas_in_sync=len(devices), extended=SimpleNamespace(worker_devices=tuple(
            f"/job:localhost/replica:0/task:0/device:{device}" for device in devices)))

    with pytest.raises(ValueError, match=r"^jit_compile \(--xla\) cannot compile for 2 replicas on this host's CPUs"):
        check_xla(strategy("CPU:0", "CPU:1"), jit_compile=True)
    check_xla(strategy("CPU:0", "CPU:1"), jit_compile=False)
    check_xla(strategy("GPU:0", "GPU:1"), jit_compile=True)
    check_xla(strategy("CPU:0"), jit_compile=True)  # one device, or one CPU per worker


@pytest.mark.slow
def test_sigterm_to_one_worker_stops_both_after_the_same_step_and_they_say_how_to_go_on(files, tmp_path):
    ports = [free_port(), free_port()]
    out = tmp_path / "model"
    workers = []
    for index in range(2):
        tf_config = {"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                     "task": {"type": "worker", "index": index}}
        command = [sys.executable, "-m", "bert_tf_cli", "finetune", "--task", "classify", "--train",
                   str(files / "train.tsv"), "--init", str(files / "bert_config.json"), "--vocab",
                   str(files / "vocab.txt"), "--out", str(out), "--batch-size", "8", "--seq-length", "16",
                   "--epochs", "1000", "--strategy", "multi_worker"]
        workers.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, "TF_CONFIG": json.dumps(tf_config)}))
    try:
        for line in workers[0].stdout:  # the chief shows the progress
            if line.startswith("Fine-tuning on"):
                break
        time.sleep(5)  # some steps
        workers[1].send_signal(signal.SIGTERM)
        outputs = [worker.communicate(timeout=120)[0] for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 128 + signal.SIGTERM, output[-3000:]
        assert "run the same command again (on every worker) to train from the start" in output
    stops = [re.search(r"SIGTERM stopped training in epoch \d+ after step \d+", output)[0] for output in outputs]
    assert stops[0] == stops[1]  # the same step on both
    assert not out.exists()


@pytest.mark.slow
def test_mixed_precision_and_xla_train_and_the_model_loads(files, tmp_path):
    """Under mixed_bfloat16, with XLA, on `mirrored` with this process's single CPU (one replica: allowed)."""
    from bert_tf.training.finetune import finetune
    from bert_tf.training.finetune_config import FinetuneConfig

    result = finetune(FinetuneConfig(**settings(files, tmp_path / "model", epochs=1, max_train_examples=16,
                                                strategy="mirrored", mixed_precision="mixed_bfloat16",
                                                jit_compile=True)), progress=False)
    assert result.model.compute_dtype == "bfloat16" and all(math.isfinite(loss) for loss in result.history["loss"])
    loaded = bert_tf.load_model_directory(tmp_path / "model").model
    probabilities = loaded.predict(["a good film", "a sad plot"], verbose=0)
    assert probabilities.shape == (2, 2) and np.isfinite(probabilities).all()


@pytest.mark.parametrize("flags, message", [
    (["--gradient-accumulation-steps", "0"], "--gradient-accumulation-steps must be a positive integer, got 0."),
    (["--mixed-precision", "mixed_float16"], "--mixed-precision mixed_float16 needs a GPU"),
    (["--gradient-accumulation-steps", "100"], "(--gradient-accumulation-steps) 100 is more than the run's 8 batches"),
])
def test_bad_hardware_flags_are_one_line_errors_naming_the_flag(files, tmp_path, capsys, flags, message):
    from bert_tf_cli import main

    assert main(["finetune", "--task", "classify", "--train", str(files / "train.tsv"), "--init",
                 str(files / "bert_config.json"), "--vocab", str(files / "vocab.txt"), "--out", str(tmp_path / "out"),
                 "--batch-size", "8", "--epochs", "2", "--seq-length", "16", *flags]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1
