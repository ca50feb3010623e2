"""benchmarks.isolated: calls built and run in a child process of their own."""

import os

import pytest

from benchmarks.isolated import IsolatedCalls


def pid_calls(path: str) -> tuple[dict, dict]:
    """Builder run in the child: one call appends the child's pid to `path`, one fails."""

    def append_pid():
        with open(path, "a", encoding="utf-8") as file:
            file.write(f"{os.getpid()}\n")

    def fail():
        raise ValueError("a broken call")

    return {"append": append_pid, "fail": fail}, {"pid": os.getpid()}


def broken_build() -> tuple[dict, dict]:
    raise OSError("no model here")


def test_calls_run_in_one_child_process_which_reports_its_info(tmp_path):
    log = tmp_path / "pids.txt"
    with IsolatedCalls(pid_calls, str(log)) as calls:
        calls.run("append")
        calls.run("append")
    pids = log.read_text(encoding="utf-8").split()
    assert pids == [str(calls.info["pid"])] * 2 and calls.info["pid"] != os.getpid()


def test_a_failing_call_or_builder_raises_here_with_the_childs_error(tmp_path):
    with IsolatedCalls(pid_calls, str(tmp_path / "pids.txt")) as calls:
        with pytest.raises(RuntimeError, match="ValueError: a broken call"):
            calls.run("fail")
    with pytest.raises(RuntimeError, match="OSError: no model here"):
        IsolatedCalls(broken_build)
