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


def built_in_finetune_tasks(registry: str = "bert_tf/tasks/registry.py") -> tuple[str, ...]:
    """The names of the fine-tuning tasks in the registry's `BUILT_IN_TASKS` (a path under the packages' folder), in
    order, read from the sources: each class's module (the registry's `from ... import`) and its literal `name`; a
    task class is a fine-tuning one when it derives from `FinetuneTask` there.

    Example:
        >>> built_in_finetune_tasks()[:3]
        ('classify', 'ner', 'squad')
    """
    tree = ast.parse((ROOT / registry).read_text(encoding="utf-8"))
    modules = {alias.asname or alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
               for alias in node.names}
    [listed] = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and [target.id for target in node.targets if isinstance(target, ast.Name)] == ["BUILT_IN_TASKS"]]
    names = []
    for element in listed.elts:
        source = Path(*modules[element.id].split(".")).with_suffix(".py")
        [task] = [node for node in ast.parse((ROOT / source).read_text(encoding="utf-8")).body
                  if isinstance(node, ast.ClassDef) and node.name == element.id]
        if any(isinstance(base, ast.Name) and base.id == "FinetuneTask" for base in task.bases):
            names.extend(statement.value.value for statement in task.body if isinstance(statement, ast.Assign)
                         and [getattr(target, "id", None) for target in statement.targets] == ["name"])
    return tuple(names)
