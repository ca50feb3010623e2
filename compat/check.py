"""`run_check`: writes every export with the project's TensorFlow, reads each with every TensorFlow, and tabulates.

    $ make compat                  # python -m compat --venvs .compat-venvs
    $ python -m compat --versions 2.18 --out /tmp/compat

The project's TensorFlow (this Python's) writes the exports (`compat.exports`) and reads them first:
its answers are the reference. Then each older TensorFlow's Python (`compat.venvs`) reads them
(`compat/reader.py`), once with tensorflow-text's ops and once without. Under OUT
(`artifacts/compat` by default): the model directories, the exports, `answers/` (each reading's
`.npz` and `.json`), `results.json` (every `Reading`) and `table.md` (`compat.table`'s two
tables, also printed), and each failure, known (`compat.known_failures`) or not. Exit status 1 when an
export does not load or answers differently somewhere and that is not a known failure.

Example:
    >>> readings = run_check(Path("/tmp/compat"), [venv_python("2.18", DEFAULT_VENVS)])   # doctest: +SKIP
    >>> failures(readings)                                                                # doctest: +SKIP
    []
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from compat.comparison import compare
from compat.exports import KINDS, write_exports
from compat.known_failures import is_known
from compat.table import Outcome, Reading, failures, serving_table, version_table
from compat.venvs import VenvUnavailable, venv_python, versions_pinned

ROOT = Path(__file__).resolve().parents[1]
READER = ROOT / "compat" / "reader.py"
DEFAULT_VENVS = ROOT / ".compat-venvs"
DEFAULT_OUT = ROOT / "artifacts" / "compat"


def read_exports(python: Path, manifest: Path, out: Path, text_ops: bool) -> tuple[dict, dict[str, np.ndarray]]:
    """Runs the reader under `python` (isolated: no PYTHONPATH, so no bert_tf): its report and its answers."""
    command = [str(python), "-I", str(READER), str(manifest), str(out)] + ([] if text_ops else ["--without-text-ops"])
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if result.returncode:
        lines = result.stderr.strip().splitlines() or [f"exit status {result.returncode}"]
        raise RuntimeError(f"The reader failed under {python}: {lines[-1]}")
    with np.load(f"{out}.npz") as arrays:
        answers = dict(arrays)
    return json.loads(Path(f"{out}.json").read_text()), answers


def answers_of(kind: str, answers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One export's answers, {reader/signature/output: array}, from a reading of all."""
    prefix = f"{kind}/"
    return {key.removeprefix(prefix): value for key, value in answers.items() if key.startswith(prefix)}


def outcomes(manifest: dict, report: dict, answers: dict[str, np.ndarray],
             reference: dict[str, np.ndarray]) -> dict[str, Outcome]:
    """{kind: Outcome} of one reading: loaded or not, and its answers against the reference's."""
    result = {}
    for kind, export in manifest["exports"].items():
        entry = report["exports"][kind]
        if entry["loads"]:
            agreement = compare(answers_of(kind, reference), answers_of(kind, answers), export["precision"])
            result[kind] = Outcome(loads=True, agreement=agreement)
        else:
            result[kind] = Outcome(loads=False, error=entry["error"])
    return result


def run_check(out: Path, older_pythons: list[Path]) -> dict[str, dict[str, Reading]]:
    """Writes the exports under `out`, reads them with this Python's TensorFlow, then with each of
    `older_pythons`'; returns {kind: {TensorFlow version: Reading}}."""
    for folder in ("models", "exports", "answers"):
        shutil.rmtree(out / folder, ignore_errors=True)
    manifest = write_exports(out)
    manifest_file = out / "manifest.json"
    readings = {kind: {} for kind in manifest["exports"]}
    reference = None
    pythons = {"project": Path(sys.executable), **{python.parent.parent.name: python for python in older_pythons}}
    for venv, python in pythons.items():
        runs = {}
        for text_ops in (True, False):
            name = f"{venv}-{'with' if text_ops else 'without'}-text-ops"
            print(f"compat: reading the exports with {python} ({name})", file=sys.stderr, flush=True)
            runs[text_ops] = read_exports(python, manifest_file, out / "answers" / name, text_ops)
        report, answers = runs[True]
        if reference is None:
            unread = {kind: entry["error"] for kind, entry in report["exports"].items() if not entry["loads"]}
            if unread:
                raise RuntimeError(f"The project's TensorFlow cannot read its own exports: {unread}")
            reference = answers
        with_text, without_text = (outcomes(manifest, *runs[text_ops], reference) for text_ops in (True, False))
        for kind in readings:
            foreign_ops = tuple(runs[False][0]["exports"][kind]["foreign_ops"])
            readings[kind][report["tensorflow"]] = Reading(with_text[kind], without_text[kind], foreign_ops)
    return readings


def write_results(out: Path, readings: dict[str, dict[str, Reading]]) -> str:
    """Writes `results.json` and `table.md` under `out`; returns the tables (Markdown)."""
    labels = {kind: export.label for kind, export in KINDS.items()}
    tables = f"{version_table(labels, readings)}\n\n{serving_table(labels, readings)}\n"
    (out / "table.md").write_text(tables)
    as_json = {kind: {version: dataclasses.asdict(reading) for version, reading in by_version.items()}
               for kind, by_version in readings.items()}
    (out / "results.json").write_text(json.dumps(as_json, indent=1))
    return tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat", description=__doc__.splitlines()[0])
    parser.add_argument("--versions", nargs="+", default=versions_pinned(),
                        help="older TensorFlow versions to read the exports with (default: all with constraints: "
                             "%(default)s)")
    parser.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="where their virtualenvs are kept")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the exports, answers and tables go")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        pythons = [venv_python(version, args.venvs) for version in args.versions]
    except (VenvUnavailable, ValueError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    readings = run_check(args.out, pythons)
    print(write_results(args.out, readings))
    found = failures(readings)
    for kind, version, outcome in found:
        print(f"{'known' if is_known(kind, version, outcome) else 'UNEXPECTED'}: {kind} in TensorFlow {version}: "
              f"{outcome.describe()}")
    print(f"compat: {time.monotonic() - started:.0f} s; tables and answers in {args.out}", file=sys.stderr)
    return 0 if all(is_known(*failure) for failure in found) else 1
