"""`venv_python`: the Python of a virtualenv holding an older TensorFlow and its tensorflow-text, made on first use.

TensorFlow 2.X's virtualenv is `VENVS/tf-2.X` (the Makefile's COMPAT_VENVS, `.compat-venvs` by
default, ignored by git), installed from `compat/constraints/tf-2.X.txt`, which pins tensorflow,
the tensorflow-text of the same release and everything they pull in. One installed from the same
constraints is reused as it is (about 2 GB each; a first install downloads about 600 MB and takes
about a minute); one from other constraints is made again.

Example:
    >>> venv_python("2.19", Path(".compat-venvs"))   # doctest: +SKIP
    PosixPath('.compat-venvs/tf-2.19/bin/python')
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parent / "constraints"
INSTALLED_FROM = "installed-from-constraints.txt"  # in the virtualenv: a copy of the constraints it was made from


class VenvUnavailable(RuntimeError):
    """A virtualenv that could not be made (no network, no wheel for this Python): the reason, in one line."""


def versions_pinned() -> list[str]:
    """The TensorFlow versions that have constraints, oldest first."""
    names = [path.stem.removeprefix("tf-") for path in CONSTRAINTS.glob("tf-*.txt")]
    return sorted(names, key=lambda version: tuple(int(part) for part in version.split(".")))


def venv_python(version: str, venvs: Path) -> Path:
    """The Python of `venvs/tf-VERSION`, with tensorflow and tensorflow-text as `constraints/tf-VERSION.txt` pins
    them; made (or made again, when the constraints changed) here. Raises VenvUnavailable when pip fails."""
    constraints = CONSTRAINTS / f"tf-{version}.txt"
    if not constraints.is_file():
        raise ValueError(f"No constraints for TensorFlow {version}: the check pins {', '.join(versions_pinned())}.")
    folder = Path(venvs) / f"tf-{version}"
    python = folder / "bin" / "python"
    stamp = folder / INSTALLED_FROM
    if python.exists() and stamp.is_file() and stamp.read_text() == constraints.read_text():
        return python
    shutil.rmtree(folder, ignore_errors=True)
    steps = ([sys.executable, "-m", "venv", str(folder)],
             [str(python), "-m", "pip", "install", "--quiet", "-c", str(constraints), "tensorflow", "tensorflow-text"])
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode:
            lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("ERROR")]
            reason = (errors or lines or [f"{' '.join(step[:3])} exited {result.returncode}"])[-1]
            raise VenvUnavailable(f"Cannot make the TensorFlow {version} virtualenv {folder}: {reason}")
    shutil.copyfile(constraints, stamp)
    return python
