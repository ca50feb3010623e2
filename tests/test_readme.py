"""The README's CLI reference is the CLI's own help (regenerate with `python -m bert_tf_cli.reference --write README.md`),
and its inspection examples print what the README shows."""

import math
import re
import shlex
from pathlib import Path

import pytest

from bert_tf_cli.reference import END, START, with_reference

README = Path(__file__).resolve().parents[1] / "README.md"


def test_cli_reference_in_readme_is_current():
    text = README.read_text(encoding="utf-8")
    assert START in text and END in text
    assert with_reference(text) == text, "README CLI reference is stale: run `python -m bert_tf_cli.reference --write README.md`"


def looking_inside_blocks() -> list[tuple[str, str]]:
    """The README's "Looking inside" examples: (code, the output printed under it), for the Python example and
    each `$ bert-tf ...` command."""
    section = README.read_text(encoding="utf-8").split("## Looking inside")[1].split("\n## ")[0]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, flags=re.DOTALL)
    examples = []
    for (language, code), (_, output) in zip(blocks, blocks[1:]):
        if language == "python":
            examples.append((code, output))
    for _, block in blocks:
        if block.startswith("$ bert-tf"):
            lines = block.split("\n")
            command_lines = next(index for index, line in enumerate(lines) if not line.endswith("\\")) + 1
            examples.append(("\n".join(lines[:command_lines]), "\n".join(lines[command_lines:])))
    return examples


def test_looking_inside_shows_what_the_trained_checkpoint_prints(shared_data, capsys, monkeypatch):
    """Every example of "Looking inside" prints, today, the output the README shows under it."""
    from bert_tf_cli import main

    if not (shared_data / "pretrained" / "bert-mini-uncased-books").is_dir():
        pytest.skip("no trained checkpoint in the team data")
    monkeypatch.chdir(README.parent)
    examples = looking_inside_blocks()
    assert len(examples) == 3
    for code, expected in examples:
        code = code.replace("../shared/data", str(shared_data))
        if code.startswith("$ bert-tf"):
            assert main(shlex.split(code.replace("\\\n", " "))[2:]) == 0
        else:
            exec(code, {})
        printed = capsys.readouterr().out
        assert same_up_to_last_digit(printed, expected), f"{code}\nprinted:\n{printed}"


def same_up_to_last_digit(printed: str, expected: str) -> bool:
    """The same words and layout, numbers equal within one unit of their last printed digit (another CPU's
    rounding of the same model)."""
    def close(a: str, b: str) -> bool:
        if a == b:
            return True
        if not re.fullmatch(r"\d+\.\d+", a) or not re.fullmatch(r"\d+\.\d+", b):
            return False
        return abs(float(a) - float(b)) <= 1.01 * 10 ** -len(a.split(".")[1])

    printed, expected = re.split(r"(\s+)", printed), re.split(r"(\s+)", expected)
    return len(printed) == len(expected) and all(close(a, b) for a, b in zip(printed, expected))


def test_python_in_ten_lines_trains_on_raw_strings_and_predicts_probabilities(shared_data, tmp_path, monkeypatch,
                                                                              capsys):
    """The README's "Python in ten lines" runs as written (the team's trained checkpoint; outputs in a fresh folder)."""
    if not (shared_data / "pretrained" / "bert-mini-uncased-books").is_dir():
        pytest.skip("no trained checkpoint in the team data")
    section = README.read_text(encoding="utf-8").split("## Python in ten lines")[1].split("\n## ")[0]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[0]
    monkeypatch.chdir(tmp_path)
    exec(code.replace("../shared/data", str(shared_data)), {})
    probabilities = [float(value) for value in re.findall(r"[0-9.]+(?:e-?[0-9]+)?", capsys.readouterr().out)[-2:]]
    assert len(probabilities) == 2 and abs(sum(probabilities) - 1) < 1e-5
    assert (tmp_path / "sst2_model" / "model.keras").is_file()


def test_fine_tuning_under_a_strategy_scope_trains_with_fit(shared_data):
    """The README's Python example of fine-tuning under a distribution strategy runs as written and makes its two
    optimizer updates."""
    if not (shared_data / "pretrained" / "bert-mini-uncased-books").is_dir():
        pytest.skip("no trained checkpoint in the team data")
    section = README.read_text(encoding="utf-8").split("## Fine-tuning")[1].split("\n## ")[0]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    namespace = {}
    exec(code.replace("../shared/data", str(shared_data)), namespace)
    model = namespace["model"]
    assert model.distribute_strategy is namespace["strategy"] and int(model.optimizer.iterations.numpy()) == 2
    assert len(model.history.history["loss"]) == 1 and math.isfinite(model.history.history["loss"][0])


def test_the_gains_of_the_trained_checkpoint_are_the_quality_tables():
    """The sentence on what the checkpoint buys gives the differences of the table above it (it said "SQuAD_GAIN")."""
    text = README.read_text(encoding="utf-8")

    def gain(row: str) -> float:
        cells = next(line for line in text.splitlines() if line.startswith(f"| {row}")).split("|")
        return float(cells[2].split("±")[0]) - float(cells[4].split("±")[0])

    assert f"entities (+{gain('CoNLL-2003'):.1f} F1) and answers (+{gain('SQuAD v1.1'):.1f} F1)" in " ".join(text.split())
