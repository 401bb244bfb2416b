"""A judged client command runs in a process group of its own: whatever it starts is stopped with it (at its
timeout, or when it exits leaving a child behind), and only the tail of what it prints is kept in memory."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from rrkit.drive import Assignment, CommandClient, ServerURLs, run_process
from rrkit.drive import process as process_module
from rrkit.drive.process import KEPT_BYTES

pytestmark = pytest.mark.hostile

GONE_WITHIN = 20.0
"""Seconds a stopped process may take to be reaped (SIGKILL is immediate on an idle machine)."""


def _gone(pid_file: Path) -> bool:
    """Whether the process whose pid the file holds no longer runs (polled: the kernel reaps it asynchronously)."""
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _zombie(pid):  # killed, waiting for whoever adopted it to reap it
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    """Whether the process has ended and only its entry is left (or nothing at all)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_a_shell_command_s_child_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {pid_file}; wait"
    end = run_process(["sh", "-c", script], timeout=1.0)
    assert end.timed_out and end.returncode is None
    assert _gone(pid_file), "the shell's child outlived the timeout"


def test_a_command_that_exits_leaving_a_child_on_its_output_is_judged_by_its_exit_status(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {pid_file}; echo done; exit 4"
    started = time.monotonic()
    end = run_process(["sh", "-c", script], timeout=120.0)
    assert not end.timed_out and end.returncode == 4 and "done" in end.stdout
    assert time.monotonic() - started < 60.0  # not held until the timeout by the child on the pipe
    assert _gone(pid_file), "the child left in the background outlived its command"


def test_a_command_that_prints_100_mb_costs_the_referee_only_the_tail_it_keeps() -> None:
    program = (
        "import sys\nchunk = b'x' * 65536 + b'\\n'\n"
        "for _ in range(1600): sys.stdout.buffer.write(chunk)\nprint('the end')"
    )
    tracemalloc.start()
    try:
        end = run_process([sys.executable, "-c", program], timeout=120.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert end.returncode == 0 and end.stdout.rstrip().endswith("the end")
    assert len(end.stdout) <= KEPT_BYTES
    assert peak < 8 * KEPT_BYTES, f"peak {peak} bytes while reading 100 MB of output"


def test_a_program_that_cannot_start_is_told_apart(tmp_path: Path) -> None:
    end = run_process([str(tmp_path / "no-such-program")], timeout=5.0)
    assert end.missing and end.returncode is None and "no-such-program" in end.stderr


def test_a_client_command_run_by_a_judge_leaves_no_process_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    client = CommandClient(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; sleep 300"])
    assignment = Assignment(ServerURLs("http://127.0.0.1:9/v1", "ws://127.0.0.1:9/v1/responses"))
    end = asyncio.run(client.run(assignment, timeout=1.0))
    assert end.outcome == "timed out" and "1 s" in end.detail
    assert _gone(pid_file)


def test_the_group_is_stopped_while_its_leader_is_unreaped_so_its_id_cannot_be_anyone_else_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The group's id is its leader's pid: once the leader is reaped the id is free, and a process started after
    (a busy machine comes round to the same ids) would be killed in its place. So the leader is still a zombie
    when the group is stopped, whether it exited (here at once) or ran out of time."""
    seen: list[str] = []
    stop = process_module.stop_group

    def watched(process: subprocess.Popen[bytes]) -> None:
        seen.append(Path(f"/proc/{process.pid}/stat").read_text().rsplit(") ", 1)[1][0])
        stop(process)

    monkeypatch.setattr(process_module, "stop_group", watched)
    assert run_process(["sh", "-c", "exit 3"], timeout=30).returncode == 3
    assert run_process(["sleep", "30"], timeout=0.2).timed_out
    assert seen[0] == "Z" and seen[1] != "Z"  # exited and unreaped; still running at the timeout (then stopped)
