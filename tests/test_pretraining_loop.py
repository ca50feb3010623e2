"""The custom pre-training loop: resume, SIGTERM, SIGKILL, MirroredStrategy and MultiWorkerMirroredStrategy on CPU."""

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

WORKER = Path(__file__).with_name("pretraining_worker.py")


def start_worker(output_dir, steps, strategy="default", *extra, env=None):
    return subprocess.Popen([sys.executable, str(WORKER), str(output_dir), str(steps), strategy, *map(str, extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def finish(process, timeout=240):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-3000:]
    return output


def checkpoint_steps(output_dir):
    return sorted(int(p.name[len("ckpt-"):-len(".index")]) for p in (Path(output_dir) / "checkpoints").glob("ckpt-*.index"))


def readable(prefix):
    """Whether every tensor of the checkpoint at `prefix` reads back."""
    try:
        reader = tf.train.load_checkpoint(str(prefix))
        for name in reader.get_variable_to_dtype_map():
            reader.get_tensor(name)
    except (tf.errors.OpError, IndexError):
        return False
    return True


def wait_for(condition, what, timeout=180):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.05)


@pytest.mark.slow
def test_resume_continues_step_counter_and_optimizer_state(tmp_path):
    output = finish(start_worker(tmp_path, 6, "default", "--stop-after", 4))
    assert "FINISHED step=4" in output
    assert checkpoint_steps(tmp_path) == [2, 4]
    reader = tf.train.load_checkpoint(str(tmp_path / "checkpoints" / "ckpt-4"))
    assert reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE") == 4
    output = finish(start_worker(tmp_path, 6, "default", "--weights-out", tmp_path / "resumed.npz"))
    assert "FINISHED step=6" in output
    assert checkpoint_steps(tmp_path) == [2, 4, 6]

    # The same 6 steps in one go give the same weights: model, optimizer and data position were all restored.
    finish(start_worker(tmp_path / "straight", 6, "default", "--weights-out", tmp_path / "straight.npz"))
    resumed, straight = np.load(tmp_path / "resumed.npz"), np.load(tmp_path / "straight.npz")
    for name in straight.files:
        np.testing.assert_allclose(resumed[name], straight[name], atol=1e-6, err_msg=name)
    assert (tmp_path / "model" / "model.keras").is_file()
    assert json.loads((tmp_path / "pretraining_config.json").read_text())["num_train_steps"] == 6


@pytest.mark.slow
def test_the_seed_makes_a_run_reproducible_weights_and_dropout_included(tmp_path):
    """Same seed, same weights after training with dropout (in process, one device); another seed differs."""
    import bert_tf
    from bert_tf.training import PretrainingConfig, run_pretraining
    from pretraining_worker import CONFIG_FIELDS, GLOBAL_BATCH, dataset_fn

    config_file = tmp_path / "bert_config.json"
    bert_tf.BertConfig(**{**CONFIG_FIELDS, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
                       ).write_json(config_file)

    def trained_weights(name, seed):
        config = PretrainingConfig(output_dir=str(tmp_path / name), model=str(config_file), seq_length=12,
                                   max_predictions_per_seq=3, global_batch_size=GLOBAL_BATCH, num_train_steps=3,
                                   num_warmup_steps=1, learning_rate=1e-3, seed=seed)
        return {k: v.numpy() for k, v in run_pretraining(config, dataset_fn, progress=False).model.google_weights().items()}

    first, again, other = trained_weights("first", 3), trained_weights("again", 3), trained_weights("other", 4)
    for name in first:
        np.testing.assert_allclose(again[name], first[name], atol=1e-6, err_msg=name)
    assert not np.allclose(other["encoder/layer_0/attention/self/query/kernel"],
                           first["encoder/layer_0/attention/self/query/kernel"])


@pytest.mark.slow
def test_sigterm_saves_the_current_step_and_the_next_run_resumes_from_it(tmp_path):
    process = start_worker(tmp_path, 5000, "default", "--checkpoint-every", 1000)
    for line in process.stdout:
        if "Starting at step 0" in line:
            break
    time.sleep(3)  # some steps, none on the cadence
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, output[-3000:]
    assert "Traceback" not in output
    stopped = int(re.search(r"STOPPED by SIGTERM at step=(\d+)", output)[1])
    assert checkpoint_steps(tmp_path) == [stopped] and 0 < stopped < 1000
    assert not (tmp_path / "model").exists()  # an unfinished run writes no model

    output = finish(start_worker(tmp_path, stopped + 2, "default", "--checkpoint-every", 1000))
    assert f"Resuming from step {stopped} ({tmp_path / 'checkpoints' / f'ckpt-{stopped}'})" in output
    assert f"FINISHED step={stopped + 2}" in output


@pytest.mark.slow
def test_sigkill_at_a_random_moment_resumes_from_the_newest_intact_checkpoint(tmp_path):
    """Killed at a seeded random moment, right as a checkpoint write has begun (its ckpt-N_temp/ appeared)."""
    checkpoints = tmp_path / "checkpoints"
    process = start_worker(tmp_path, 5000, "default", "--checkpoint-every", 1)
    wait_for(lambda: len(checkpoint_steps(tmp_path)) >= 2, "checkpoints")
    time.sleep(random.Random(19).uniform(0, 2))
    deadline = time.time() + 10
    while not list(checkpoints.glob("ckpt-*_temp")) and time.time() < deadline:
        pass
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    interrupted = list(checkpoints.glob("ckpt-*_temp"))
    newest_intact = max(step for step in checkpoint_steps(tmp_path) if readable(checkpoints / f"ckpt-{step}"))

    output = finish(start_worker(tmp_path, newest_intact + 2, "default", "--checkpoint-every", 1))
    assert f"Resuming from step {newest_intact} ({checkpoints / f'ckpt-{newest_intact}'})" in output
    assert f"FINISHED step={newest_intact + 2}" in output
    assert ("Removed the leftovers of interrupted writes" in output) == bool(interrupted)
    assert not list(checkpoints.glob("*_temp*"))


@pytest.mark.slow
def test_mirrored_strategy_on_two_logical_cpus_matches_one_device(tmp_path):
    finish(start_worker(tmp_path / "one", 3, "default", "--weights-out", tmp_path / "one.npz"))
    output = finish(start_worker(tmp_path / "two", 3, "mirrored", "--logical-cpus", 2,
                                 "--weights-out", tmp_path / "two.npz"))
    assert "FINISHED step=3" in output
    one, two = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    # Adam divides each gradient element by its own running size, so an element whose gradient
    # nearly cancels out can move by a few percent of the learning rate (1e-3) when two replicas
    # sum it in another order; a wrong reduction (e.g. per-replica clipping) moves whole steps.
    for name in one.files:
        np.testing.assert_allclose(two[name], one[name], atol=5e-5, err_msg=name)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_multi_worker_mirrored_strategy_two_local_workers(tmp_path):
    ports = [free_port(), free_port()]
    workers = []
    for index in range(2):
        tf_config = {"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                     "task": {"type": "worker", "index": index}}
        env = {**os.environ, "TF_CONFIG": json.dumps(tf_config)}
        workers.append(start_worker(tmp_path, 3, "multi_worker", "--weights-out", tmp_path / f"worker{index}.npz",
                                    env=env))
    try:
        outputs = [finish(worker, timeout=300) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert all("FINISHED step=3" in output for output in outputs)
    first, second = np.load(tmp_path / "worker0.npz"), np.load(tmp_path / "worker1.npz")
    for name in first.files:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    assert checkpoint_steps(tmp_path) == [2, 3]  # the chief's; the other worker's temporary copy is gone
    assert not list((tmp_path / "checkpoints").glob(".worker_*"))


def test_bad_settings_are_clear_errors(tmp_path):
    from bert_tf.training import PretrainingConfig

    with pytest.raises(ValueError, match="unknown strategy"):
        PretrainingConfig(output_dir=str(tmp_path), strategy="tpu")
    with pytest.raises(ValueError, match="mixed_float16 needs a GPU"):
        PretrainingConfig(output_dir=str(tmp_path), mixed_precision="mixed_float16")
    with pytest.raises(ValueError, match="checkpoint_minutes must be positive"):
        PretrainingConfig(output_dir=str(tmp_path), checkpoint_minutes=0)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        from bert_tf.training import make_strategy

        os.environ.pop("TF_CONFIG", None)
        make_strategy("multi_worker")
