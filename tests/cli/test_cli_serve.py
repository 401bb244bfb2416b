"""`rrkit serve` from the command line: URLs printed, loopback by default, clean stop on Ctrl-C, clear errors."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.script.shipped import shipped_directory, shipped_fixtures

from ..rrkit_process import start


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


def test_serve_plays_a_shipped_script_named_fixture_colon_name() -> None:
    process, base_url = start("--script", "fixture:failed-context-length")
    try:
        response = httpx.post(base_url + "/responses", json={"model": "m", "input": "hi", "stream": True})
        assert "context_length_exceeded" in response.text and "response.failed" in response.text
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=15)
    assert process.returncode == 0 and "rrkit: stopped" in out


def test_an_unknown_fixture_name_suggests_the_nearest_and_the_command_that_lists_them() -> None:
    result = CliRunner().invoke(main, ["serve", "--script", "fixture:drop-mid-strem"])
    assert result.exit_code != 0
    assert "did you mean fixture:drop-mid-stream?" in result.output and "rrkit fixtures" in result.output


def test_rrkit_fixtures_lists_every_shipped_script_with_what_it_does() -> None:
    result = CliRunner().invoke(main, ["fixtures"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.output.splitlines() if line and not line.startswith(" ")]
    assert listed == list(shipped_fixtures())
    assert "ws-refuse-426" in listed and len(listed) == len(list(Path(shipped_directory()).glob("*.yaml")))
