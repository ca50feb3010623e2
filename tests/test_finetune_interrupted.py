"""A fine-tuning run that SIGINT or SIGTERM stops says what it saved and how to go on: the best epoch scored so far
(a run with a dev file), or nothing; and a finished run counts its epochs in words ("1 epoch")."""

import signal

import pytest
from tiny_finetune_files import write_bert_config, write_sentiment_tsv, write_vocab

import bert_tf
import bert_tf.training.finetune
from bert_tf_cli import main


@pytest.fixture
def command(tmp_path):
    write_vocab(tmp_path)
    train = write_sentiment_tsv(tmp_path / "train.tsv", 16, seed=0)
    return ["finetune", "--task", "classify", "--train", str(train), "--init", str(write_bert_config(tmp_path)),
            "--vocab", str(tmp_path / "vocab.txt"), "--seq-length", "16", "--batch-size", "4", "--epochs", "3"]


def interrupted_after(monkeypatch, cls, method: str, signum: signal.Signals):
    """`cls.method` (a Keras callback's) sends `signum` to this process the first time it has run."""
    original = getattr(cls, method)
    sent = []

    def then_signal(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if not sent:
            sent.append(signum)
            signal.raise_signal(signum)
    monkeypatch.setattr(cls, method, then_signal)


def test_a_stopped_run_with_a_dev_file_saves_the_best_epoch_scored(command, tmp_path, monkeypatch, capsys):
    interrupted_after(monkeypatch, bert_tf.training.finetune.DevScores, "on_epoch_end", signal.SIGINT)
    out = tmp_path / "model"
    assert main([*command, "--dev", command[4], "--out", str(out)]) == 128 + signal.SIGINT
    printed = capsys.readouterr().out
    assert "SIGINT stopped training in epoch 2 after step 1." in printed, printed
    best_epoch = bert_tf.load_model_directory(out).metadata["training"]["best_epoch"]
    assert (f"Saved the best epoch scored so far (epoch {best_epoch}) to {out}. To go on, fine-tune it further "
            f"(--init {out} --out NEW)") in printed
    assert "Trained 2 epochs on 16 examples" in printed  # the second cut short


def test_a_stopped_run_without_a_dev_file_saves_nothing_and_says_so(command, tmp_path, monkeypatch, capsys):
    interrupted_after(monkeypatch, bert_tf.training.finetune.TextProgressCallback, "on_train_batch_end", signal.SIGTERM)
    out = tmp_path / "model"
    assert main([*command, "--out", str(out)]) == 128 + signal.SIGTERM
    printed = capsys.readouterr().out
    assert "SIGTERM stopped training in epoch 1 after step 1.\nNothing was saved" in printed, printed
    assert not out.exists()


def test_one_epoch_is_one_epoch_and_keras_lines_are_not_repeated(command, tmp_path, capsys):
    assert main([*command[:-1], "1", "--out", str(tmp_path / "model")]) == 0
    printed = capsys.readouterr().out
    assert "1 epoch of 4 batches" in printed and "Trained 1 epoch on 16 examples" in printed, printed
    assert [line.split(":")[0] for line in printed.splitlines() if line.startswith("epoch ")] == ["epoch 1/1"]
    assert "4/4 - " not in printed  # Keras' own line of the epoch, beside the project's
