"""A program run as a judged peer: in a process group of its own (every process it starts is stopped with it),
stdin closed, and only the tail of what it prints kept, however much it prints."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

KEPT_BYTES = 1 << 20
"""Bytes of each output stream kept (the last ones): enough for any error it ends with, bounded for one that
prints gigabytes."""
DRAIN_AFTER_EXIT = 5.0
"""Seconds the output is still read after the group is stopped (what the pipes hold)."""


@dataclass(frozen=True)
class ProcessEnd:
    """How a program ended: its exit status (None: it could not start, or was stopped at the timeout), and the
    tail of its output."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    missing: bool = False  # no such program

    def tail(self, lines: int = 3) -> str:
        """The last lines it printed (stderr, else stdout), joined for one line of a report."""
        return " / ".join((self.stderr or self.stdout).strip().splitlines()[-lines:])


def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float,
    kept: int = KEPT_BYTES,
) -> ProcessEnd:
    """Run `argv` until it exits or `timeout` seconds pass; then stop its whole process group (a shell's children,
    a launcher's native binary, a child left in the background), so nothing it started outlives the run."""
    try:
        process = subprocess.Popen(
            list(argv),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except (FileNotFoundError, NotADirectoryError, PermissionError) as error:
        return ProcessEnd(None, "", f"cannot start {argv[0]!r}: {error.strerror or error}", missing=True)
    outputs = [_Tail(kept), _Tail(kept)]
    readers = [
        threading.Thread(target=tail.read, args=(stream,), daemon=True, name="rrkit-process-output")
        for tail, stream in zip(outputs, (process.stdout, process.stderr), strict=True)
    ]
    for reader in readers:
        reader.start()
    timed_out = True
    try:
        timed_out = not exited_unreaped(process, timeout)
    finally:
        stop_group(process)
        process.wait()
        for reader in readers:
            reader.join(DRAIN_AFTER_EXIT)
    stdout, stderr = (tail.text() for tail in outputs)
    return ProcessEnd(None if timed_out else process.returncode, stdout, stderr, timed_out)


class _Tail:
    """The last `kept` bytes read from a stream."""

    def __init__(self, kept: int) -> None:
        self.kept, self.chunks, self.size = kept, deque[bytes](), 0

    def read(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        with contextlib.suppress(OSError, ValueError), stream:
            while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
                self.chunks.append(chunk)
                self.size += len(chunk)
                while self.size - len(self.chunks[0]) >= self.kept:
                    self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        return b"".join(self.chunks)[-self.kept :].decode("utf-8", errors="replace")


def exited_unreaped(process: subprocess.Popen[Any], timeout: float | None) -> bool:
    """Whether `process` exited within `timeout` seconds, waited for without reaping it: until it is reaped its pid,
    its group's id, is nobody else's, so `stop_group` then reaches its group and never a process that was given the
    id after it (ids come round again on a busy machine: pid_max is 32768 on many)."""
    exited = threading.Event()

    def watch() -> None:
        with contextlib.suppress(OSError):  # ChildProcessError: reaped already
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        exited.set()

    threading.Thread(target=watch, daemon=True, name="rrkit-process-exit").start()
    return exited.wait(timeout)


def stop_group(process: subprocess.Popen[Any]) -> None:
    """Stop every process of `process`'s group (it was started in a session of its own). Call it before the
    process is reaped (`exited_unreaped`, not `wait`)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
