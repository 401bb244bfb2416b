"""`rrkit serve` from the command line: URLs printed, loopback by default, clean stop on Ctrl-C, clear errors."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if match := re.search(r"HTTP base URL:\s+(\S+)", line):
            return process, match.group(1)
    process.kill()
    raise AssertionError(f"no URL printed; stderr: {process.stderr.read() if process.stderr else ''}")


def test_serve_prints_loopback_urls_answers_and_stops_cleanly_on_ctrl_c() -> None:
    process, base_url = start()
    try:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        response = httpx.post(base_url + "/responses", json={"model": "m", "input": "hi", "stream": True})
        assert "response.completed" in response.text
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=15)
    assert process.returncode == 0
    assert "rrkit: stopped" in out


def test_serve_with_a_broken_script_names_the_file_and_the_problem(tmp_path: Path) -> None:
    script = tmp_path / "broken.yaml"
    script.write_text("responses:\n  - output:\n      - text: hi\n        chunks: zero\n")
    result = subprocess.run(
        [sys.executable, "-m", "rrkit", "serve", "--script", str(script)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert str(script) in result.stderr
    assert "responses[0].output[0].chunks" in result.stderr
