"""Script and cassette files are read up to a documented size (`script-file`, 64 MiB; `cassette-file`, 1 GiB),
set for every command by `RRKIT_LIMITS` and for `serve` / `record` by `--limit` as well; a larger file is refused
with an error naming the file, its size, the limit and how to raise it, and never read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rrkit.cassette import CassetteError, load_cassette
from rrkit.protocol.limits import LIMITS_ENV, Limits, configured, given_limits
from rrkit.script import ScriptError, load_script

from .rrkit_process import start

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "cassettes" / "example.http.json"
SCRIPT = ROOT / "fixtures" / "example.yaml"


def test_a_script_over_the_script_file_limit_is_refused_naming_the_file_and_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "big.yaml"
    script.write_text(SCRIPT.read_text() + "# " + "x" * 4000 + "\n")
    monkeypatch.setenv(LIMITS_ENV, "script-file=2KiB")
    with pytest.raises(ScriptError) as refused:
        load_script(script)
    message = str(refused.value)
    assert str(script) in message and f"is {script.stat().st_size} bytes" in message
    assert "2 KiB" in message and "RRKIT_LIMITS=script-file=SIZE" in message
    monkeypatch.setenv(LIMITS_ENV, "script-file=1MiB")
    assert load_script(script).responses  # under the limit it loads


def test_a_cassette_over_the_cassette_file_limit_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "c.json"
    shutil.copy(GOLDEN, cassette)
    assert load_cassette(cassette).exchanges  # the default takes it
    monkeypatch.setenv(LIMITS_ENV, "cassette-file=1KiB")
    with pytest.raises(CassetteError) as refused:
        load_cassette(cassette)
    assert str(cassette) in str(refused.value) and "cassette-file" in str(refused.value)


def test_a_wrong_rrkit_limits_setting_is_an_error_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LIMITS_ENV, "casette-file=1KiB")
    with pytest.raises(CassetteError) as refused:
        load_cassette(GOLDEN)
    assert "RRKIT_LIMITS" in str(refused.value) and "did you mean 'cassette-file'" in str(refused.value)


def test_rrkit_limits_sets_the_defaults_and_limit_options_apply_over_it() -> None:
    assert configured({}) == Limits()
    assert configured({LIMITS_ENV: " body=1KiB  memory=8MiB "}) == Limits(body=1024, memory=8 * 1024 * 1024)
    assert configured({LIMITS_ENV: "body=1KiB"}).with_settings(["body=2KiB"]).body == 2048
    odd = Limits(body=1000, cassette_file=5 * 1024**3)
    with given_limits(odd):  # what a command's options give, for its own run only
        assert configured({LIMITS_ENV: "body=1KiB"}) == odd
    assert configured({}) == Limits()


def test_rrkit_serve_reads_its_script_up_to_its_limit_option(tmp_path: Path) -> None:
    script = tmp_path / "big.yaml"
    script.write_text(SCRIPT.read_text() + "# " + "x" * 4000 + "\n")
    env = {**os.environ, LIMITS_ENV: "script-file=1KiB"}
    refused = subprocess.run(
        [sys.executable, "-m", "rrkit", "serve", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert refused.returncode != 0 and str(script) in refused.stderr and "script-file" in refused.stderr
    process, base_url = start("--script", str(script), "--limit", "script-file=1MiB", "--quiet", env=env)
    try:
        answer = httpx.post(base_url + "/responses", json={"model": "m", "input": "hi", "stream": True}, timeout=30)
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert answer.status_code == 200


def test_rrkit_show_of_a_cassette_over_the_limit_says_so_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, LIMITS_ENV: "cassette-file=1KiB"}
    result = subprocess.run(
        [sys.executable, "-m", "rrkit", "show", str(GOLDEN)], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert str(GOLDEN) in result.stderr and "cassette-file" in result.stderr


def test_rrkit_serve_takes_its_limits_from_rrkit_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LIMITS_ENV, "body=1KiB")
    process, base_url = start("--quiet")
    try:
        big = {"model": "m", "input": "x" * 4096, "stream": True}
        answer = httpx.post(base_url + "/responses", json=big, timeout=30)
        small = httpx.post(base_url + "/responses", json={**big, "input": "hi"}, timeout=30)
    finally:
        process.terminate()
        process.communicate(timeout=60)
    assert answer.status_code == 413 and "1 KiB" in json.loads(answer.content)["error"]["message"]
    assert small.status_code == 200
