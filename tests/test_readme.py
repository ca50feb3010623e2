"""The README's CLI reference is the CLI's own help (regenerate with `python -m bert_tf_cli.reference --write README.md`)."""

from pathlib import Path

from bert_tf_cli.reference import END, START, with_reference

README = Path(__file__).resolve().parents[1] / "README.md"


def test_cli_reference_in_readme_is_current():
    text = README.read_text(encoding="utf-8")
    assert START in text and END in text
    assert with_reference(text) == text, "README CLI reference is stale: run `python -m bert_tf_cli.reference --write README.md`"
