"""Stopping a pytest run whose test streams from an rrkit server (Ctrl-C, or SIGTERM as `timeout` and CI
runners send): prompt, the test's cassette written with what completed, no traceback of rrkit's.

"Prompt" is proved by structure: the stalled stream never ends by itself and its client waits forever, so a run
that exits at all did not wait on it; `CEILING` is only a safety net, far above what an idle machine needs (under
1 s from the signal to the exit, most of it pytest's own reporting: `python -m benchmarks --only stop`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CEILING = 60.0  # seconds from the signal to the run's exit before the test gives up on it

STALLED_TEST = """
import pathlib

import httpx
import pytest
from rrkit.script import reply, text


@pytest.mark.rrkit(cassette="stopped", record_mode="all")
def test_stalls(rrkit_server):
    rrkit_server.add(reply(text("complete")))
    rrkit_server.add(reply(text("never finished", chunks=4)).stall_after(2))
    body = {"model": "m", "input": "hi", "stream": True}
    assert "response.completed" in httpx.post(rrkit_server.http_url + "/responses", json=body).text
    with httpx.stream("POST", rrkit_server.http_url + "/responses", json=body, timeout=None) as stalled:
        lines = stalled.iter_lines()
        for _ in range(2):  # the two events before the stall
            while not next(lines).startswith("data:"):
                pass
        pathlib.Path("streaming").touch()
        for _ in lines:
            pass
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_stops_a_streaming_test_promptly_and_its_cassette_is_written(tmp_path: Path, sig: int) -> None:
    (tmp_path / "test_stalls.py").write_text(STALLED_TEST, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_stalls.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT as a terminal's Ctrl-C finds it, even where this run inherited it ignored (a background job)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + CEILING
    while not (tmp_path / "streaming").exists():
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    run.send_signal(sig)
    try:
        out, err = run.communicate(timeout=CEILING)
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
        stopped = f"the run did not stop within {CEILING:g} s: it waits on the stalled stream"
        raise AssertionError(f"{stopped}\n{out}{err}") from None
    assert "Traceback (most recent call last)" not in out + err
    assert "KeyboardInterrupt" in out
    cassette = json.loads((tmp_path / "cassettes" / "test_stalls" / "stopped.json").read_text(encoding="utf-8"))
    outcomes = [(exchange["outcome"]["kind"], exchange["outcome"]["events_sent"]) for exchange in cassette["exchanges"]]
    assert outcomes == [("completed", 9), ("stalled", 2)], outcomes
    assert not list((tmp_path / "cassettes" / "test_stalls").glob("*.journal.jsonl"))
