"""`bert-tf quickstart` on a reduced setting: every stage runs and passes."""

import shutil
import sys
from pathlib import Path

import pytest

from bert_tf_cli import main
from bert_tf_cli.quickstart import STAGES


def assert_every_stage_passed(output):
    summary = output[output.index("Summary"):]
    for name, _ in STAGES:
        row = next(line for line in summary.splitlines() if line.startswith(name))
        assert "| passed |" in row, row


@pytest.mark.slow
def test_quickstart_runs_every_stage_and_again_in_the_same_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)  # `bert-tf` not on PATH, as after `make demo`
    assert main(["quickstart", "--fast", "--out", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    assert_every_stage_passed(output)
    assert "gRPC" in output
    # The stage headings count the stages README lists; the next steps say where `bert-tf` is.
    assert [line for line in output.splitlines() if line.startswith("== ")] == [
        f"== Stage {number}/{len(STAGES)}: {name} ==" for number, (name, _) in enumerate(STAGES, start=1)] + [
        "== Summary =="]
    where = Path(sys.executable).parent
    assert f"`bert-tf` is in {where}: run `source {where / 'activate'}` first, or {where / 'bert-tf'} ..." in output
    for artefact in ("vocab.txt", "pretrain/model/model.keras", "classifier/model.keras", "serving/demo/1/saved_model.pb",
                     "classifier.tflite"):
        assert (tmp_path / artefact).is_file(), artefact
    # A second run starts over instead of resuming the first one's finished pre-training.
    assert main(["quickstart", "--fast", "--out", str(tmp_path)]) == 0
    assert_every_stage_passed(capsys.readouterr().out)
    assert (tmp_path / "serving/demo/2/saved_model.pb").is_file()


def test_quickstart_needs_train_and_dev_together(tmp_path, capsys):
    assert main(["quickstart", "--out", str(tmp_path), "--train", "train.tsv"]) == 2
    assert "--train and --dev together" in capsys.readouterr().err


def test_its_own_settings_raise_no_warning_and_an_early_stop_says_why(tmp_path, caplog):
    """The demo's vocabulary size asked for more tokens than the demo corpus holds ("learned 512 tokens, fewer than
    the 700 asked for ... lower it"), and pre-training stopped at its time limit (869 of 1,000 steps) unsaid."""
    from bert_tf_cli.quickstart import QuickstartConfig, learn_vocab, pretrain

    state = {}
    learn_vocab(QuickstartConfig(), tmp_path, state)
    assert [record.getMessage() for record in caplog.records if record.levelname == "WARNING"] == []
    said = pretrain(QuickstartConfig.fast(pretrain_seconds=1e-6), tmp_path, state)
    assert said.startswith("1 of 30 steps (the quickstart gives pre-training 0 s; this machine is slower)"), said
