"""Resuming pre-training (issue 19): what it says, its cadence, and damaged, lost or foreign checkpoint files.

Runs in this process on the loop tests' tiny model; tests/test_pretraining_loop.py kills real processes.
"""

import logging
import os
import re
import signal
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.training import PretrainingConfig, run_pretraining
from bert_tf.training.checkpoint_cadence import CheckpointCadence
from bert_tf.training.stop_signals import StopSignals
from pretraining_worker import CONFIG_FIELDS, GLOBAL_BATCH, dataset_fn


def train(output_dir, steps, progress=False, hidden_size=CONFIG_FIELDS["hidden_size"], **settings):
    """Trains the tiny model of the loop tests to `steps` in `output_dir` (checkpoints every 2 steps unless told)."""
    config_file = output_dir / "bert_config.json"
    output_dir.mkdir(parents=True, exist_ok=True)
    bert_tf.BertConfig(**{**CONFIG_FIELDS, "hidden_size": hidden_size}).write_json(config_file)
    config = PretrainingConfig(output_dir=str(output_dir), model=str(config_file), seq_length=12,
                               max_predictions_per_seq=3, global_batch_size=GLOBAL_BATCH, num_train_steps=steps,
                               num_warmup_steps=1, learning_rate=1e-3, **{"checkpoint_every": 2, **settings})
    return run_pretraining(config, dataset_fn, progress=progress)


def checkpoint_steps(output_dir):
    return sorted(int(p.name[len("ckpt-"):-len(".index")]) for p in (output_dir / "checkpoints").glob("ckpt-*.index"))


def test_the_cadence_is_by_steps_or_by_time_whichever_comes_first():
    now = [0.0]
    cadence = CheckpointCadence(every_steps=10, every_seconds=60, clock=lambda: now[0])
    assert [s for s in range(1, 31) if cadence.step_due(s)] == [10, 20, 30]
    now[0] = 59.9
    assert not cadence.time_due()
    now[0] = 60.0
    assert cadence.time_due()
    cadence.saved()
    assert not cadence.time_due()
    assert not CheckpointCadence(every_steps=10, clock=lambda: 1e9).time_due()  # by steps only


def test_by_default_a_run_checkpoints_every_tenth_of_its_steps_and_at_the_end(tmp_path):
    train(tmp_path, 25, checkpoint_every=None, keep_checkpoints=20)
    assert checkpoint_steps(tmp_path) == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 25]
    # After checkpoint_minutes of training, every step is due.
    train(tmp_path / "timed", 3, checkpoint_every=1000, checkpoint_minutes=1e-9)
    assert checkpoint_steps(tmp_path / "timed") == [1, 2, 3]


def test_stop_signals_are_recorded_in_the_block_and_act_as_before_outside_it():
    # Ctrl-C raising KeyboardInterrupt, as in a terminal: after the whole suite SIGINT was found ignored in this
    # process (a child started then inherited SIG_IGN; which test or library leaves it so was not found).
    suite_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with StopSignals() as signals:
            assert signals.received is None
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # handled at the next bytecodes
            for _ in range(100):
                if signals.received is not None:
                    break
                time.sleep(0.01)
            assert signals.received == signal.SIGINT
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

        with pytest.raises(KeyboardInterrupt):  # a second Ctrl-C interrupts at once
            with StopSignals() as signals:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                for _ in range(100):
                    if signals.received is not None:
                        break
                    time.sleep(0.01)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                time.sleep(5)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, suite_handler)

    entered = []  # only the main thread may install handlers: elsewhere the block records nothing
    thread = threading.Thread(target=lambda: entered.append(StopSignals().__enter__().received))
    thread.start()
    thread.join()
    assert entered == [None] and signal.getsignal(signal.SIGINT) is suite_handler


def test_a_run_says_where_it_starts_and_resumes(tmp_path, capsys, caplog):
    with caplog.at_level(logging.INFO, logger="bert_tf.training.pretraining"):
        train(tmp_path, 4, progress=True)
        assert "Starting at step 0" in capsys.readouterr().out
        train(tmp_path, 6, progress=True)
    resuming = f"Resuming from step 4 ({tmp_path / 'checkpoints' / 'ckpt-4'})"
    assert resuming in capsys.readouterr().out
    announced = [r.message for r in caplog.records if r.message.startswith(("Starting", "Resuming"))]
    assert announced == ["Starting at step 0", resuming]


@pytest.mark.parametrize("damage", ["truncated data file", "missing index"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog, damage):
    train(tmp_path, 6)
    latest = tmp_path / "checkpoints" / "ckpt-6"
    if damage == "missing index":
        os.remove(f"{latest}.index")
    else:
        data = tmp_path / "checkpoints" / "ckpt-6.data-00000-of-00001"
        os.truncate(data, data.stat().st_size // 2)
    with caplog.at_level(logging.INFO, logger="bert_tf.training"):
        result = train(tmp_path, 8)
    warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("bert_tf")]
    assert len(warnings) == 1 and warnings[0].startswith(f"Checkpoint {latest} is damaged (")
    assert f"Resuming from step 4 ({tmp_path / 'checkpoints' / 'ckpt-4'})" in caplog.text
    assert result.step == 8
    assert checkpoint_steps(tmp_path) == [4, 6, 8]  # ckpt-6 written anew, ckpt-2 the oldest beyond keep_checkpoints
    tf.train.load_checkpoint(str(latest)).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")


def test_a_lost_state_file_resumes_from_the_newest_checkpoint_on_disk(tmp_path, caplog):
    train(tmp_path, 6)
    os.remove(tmp_path / "checkpoints" / "checkpoint")  # TensorFlow's record of the newest checkpoint
    with caplog.at_level(logging.INFO, logger="bert_tf.training.pretraining"):
        result = train(tmp_path, 8)
    assert f"Resuming from step 6 ({tmp_path / 'checkpoints' / 'ckpt-6'})" in caplog.text
    assert result.step == 8
    assert checkpoint_steps(tmp_path) == [4, 6, 8]  # the recovered ones are managed again: ckpt-2 deleted
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")) == str(tmp_path / "checkpoints" / "ckpt-8")


def test_leftovers_of_interrupted_writes_are_removed(tmp_path, caplog):
    train(tmp_path, 2)
    checkpoints = tmp_path / "checkpoints"
    leftovers = [checkpoints / "ckpt-4_temp", checkpoints / "checkpoint.tmp5f3a", tmp_path / ".model.k2x9q1",
                 tmp_path / ".model.old.7hd2"]
    (leftovers[0]).mkdir()
    (leftovers[0] / "part-00000-of-00001.data-00000-of-00001.tempstate1234").write_bytes(b"\0" * 100)
    leftovers[1].write_text("model_checkpoint_path: ")
    for staging in leftovers[2:]:
        staging.mkdir()
        (staging / "model.keras").write_bytes(b"PK")
    with caplog.at_level(logging.INFO, logger="bert_tf.training"):
        train(tmp_path, 4)
    assert not any(path.exists() for path in leftovers)
    removed = [r.message for r in caplog.records if r.message.startswith("Removed the leftovers of interrupted writes")]
    assert len(removed) == 1 and all(str(path) in removed[0] for path in leftovers)
    assert (tmp_path / "model" / "model.keras").is_file()


def test_checkpoints_of_another_model_config_are_a_one_line_error(tmp_path):
    train(tmp_path, 2)
    before = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    with pytest.raises(ValueError) as error:
        train(tmp_path, 4, hidden_size=64)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'checkpoints'} holds checkpoints of another model (hidden_size 32 there, "
                              "64 now): ")
    assert re.search(r"--config\b.*--out\b", message)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == before
    assert np.isfinite(train(tmp_path, 4).metrics["loss"])  # the right config still resumes
