"""The code depends one way, checked on every import statement, also those inside functions:

- packages: `pipelines` and `serving` use `bert_tf`, never the reverse, and only `bert_tf_cli` (the command
  line) uses all of them;
- `bert_tf/checkpoints/` reads checkpoint formats into the encoder (`BertModel`): it reaches no head, tokenizer,
  vocabulary, preprocessor or task; bert-tf's own model directory, which builds those, is read and written
  by `bert_tf/model_directory.py`, which uses `bert_tf/checkpoints/` (never the reverse);
- `serving/`'s three subpackages: the clients (`serving/client/`) reach nothing of the server or of the export
  writers, the server (`serving/server/`) nothing of the export writers or the clients, the export
  (`serving/export/`) nothing of the server or the clients; what they share (names, wire formats, the TFLite
  runner) is in `serving/`'s own modules, which reach none of the three;
- no import circle: no module of `bert_tf`, `pipelines`, `serving` or `bert_tf_cli` reaches itself;
- each task is one folder, `bert_tf/tasks/<task>/`, looked up through `bert_tf.tasks.registry`: no other module
  imports a task folder (but `bert_tf/__init__.py`, which names the package's public classes), and no task folder
  imports another.

A module "reaches" what it imports, and what those modules import, and so on (imports inside functions count:
they run whenever the function does). `from package import name` imports `package.name` when that is a module
of its own, else the package's `__init__`. The package a module lives in, whose `__init__` Python runs first,
is not counted as imported: `bert_tf/__init__.py` imports the whole public API, so that would make every
module of bert_tf reach every other; `import bert_tf` or `from bert_tf import save_pretrained` written in a
module does count.
"""

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
GRAPH_PACKAGES = ("bert_tf", "pipelines", "serving", "bert_tf_cli")
SERVING_SUBPACKAGES = ("serving.export", "serving.server", "serving.client")
# (the modules a rule is about: a module or package name, or a predicate on module names; what they never reach).
REACH_RULES = {
    "checkpoints read formats into the encoder, no head or text": (
        "bert_tf.checkpoints",
        ("bert_tf.tasks", "bert_tf.pretrainer", "bert_tf.tokenizer", "bert_tf.vocabulary", "bert_tf.preprocessor",
         "bert_tf.model_directory"),
    ),
    "clients need no server and no export writer": ("serving.client", ("serving.server", "serving.export")),
    "the server serves what is written, without the writers": ("serving.server", ("serving.export", "serving.client")),
    "the export writes without the server": ("serving.export", ("serving.server", "serving.client")),
    "what the serving subpackages share reaches none of them": (
        lambda name: within(name, ["serving"]) and not within(name, SERVING_SUBPACKAGES), SERVING_SUBPACKAGES,
    ),
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
    source.write_text("def run():\n    from serving.export.saved_model import export_saved_model\n    import pipelines.corpus\n")
    assert imported_packages(source) == {("serving", 2), ("pipelines", 3)}


def module_files(root: Path, packages=GRAPH_PACKAGES) -> dict[str, Path]:
    """{dotted module name: its file} of the packages (a package's name for its `__init__.py`)."""
    files = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def imported_modules(path: Path, modules) -> dict[str, int]:
    """{module of `modules`: first line} that the file imports (see the module docstring), at any depth."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                     for alias in node.names]
        else:
            continue
        for name in names:
            if name in modules:
                found[name] = min(found.get(name, node.lineno), node.lineno)
    return found


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """{module: {module it imports: line}} over the modules of `GRAPH_PACKAGES`."""
    files = module_files(root)
    return {name: imported_modules(path, files) for name, path in files.items()}


def chains(graph, start: str) -> dict[str, list[str]]:
    """{module reached from `start`: the shortest chain of imports to it, from `start`}."""
    found, frontier = {}, [[start]]
    while frontier:
        following = []
        for chain in frontier:
            for name in sorted(graph[chain[-1]]):
                if name not in found and name != start:
                    found[name] = chain + [name]
                    following.append(chain + [name])
        frontier = following
    return found


def within(name: str, prefixes) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def broken_rule(graph, about, never) -> list[str]:
    """Each module the rule is about that reaches one it must not, with the chain of imports (file:line each)."""
    modules = [name for name in graph if (about(name) if callable(about) else within(name, [about]))]
    assert modules, f"no module is {about}"
    wrong = []
    for name in modules:
        for reached, chain in sorted(chains(graph, name).items()):
            if within(reached, never):
                wrong.append(" -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(chain, chain[1:])) + f" -> {reached}")
                break
    return wrong


@pytest.mark.parametrize("rule", sorted(REACH_RULES))
def test_modules_reach_only_what_they_may(rule):
    about, never = REACH_RULES[rule]
    wrong = broken_rule(import_graph(), about, never)
    assert not wrong, f"{rule}:\n" + "\n".join(wrong)


def circles(graph) -> list[list[str]]:
    """The groups of modules that reach each other (strongly connected components of more than one module, or a
    module importing itself), each as one circle of imports."""
    found = []
    for name in sorted(graph):
        reached = chains(graph, name)
        if name in graph[name]:
            found.append([name, name])
        elif not any(name in group for group in found):
            back = [chain for other, chain in sorted(reached.items()) if name in graph[other]]
            if back:
                found.append(min(back, key=len) + [name])
    return found


def test_no_import_circle():
    assert not circles(import_graph()), "import circles:\n" + "\n".join(" -> ".join(c) for c in circles(import_graph()))


def test_the_graph_follows_submodules_and_sees_circles(tmp_path):
    (tmp_path / "bert_tf" / "tasks").mkdir(parents=True)
    for package in GRAPH_PACKAGES[1:]:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "bert_tf" / "__init__.py").write_text("from bert_tf import heads\n")
    (tmp_path / "bert_tf" / "tasks" / "__init__.py").write_text("")
    (tmp_path / "bert_tf" / "tasks" / "ner.py").write_text("")
    (tmp_path / "bert_tf" / "heads.py").write_text("from bert_tf.tasks import ner\nfrom bert_tf.reader import read\n")
    (tmp_path / "bert_tf" / "reader.py").write_text("def read():\n    from bert_tf.heads import Head\n")
    graph = import_graph(tmp_path)
    assert graph["bert_tf"] == {"bert_tf.heads": 1}  # its own submodule, not itself
    assert graph["bert_tf.heads"] == {"bert_tf.tasks.ner": 1, "bert_tf.reader": 2}
    assert circles(graph) == [["bert_tf.heads", "bert_tf.reader", "bert_tf.heads"]]
    assert broken_rule(graph, "bert_tf.reader", ["bert_tf.tasks"]) == [
        "bert_tf.reader (line 2) -> bert_tf.heads (line 1) -> bert_tf.tasks.ner"]


def task_folders(root: Path = ROOT) -> list[str]:
    """The task folders' package names (`bert_tf.tasks.classification`, ...)."""
    return sorted(f"bert_tf.tasks.{path.parent.name}" for path in (root / "bert_tf" / "tasks").glob("*/__init__.py"))


def task_folder_imports(graph, folders) -> list[str]:
    """Each import of a task folder from outside it, except by the registry and the package's public names."""
    allowed = {"bert_tf.tasks.registry", "bert_tf"}
    wrong = []
    for name, imported in sorted(graph.items()):
        home = next((folder for folder in folders if within(name, [folder])), None)
        for target, line in sorted(imported.items()):
            folder = next((folder for folder in folders if within(target, [folder])), None)
            if folder is not None and folder != home and (home is not None or name not in allowed):
                wrong.append(f"{name} (line {line}) imports {target}")
    return wrong


def test_only_the_registry_imports_the_task_folders():
    folders = task_folders()
    assert {"bert_tf.tasks.classification", "bert_tf.tasks.ner", "bert_tf.tasks.squad"} <= set(folders)
    wrong = task_folder_imports(import_graph(), folders)
    assert not wrong, "look tasks up in bert_tf.tasks.registry instead:\n" + "\n".join(wrong)


def test_the_task_folder_rule_sees_an_import_from_outside_and_between_tasks():
    graph = {"bert_tf.tasks.registry": {"bert_tf.tasks.ner.task": 3}, "serving.export": {"bert_tf.tasks.ner.ops": 7},
             "bert_tf.tasks.ner.task": {"bert_tf.tasks.ner.ops": 2, "bert_tf.tasks.squad.ops": 4},
             "bert_tf.tasks.ner.ops": {}, "bert_tf.tasks.squad.ops": {}}
    assert task_folder_imports(graph, ["bert_tf.tasks.ner", "bert_tf.tasks.squad"]) == [
        "bert_tf.tasks.ner.task (line 4) imports bert_tf.tasks.squad.ops",
        "serving.export (line 7) imports bert_tf.tasks.ner.ops"]
