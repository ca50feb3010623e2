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



def _module_tree(module: str) -> ast.Module:
    return ast.parse((ROOT / Path(*module.split(".")).with_suffix(".py")).read_text(encoding="utf-8"))


def _imported_modules(tree: ast.Module) -> dict[str, str]:
    """{name: the module it is imported from} of a module's `from ... import` statements."""
    return {alias.asname or alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def _class_attribute(cls: ast.ClassDef, name: str):
    """The value (an AST node) that the class body assigns to `name`, or None."""
    return next((statement.value for statement in cls.body if isinstance(statement, ast.Assign)
                 and [getattr(target, "id", None) for target in statement.targets] == [name]), None)


def _built_in_task_classes(registry: str) -> list[tuple[ast.ClassDef, str]]:
    """(class, its module's name) of each task class in the registry's `BUILT_IN_TASKS` (a path under the packages'
    folder), in order, from the registry's `from ... import` statements."""
    tree = ast.parse((ROOT / registry).read_text(encoding="utf-8"))
    modules = _imported_modules(tree)
    [listed] = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and [target.id for target in node.targets if isinstance(target, ast.Name)] == ["BUILT_IN_TASKS"]]
    classes = []
    for element in listed.elts:
        module = modules[element.id]
        [task] = [node for node in _module_tree(module).body
                  if isinstance(node, ast.ClassDef) and node.name == element.id]
        classes.append((task, module))
    return classes


def built_in_finetune_tasks(registry: str = "bert_tf/tasks/registry.py") -> tuple[str, ...]:
    """The names of the fine-tuning tasks in the registry's `BUILT_IN_TASKS`, in order, read from the sources: each
    class's literal `name`; a task class is a fine-tuning one when it derives from `FinetuneTask` there.

    Example:
        >>> built_in_finetune_tasks()[:3]
        ('classify', 'ner', 'squad')
    """
    return tuple(_class_attribute(task, "name").value for task, _ in _built_in_task_classes(registry)
                 if any(isinstance(base, ast.Name) and base.id == "FinetuneTask" for base in task.bases))


def built_in_folder_formats(registry: str = "bert_tf/tasks/registry.py") -> tuple[str, ...]:
    """The names of the built-in tasks' folder formats (`Task.folder_format`: `FolderFormat("NAME", ...)`, assigned in
    the module the task imports it from, or to the class in the task's own module), in the registry's order, read
    from the sources.

    Example:
        >>> built_in_folder_formats()[0]
        'sentence-transformers'
    """
    names = []
    for task, module in _built_in_task_classes(registry):
        value = _class_attribute(task, "folder_format") or _set_after_the_class(task, module, "folder_format")
        if isinstance(value, ast.Call):  # FolderFormat("NAME", ...) made in the task's module
            names.append(value.args[0].value)
        elif isinstance(value, ast.Name):
            source = _imported_modules(_module_tree(module))[value.id]
            [made] = [node.value for node in _module_tree(source).body if isinstance(node, ast.Assign)
                      and [getattr(target, "id", None) for target in node.targets] == [value.id]]
            names.append(made.args[0].value)
    return tuple(names)


def _set_after_the_class(task: ast.ClassDef, module, attribute: str):
    """The value a module-level `Task.attribute = value` gives the class `task` in `module`'s source, else None."""
    for node in _module_tree(module).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Attribute) and target.attr == attribute
                and isinstance(target.value, ast.Name) and target.value.id == task.name for target in node.targets):
            return node.value
    return None
