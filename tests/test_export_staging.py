"""A version is written into `.export-<version>-<pid>` and renamed at the end; the folders a killed writer left behind
are removed at the next write, those of running writers kept."""

import os
import subprocess
import sys

from serving.export.saved_model import write_version


def test_folders_of_stopped_writers_are_removed(tmp_path, caplog):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(finished.stdout)
    stale, alive = tmp_path / f".export-1-{gone}", tmp_path / f".export-2-{os.getppid()}"
    for folder in (stale, alive):
        (folder / "variables").mkdir(parents=True)
    write_version(tmp_path / "3", lambda staging: (staging / "variables").mkdir(parents=True))
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["3", alive.name])
    assert f"Removing {stale}, left by an export that was stopped (process {gone} is gone)" in caplog.text
