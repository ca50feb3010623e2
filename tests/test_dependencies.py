"""The packages depend one way: `pipelines` and `serving` use `bert_tf`, never the reverse, and only
`bert_tf_cli` (the command line) uses all of them. Checked on every import statement, also those
inside functions."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What each package must never import.
FORBIDDEN = {
    "bert_tf": {"pipelines", "serving", "bert_tf_cli", "benchmarks", "tests"},
    "pipelines": {"serving", "bert_tf_cli", "benchmarks"},
    "serving": {"pipelines", "bert_tf_cli", "benchmarks"},
    "bert_tf_cli": {"benchmarks"},
}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """(top-level package, line) of every absolute import in a Python file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_what_it_may(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"{package}/ has no Python files"
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for path in files for name, line in sorted(imported_packages(path)) if name in FORBIDDEN[package]]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "module.py"
    source.write_text("def run():\n    from serving.export import export_saved_model\n    import pipelines.corpus\n")
    assert imported_packages(source) == {("serving", 2), ("pipelines", 3)}
