"""Stopping: the seconds from a stop signal (SIGINT) to the process's exit, and the CPU the process spends in them.

- `rrkit serve` holding a stalled stream (SSE, then WebSocket) beside the same command holding nothing: what a
  stalled stream adds to the stop (the tests prove by structure that the stop does not wait on it,
  tests/server/test_shutdown.py; this is the figure).
- A pytest run interrupted while its test streams from a stalled `rrkit_server` (recording a cassette) beside a
  pytest run interrupted in a test that only sleeps: what rrkit adds to pytest's own interrupt, with the bytecode
  cache warm (a PYTHONPYCACHEPREFIX filled by the warm-up round) and cold (PYTHONDONTWRITEBYTECODE=1, as CI and many
  containers set it: pytest then re-does the assertion rewriting of each plugin's modules at every run, hypothesis's
  among them, which its plugin imports in the terminal summary).

Run: python -m benchmarks.bench_stop [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from benchmarks.common import ROOT, Profile, Row, child_env, interleaved, median, run_main
from tests.plugin.test_plugin_stop import STALLED_TEST as RRKIT_TEST  # the test's own program: one to keep

BENCH = "stop"
STALL = ROOT / "toolkit" / "rrkit" / "fixtures" / "stall.yaml"
BODY = {"model": "m", "input": "hi", "stream": True}
_TICK = os.sysconf("SC_CLK_TCK")

BARE_TEST = """
import pathlib
import time


def test_sleeps():
    pathlib.Path("streaming").touch()
    time.sleep(600)
"""


def _cpu(pid: int) -> float:
    """CPU seconds the process has used, its ended threads included (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _stop(process: subprocess.Popen[bytes]) -> tuple[float, float]:
    """(wall, CPU) seconds from SIGINT to the exit of `process`."""
    before = _cpu(process.pid)
    start = time.perf_counter()
    process.send_signal(signal.SIGINT)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = 0  # reaped above; keeps Popen from waiting again
    return wall, usage.ru_utime + usage.ru_stime - before


def _hold(url: str, transport: str, started: threading.Event) -> None:
    """A client with the three events before the stall of `stall.yaml`, reading on until the server ends it."""
    try:
        if transport == "sse":
            with httpx.stream("POST", url + "/responses", json=BODY, timeout=None) as response:
                lines = response.iter_lines()
                for _ in range(3):
                    while not next(lines).startswith("data:"):
                        pass
                started.set()
                for _ in lines:
                    pass
        else:
            from websockets.sync.client import connect

            with connect(url.replace("http://", "ws://") + "/responses") as websocket:
                websocket.send('{"type": "response.create", "model": "m", "input": "hi"}')
                for _ in range(3):
                    websocket.recv()
                started.set()
                while True:
                    websocket.recv()
    except Exception:
        pass
    finally:
        started.set()


def serve_stop(holding: str | None) -> tuple[float, float]:
    """`rrkit serve --script stall.yaml`, holding a stalled stream over `holding` (or nothing), then stopped."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", "serve", "--port", "0", "--script", str(STALL)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=child_env(),
    )
    assert process.stdout is not None
    url = None
    for raw in process.stdout:
        if match := re.search(r"HTTP base URL:\s+(\S+)", raw.decode()):
            url = match.group(1)
            break
    if url is None:
        process.kill()
        raise RuntimeError("rrkit serve printed no URL")
    threading.Thread(target=lambda: process.stdout and process.stdout.read(), daemon=True).start()
    if holding is not None:
        started = threading.Event()
        threading.Thread(target=_hold, args=(url, holding, started), daemon=True).start()
        if not started.wait(30):
            process.kill()
            raise RuntimeError(f"no stalled {holding} stream after 30 s")
    return _stop(process)


def pytest_stop(test: str, env: dict[str, str]) -> tuple[float, float]:
    """A pytest run of `test`, interrupted once the test has touched `streaming`."""
    with tempfile.TemporaryDirectory(prefix="rrkit-stop-") as folder:
        where = Path(folder)
        (where / "test_it.py").write_text(test, encoding="utf-8")
        (where / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
            cwd=where,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even when this runs in the background
        )
        deadline = time.monotonic() + 60
        while not (where / "streaming").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("the pytest run under test never reached its stream")
            time.sleep(0.01)
        return _stop(process)


def _rows(
    measure: str, got: dict[str, list[tuple[float, float]]], rrkit: str, base: str, name: str, note: str
) -> list[Row]:
    return [
        Row(
            f"{measure}: {what}",
            median(run[index] for run in got[rrkit]) * 1000,
            median(run[index] for run in got[base]) * 1000,
            unit,
            baseline_name=name,
            note=note,
            bench=BENCH,
        )
        for index, (what, unit) in enumerate([("signal to exit", "ms"), ("CPU from signal to exit", "ms CPU")])
    ]


def rows(profile: Profile) -> list[Row]:
    rounds = profile.rounds
    served = interleaved(
        {"sse": lambda: serve_stop("sse"), "ws": lambda: serve_stop("ws"), "idle": lambda: serve_stop(None)}, rounds
    )
    note = f"{rounds} rounds"
    out = _rows("`rrkit serve` stop, SSE stream stalled", served, "sse", "idle", "the same, nothing open", note)
    out += _rows("`rrkit serve` stop, WebSocket stream stalled", served, "ws", "idle", "the same, nothing open", note)
    with tempfile.TemporaryDirectory(prefix="rrkit-stop-pyc-") as cache:
        warm = child_env()
        warm.pop("PYTHONDONTWRITEBYTECODE", None)
        warm["PYTHONPYCACHEPREFIX"] = cache
        cold = child_env()
        cold.pop("PYTHONPYCACHEPREFIX", None)
        cold["PYTHONDONTWRITEBYTECODE"] = "1"
        runs: dict[str, Callable[[], tuple[float, float]]] = {
            "rrkit-warm": lambda: pytest_stop(RRKIT_TEST, warm),
            "bare-warm": lambda: pytest_stop(BARE_TEST, warm),
            "rrkit-cold": lambda: pytest_stop(RRKIT_TEST, cold),
            "bare-cold": lambda: pytest_stop(BARE_TEST, cold),
        }
        ran = interleaved(runs, rounds)
    bare = "pytest interrupted in a test that sleeps"
    out += _rows(
        "pytest run stop, rrkit_server stream stalled",
        ran,
        "rrkit-warm",
        "bare-warm",
        bare,
        f"{note}, warm bytecode cache",
    )
    out += _rows(
        "pytest run stop, rrkit_server stream stalled",
        ran,
        "rrkit-cold",
        "bare-cold",
        bare,
        f"{note}, PYTHONDONTWRITEBYTECODE=1",
    )
    return out


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
