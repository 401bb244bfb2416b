"""The guard of the hostile tests (`@pytest.mark.hostile`): a test that provokes a peer into hostile behaviour fails
when a traceback shows anywhere, in a log record, in its captured output, or in the output of an `rrkit` command
it ran through click's CliRunner (where an exception the command did not handle is one too), and when a process it
started (a client command, whatever that started) outlives it."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

TRACEBACK = "Traceback (most recent call last)"
TREE_MARK = "RRKIT_HOSTILE_TEST"
"""Set to a fresh value in a hostile test's environment: every process it starts, and theirs, inherit it."""
GONE_WITHIN = 30.0
"""Seconds a killed process may take to be gone (the kernel ends a process group asynchronously; a busy machine)."""


def tracebacks_in(report: pytest.TestReport) -> list[str]:
    """The names of the report's captured sections (output, logs) that hold a traceback."""
    return [name for name, text in report.sections if TRACEBACK in text]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    if report.when == "teardown" and report.passed and item.get_closest_marker("hostile") is not None:
        found = tracebacks_in(report)
        if found:
            report.outcome = "failed"
            report.longrepr = f"a hostile test showed a traceback in: {', '.join(found)}"
    return report


@contextlib.contextmanager
def taking_at_most(seconds: float, what: str) -> Iterator[None]:
    """Fails when the block took longer than `seconds`: ten times what an idle machine needs, so that a busy one
    passes, while a peer that holds the judge (a wait without a bound) still fails it."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    assert took < seconds, f"{what} took {took:.1f} s, more than {seconds:g} s"


@pytest.fixture(autouse=True)
def commands_without_traceback(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In a hostile test, every `rrkit` command run through CliRunner must end by itself (a SystemExit) and print
    no traceback."""
    if request.node.get_closest_marker("hostile") is None:
        yield
        return
    invoke = CliRunner.invoke

    def checked(runner: CliRunner, *args: Any, **kwargs: Any) -> Result:
        result = invoke(runner, *args, **kwargs)
        unhandled = result.exception is not None and not isinstance(result.exception, SystemExit)
        assert not unhandled, f"the command raised {result.exception!r}, unhandled: {result.exc_info}"
        assert TRACEBACK not in result.output, f"the command printed a traceback:\n{result.output}"
        return result

    monkeypatch.setattr(CliRunner, "invoke", checked)
    yield


@pytest.fixture(autouse=True)
def no_process_outlives_the_test(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In a hostile test, each process the test started (found by a mark in its environment, inherited by whatever
    it starts, even in a session of its own) is gone when the test ends; one left is killed, and fails the test."""
    if request.node.get_closest_marker("hostile") is None or not Path("/proc/self/environ").exists():
        yield
        return
    mark = f"{TREE_MARK}={uuid.uuid4().hex}".encode()
    monkeypatch.setenv(TREE_MARK, mark.decode().split("=", 1)[1])
    yield
    deadline = time.monotonic() + GONE_WITHIN
    while (left := marked_processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes outlived the test: {left}"


def marked_processes(mark: bytes) -> dict[int, str]:
    """The live processes (not zombies) whose environment holds `mark`, with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            if (entry / "stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
                continue
            found[int(entry.name)] = (
                (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            )
        except OSError:  # gone meanwhile, or not ours
            continue
    return found
