"""Every `rrkit` command's start-up: from launch to its first line of output, as a user at a terminal sees it
(stdout and stderr on a pseudo-terminal; a progress bar's first frame counts as a line), each command in a fresh
process with a warm bytecode cache, beside `python -c "import click"` printing one line. The wall time and the CPU
time the process had used when its line came (/proc; the steadier figure on a busy machine). Issue 47's targets:
`rrkit --help` within 3x of click alone, every command within 0.25 s.

Run: python -m benchmarks.bench_commands [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import functools
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_launch import cached_env
from benchmarks.common import ROOT, Profile, Row, at_most, interleaved, median, process_cpu, run_main

BENCH = "commands"
HELP_LIMIT = 3.0  # x `import click`
START_LIMIT = 250.0  # ms, every command
CLICK = "import click"
WAIT = 60.0  # seconds a command may take to say anything before the round fails
VISIBLE = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x20]")  # terminal controls and blanks: not output yet
CASSETTE = "cassettes/text.http.json"
CLOSED = "http://127.0.0.1:9/v1"  # nothing listens on port 9: a server that cannot be reached


def commands(folder: Path) -> dict[str, list[str]]:
    """Each command's arguments (after `rrkit`), as a user would first run it; the files it writes in `folder`."""
    return {
        "--help": ["--help"],
        "--version": ["--version"],
        "fixtures": ["fixtures"],
        "schema script": ["schema", "script"],
        "show": ["show", CASSETTE],
        "validate": ["validate", CASSETTE],
        "diff": ["diff", CASSETTE, CASSETTE],
        "recover": ["recover", str(folder / "none.json")],
        "conform --list": ["conform", "--list"],
        "conform --server --list": ["conform", "--server", CLOSED, "--list"],
        "conform --server": ["conform", "--server", CLOSED],
        "conform -- CLIENT": ["conform", "--", "true"],
        "replay -- CLIENT": ["replay", CASSETTE, "--", "true"],
        "demo": ["demo"],
        "serve": ["serve", "--port", "0"],
        "record": ["record", "--upstream", CLOSED, "--cassette", str(folder / "rec.json"), "--port", "0"],
        "compare-codex": ["compare-codex"],
    }


def rrkit() -> list[str]:
    script = Path(sys.executable).with_name("rrkit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rrkit"]


def first_line(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) from launching `command` on a pseudo-terminal to its first visible line (a newline or a
    carriage return after some printed text); the process is killed then."""
    leader, follower = pty.openpty()
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, cwd=ROOT, env=env, start_new_session=True
    )
    os.close(follower)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], WAIT)
            chunk = os.read(leader, 65536) if ready else b""
            if not chunk:
                raise RuntimeError(f"{command}: no line of output: {seen[-500:]!r}")
            seen += chunk
            lines = re.split(rb"[\r\n]", seen)[:-1]
            if any(VISIBLE.sub(b"", line) for line in lines):
                return (time.perf_counter() - start) * 1000, process_cpu(process.pid) * 1000
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # and whatever it started (a server, a client)
        process.wait()
        os.close(leader)


def rows(profile: Profile) -> list[Row]:
    rounds = profile.rounds if profile.quick else profile.rounds + 2
    with tempfile.TemporaryDirectory(prefix="rrkit-commands-") as tmp:
        folder = Path(tmp)
        env = cached_env(folder / "pyc")
        env["COLUMNS"] = "120"
        chosen = commands(folder)
        if shutil.which("codex") is None and not (ROOT / ".ci" / "node").exists():
            del chosen["compare-codex"]  # it fails at once without the Codex CLI: no start-up to measure
        runs: dict[str, Callable[[], tuple[float, float]]]
        runs = {name: functools.partial(first_line, [*rrkit(), *args], env) for name, args in chosen.items()}
        runs[CLICK] = functools.partial(first_line, [sys.executable, "-c", "import click; print('ok')"], env)
        got = interleaved(runs, rounds)
    click_wall = median(wall for wall, _ in got.pop(CLICK))
    note = f"{rounds} rounds, warm bytecode cache, pseudo-terminal"
    return [
        Row(
            f"`rrkit {name}` start-up to its first line",
            median(wall for wall, _ in samples),
            click_wall,
            "ms",
            target=at_most(HELP_LIMIT) if name == "--help" else at_most(START_LIMIT, of="value"),
            baseline_name="python -c 'import click'",
            note=f"{note}; CPU {median(cpu for _, cpu in samples):.0f} ms",
            bench=BENCH,
        )
        for name, samples in got.items()
    ]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
