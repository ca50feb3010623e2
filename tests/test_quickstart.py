"""`bert-tf quickstart` on a reduced setting: every stage runs and passes."""

from bert_tf.cli import main
from bert_tf.cli.quickstart import STAGES


def test_quickstart_runs_every_stage(tmp_path, capsys):
    assert main(["quickstart", "--fast", "--out", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    summary = output[output.index("Summary"):]
    for name, _ in STAGES:
        row = next(line for line in summary.splitlines() if line.startswith(name))
        assert "| passed |" in row, row
    assert "gRPC" in output
    for artefact in ("vocab.txt", "pretrain/model/model.keras", "classifier/model.keras", "serving/demo/1/saved_model.pb",
                     "classifier.tflite"):
        assert (tmp_path / artefact).is_file(), artefact


def test_quickstart_needs_train_and_dev_together(tmp_path, capsys):
    assert main(["quickstart", "--out", str(tmp_path), "--train", "train.tsv"]) == 2
    assert "--train and --dev together" in capsys.readouterr().err
