"""`make test`'s progress: a line as each test file finishes, with its counts and time.

`pytest -q` prints a dot per test and, with pytest-xdist, files finish out of order, so a long run
says nothing of where it is. This plugin (registered by conftest.py, quiet runs only) writes
"tests/test_cli_predict.py: 16 passed in 73 s (12 of 98 files)" as the last test of a file reports,
under pytest-xdist (the controller learns each file's tests from the workers' collections) and without it.
"""

from __future__ import annotations

import collections
import time

import pytest


class FileProgress:
    """Counts each file's test reports; writes its line when all its tests have reported."""

    def __init__(self, terminal):
        self.terminal = terminal
        self.totals: collections.Counter = collections.Counter()  # file -> tests in it
        self.finished: collections.Counter = collections.Counter()  # file -> tests done
        self.outcomes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.started: dict[str, float] = {}
        self.files_done = 0

    def count(self, node_ids) -> None:
        if not self.totals:  # every worker collects the same tests: the first one's say how many each file has
            self.totals.update(node_id.split("::")[0] for node_id in node_ids)

    def pytest_collection_finish(self, session) -> None:
        self.count(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: without it, never called
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.count(ids)

    def pytest_runtest_logreport(self, report) -> None:
        file = report.nodeid.split("::")[0]
        self.started.setdefault(file, time.monotonic())
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[file][report.outcome] += 1
        if report.when != "teardown" or file not in self.totals:
            return
        self.finished[file] += 1
        if self.finished[file] == self.totals[file]:
            self.files_done += 1
            counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(self.outcomes[file].items()))
            self.terminal.write(f"\n{file}: {counts} in {time.monotonic() - self.started[file]:.0f} s "
                                f"({self.files_done} of {len(self.totals)} files)\n")  # below the line of dots
