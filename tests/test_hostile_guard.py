"""The hostile tests' guard can fail: a hostile test passes only without a traceback in its logs, its output, or the
output of a command it ran, and with no process it started left; a test not marked hostile is not held to it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
import pytest
import tests.hostile
from tests.hostile import commands_without_traceback, no_process_outlives_the_test, pytest_runtest_makereport

tests.hostile.GONE_WITHIN = 1.0

def pytest_configure(config):
    config.addinivalue_line("markers", "hostile: guarded")
"""

TESTS = """
import logging, subprocess, sys
import click
import pytest
from click.testing import CliRunner

def _raised():
    try:
        raise RuntimeError("knocked over")
    except RuntimeError:
        return sys.exc_info()

@click.command()
def crashes():
    raise RuntimeError("knocked over")

@click.command()
def prints():
    click.echo("Traceback (most recent call last):\\n  RuntimeError")

@pytest.mark.hostile
def test_logged():
    logging.getLogger("peer").error("failed", exc_info=_raised())

@pytest.mark.hostile
def test_printed():
    print("Traceback (most recent call last):", file=sys.stderr)

@pytest.mark.hostile
def test_command_crashed():
    CliRunner().invoke(crashes)

@pytest.mark.hostile
def test_command_printed():
    CliRunner().invoke(prints)

@pytest.mark.hostile
def test_clean():
    logging.getLogger("peer").warning("the peer misbehaved, handled")

@pytest.mark.hostile
def test_left_a_process():
    subprocess.Popen(["sleep", "300"], start_new_session=True)

def test_unmarked():
    logging.getLogger("peer").error("failed", exc_info=_raised())
"""


def test_a_traceback_anywhere_fails_a_hostile_test_and_only_a_hostile_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # `tests.hostile`, as the suite imports it
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_guarded=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    # a log or output traceback fails the test at teardown (an error, after its call passed)
    assert result.parseoutcomes() == {"passed": 5, "failed": 2, "errors": 3}, result.stdout.str()
    for name in ("test_logged", "test_printed"):
        result.stdout.fnmatch_lines([f"ERROR test_guarded.py::{name} - *a hostile test showed a traceback in*"])
    result.stdout.fnmatch_lines(["ERROR test_guarded.py::test_left_a_process - AssertionError: processes outliv*"])
    result.stdout.fnmatch_lines(["*processes outlived the test: {*: 'sleep 300'}*"])
    for name in ("test_command_crashed", "test_command_printed"):
        result.stdout.fnmatch_lines([f"FAILED test_guarded.py::{name} - *the command*"])
