"""The literal defaults of a settings dataclass, read from its source file without importing it.

`--help` must answer without importing TensorFlow, which every settings class of the project
imports (`FinetuneConfig`, `PretrainingConfig`); their source still says what each default is,
so the help shows it from there rather than from a copy that could drift
(tests/test_cli_startup.py checks the help against the classes themselves).

Example:
    >>> dataclass_defaults("bert_tf/training/finetune_config.py", "FinetuneConfig")["epochs"]  # doctest: +SKIP
    3
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # where bert_tf_cli's sibling packages are


def module_constants(source: str) -> dict[str, object]:
    """{NAME: value} of the literal constants of the module `source` (a path under the packages' folder).

    Example:
        >>> module_constants("bert_tf/config.py")["PRESET_ALIASES"]["tiny"]
        'bert_L2_H128'
    """
    return _constants(ast.parse((ROOT / source).read_text(encoding="utf-8")))


def _constants(tree: ast.Module) -> dict[str, object]:
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id.isupper():
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return constants


def dataclass_defaults(source: str, class_name: str) -> dict[str, object]:
    """{field: default} of the class `class_name` in `source` (a path under the packages' folder), for the fields
    whose default is a literal (numbers, strings, booleans, None), and the module's literal constants (NAME = 1e-4)."""
    tree = ast.parse((ROOT / source).read_text(encoding="utf-8"))
    [cls] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    defaults = _constants(tree)
    for statement in cls.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            try:
                defaults[statement.target.id] = ast.literal_eval(statement.value)
            except ValueError:
                continue  # not a literal (another class's constant, a factory)
    return defaults
