"""An argument that `bert-tf` does not know is the error of the command it was given to (bert_tf_cli/command_parser.py):
`bert-tf serve: error: ...`, as every other error of that command, not `bert-tf: error: ...`."""

import pytest

from bert_tf_cli import main


@pytest.mark.parametrize("argv", [["serve", "--bad-arg"], ["quickstart", "--bad-arg"],
                                  ["search", "--model", "index", "a query", "--bad-arg"]])
def test_an_unknown_argument_is_the_commands_error(capsys, argv):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"bert-tf {argv[0]}: error: unrecognized arguments: --bad-arg\n"


def test_an_unknown_argument_without_a_command_is_bert_tfs(capsys):
    assert main(["--bad-arg"]) == 2
    assert capsys.readouterr().err == "bert-tf: error: unrecognized arguments: --bad-arg\n"
