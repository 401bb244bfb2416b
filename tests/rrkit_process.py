"""`rrkit serve` / `rrkit record` as a real process on a free port, for tests of the command line."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping

STARTED: list[subprocess.Popen[str]] = []
"""Every process `start` made in this test; the `no_process_left` fixture (tests/conftest.py) kills those still
running when the test ends, so a test that fails half-way leaves no server behind."""


def kill_left() -> None:
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.communicate()


def start(
    *args: str, command: str = "serve", env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The process and the HTTP base URL it printed once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", command, "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    STARTED.append(process)
    assert process.stdout is not None
    for line in process.stdout:
        if match := re.search(r"HTTP base URL:\s+(\S+)", line):
            return process, match.group(1)
    process.kill()
    raise AssertionError(f"no URL printed; stderr: {process.stderr.read() if process.stderr else ''}")
