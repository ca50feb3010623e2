"""The quickstart's closing next-step commands are valid `bert-tf` commands on the paths it wrote."""

import shlex
from pathlib import Path

from bert_tf_cli import build_parser
from bert_tf_cli.quickstart import QuickstartConfig, next_steps


def test_next_steps_parse_and_name_the_classifier(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    classifier = Path("my run") / "classifier"  # a space: the paths are quoted
    classifier.mkdir(parents=True)
    (classifier / "model.keras").touch()  # the commands check that the folder holds a model
    lines = next_steps(QuickstartConfig(), classifier).splitlines()
    commands = [shlex.split(line, comments=True) for line in lines]
    assert [command[1] for command in commands] == ["predict", "export", "serve", "predict"]
    parser = build_parser()
    for command in commands:
        assert command[0] == "bert-tf"
        parser.parse_args(command[1:])
    predict, export, serve, _ = (parser.parse_args(command[1:]) for command in commands)
    assert predict.model == export.model == str(classifier) and predict.texts == [QuickstartConfig().examples[0]]
    assert Path(serve.model_base_path) == Path(export.out) / export.name == Path("my run") / "serving" / "demo"
