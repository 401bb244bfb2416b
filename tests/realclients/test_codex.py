"""The real Codex CLI through `rrkit record`, then against `rrkit serve --cassette` from another directory."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from rrkit.cassette import Cassette, load_cassette
from rrkit.protocol.outcome import OutcomeKind

from .codex import CodexRun, require_codex, run_codex, write_codex_home

pytestmark = pytest.mark.codex

PLAIN_TEXT = "Hi there from rrkit."
TOOL_TEXT = "The command printed hello."
SCRIPTS = {
    "plain": f"""name: codex-plain
responses:
  - repeat: true
    output:
      - text: "{PLAIN_TEXT}"
""",
    "tool_loop": f"""name: codex-tool-loop
responses:
  - when: {{last_input_type: function_call_output}}
    repeat: true
    output:
      - text: "{TOOL_TEXT}"
  - repeat: true
    output:
      - type: function_call
        name: exec_command
        arguments: {{cmd: echo hello}}
        call_id: call_1
""",
}
RATE_LIMIT_HEADERS = {
    "x-codex-primary-used-percent": "42.5",
    "x-codex-primary-window-minutes": "300",
    "x-codex-primary-reset-at": "1767225600",
    "x-codex-secondary-used-percent": "7",
    "x-codex-credits-has-credits": "true",
}
SCRIPTS["rate_limits"] = f"""name: codex-rate-limits
responses:
  - repeat: true
    headers: {json.dumps(RATE_LIMIT_HEADERS)}
    output:
      - text: "{PLAIN_TEXT}"
"""
FINAL_TEXT = {"plain": PLAIN_TEXT, "tool_loop": TOOL_TEXT, "rate_limits": PLAIN_TEXT}
STARTUP_TIMEOUT = 20.0
STOP_TIMEOUT = 15.0
CODEX_TIMEOUT = 45.0
REPLAY_WORKDIR = "replay-work-elsewhere"


@dataclass
class Rrkit:
    """A running `rrkit serve` / `rrkit record` process, its base URL and what it printed."""

    process: subprocess.Popen[str]
    http_url: str
    stderr_path: Path
    stdout_lines: list[str] = field(default_factory=list)

    @property
    def stdout(self) -> str:
        return "".join(self.stdout_lines)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def rrkit(*args: str, logs: Path) -> Iterator[Rrkit]:
    """Start `rrkit ARGS` on a free loopback port; on exit stop it with SIGINT (then SIGKILL) and wait."""
    stderr_path = logs.with_suffix(".stderr")
    with stderr_path.open("w", encoding="utf-8") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "rrkit", *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "HTTP base URL:" in line:
                ready.set()
        ready.set()  # EOF: the process is gone

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        ready.wait(STARTUP_TIMEOUT)
        url = next((m.group(1) for m in map(re.compile(r"HTTP base URL:\s+(\S+)").search, lines) if m), None)
        if url is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(2)
            raise AssertionError(
                f"`rrkit {' '.join(args)}` did not start (exit code {process.poll()})\n"
                f"--- stdout\n{''.join(lines)}\n--- stderr\n{stderr_path.read_text(errors='replace')}"
            )
        yield Rrkit(process, url, stderr_path, lines)
    finally:
        stop(process)
        reader.join(STOP_TIMEOUT)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Recording:
    cassette_path: Path
    cassette: Cassette
    run: CodexRun
    workdir: Path


def record(codex: str, tmp: Path, scenario: str, websockets: bool) -> Recording:
    """Codex through `rrkit record` in front of `rrkit serve --script`; the cassette once the proxy has stopped."""
    script = tmp / f"{scenario}.yaml"
    script.write_text(SCRIPTS[scenario], encoding="utf-8")
    cassette_path = tmp / "codex.cassette.json"
    workdir, home = tmp / "record-work", tmp / "record-codex-home"
    workdir.mkdir()
    with rrkit("serve", "--script", str(script), logs=tmp / "upstream") as upstream:
        upstream_args = ("--upstream", upstream.http_url, "--cassette", str(cassette_path))
        with rrkit("record", *upstream_args, logs=tmp / "proxy") as proxy:
            write_codex_home(home, proxy.http_url, websockets=websockets)
            run = run_codex(codex, home=home, workdir=workdir, timeout=CODEX_TIMEOUT)
            failure = f"Codex failed through the proxy\n{run.stderr}\n--- proxy stderr\n{proxy.stderr}"
            assert run.returncode == 0, failure
            assert FINAL_TEXT[scenario] in run.stdout
        assert proxy.process.returncode == 0, f"rrkit record exited {proxy.process.returncode}\n{proxy.stderr}"
        assert cassette_path.exists(), f"rrkit record wrote no cassette\n{proxy.stdout}\n{proxy.stderr}"
    return Recording(cassette_path, load_cassette(cassette_path), run, workdir)


def replay(codex: str, recording: Recording, tmp: Path, websockets: bool, *serve_args: str) -> tuple[CodexRun, str]:
    """Codex from a fresh working directory and CODEX_HOME against `rrkit serve --cassette`; its run and the
    server's stderr."""
    replayed = replay_seen(codex, recording, tmp, websockets, *serve_args)
    return replayed.run, replayed.stderr


@dataclass
class Replayed:
    run: CodexRun
    stdout: str  # the server's: its headline first
    stderr: str
    exchanges: list[dict[str, Any]]  # as the replaying server kept them (its admin API: what it sent Codex)


def replay_seen(codex: str, recording: Recording, tmp: Path, websockets: bool, *serve_args: str) -> Replayed:
    """`replay`, with what the replaying server printed and kept."""
    workdir, home = tmp / REPLAY_WORKDIR, tmp / "replay-codex-home-elsewhere"
    workdir.mkdir()
    with rrkit("serve", "--cassette", str(recording.cassette_path), *serve_args, logs=tmp / "replay") as server:
        write_codex_home(home, server.http_url, websockets=websockets)
        run = run_codex(codex, home=home, workdir=workdir, timeout=CODEX_TIMEOUT)
        admin = server.http_url.removesuffix("/v1") + "/__rrkit/exchanges?full=1"
        seen: list[dict[str, Any]] = httpx.get(admin, timeout=10).json()["data"]
    return Replayed(run, server.stdout, server.stderr, seen)


def check_recorded(recording: Recording, scenario: str, websockets: bool) -> None:
    exchanges = recording.cassette.exchanges
    assert exchanges, "the cassette holds no exchange"
    assert all(exchange.outcome and exchange.outcome.kind is OutcomeKind.COMPLETED for exchange in exchanges)
    assert {exchange.transport for exchange in exchanges} == {"ws" if websockets else "http"}
    real = [exchange for exchange in exchanges if (exchange.wire_request or {}).get("generate") is not False]
    assert len(real) == (2 if scenario == "tool_loop" else 1)
    for exchange in real:
        assert str(recording.workdir) in str(exchange.logical_request), "the logical request lacks Codex's cwd"
    if websockets:
        # Codex warms the socket up with `generate: false`, then sends deltas on `previous_response_id`
        assert len(exchanges) == len(real) + 1 and exchanges[0].wire_request is not None
        assert exchanges[0].wire_request.get("generate") is False
        assert all(exchange.incremental for exchange in real)
    if scenario == "tool_loop":
        last_input = (real[-1].logical_request or {}).get("input", [])
        assert [item.get("type") for item in last_input[-2:]] == ["function_call", "function_call_output"]
        assert "hello" in last_input[-1]["output"]


def check_replayed(run: CodexRun, server_stderr: str, scenario: str) -> None:
    assert run.returncode == 0, f"Codex failed against the replay\n{run.stderr}\n--- server stderr\n{server_stderr}"
    assert FINAL_TEXT[scenario] in run.stdout


def check_no_match_report(recording: Recording, run: CodexRun, server_stderr: str) -> None:
    assert run.returncode != 0, "the replay matched although Codex ran from another directory"
    # Codex prints the 400 body (or the WebSocket error frame) on its stderr; the server may log it too
    report = run.stderr + server_stderr
    assert "no recorded exchange matches" in report, report
    assert re.search(r"failed: [^\n]*\binput\b", report), f"the report does not name `input`:\n{report}"
    # the field diff shows both working directories (long strings are elided at the front, so by name)
    for workdir in (recording.workdir.name, REPLAY_WORKDIR):
        assert f"{workdir}</cwd>" in report, f"the report does not show the cwd {workdir!r}:\n{report}"


# -- recording through the proxy ---------------------------------------------------------------


def test_codex_plain_turn_over_sse_is_recorded_through_the_proxy(tmp_path: Path) -> None:
    check_recorded(record(require_codex(), tmp_path, "plain", False), "plain", False)


def test_codex_plain_turn_over_websocket_is_recorded_through_the_proxy(tmp_path: Path) -> None:
    check_recorded(record(require_codex(), tmp_path, "plain", True), "plain", True)


def test_codex_tool_loop_over_sse_is_recorded_through_the_proxy(tmp_path: Path) -> None:
    check_recorded(record(require_codex(), tmp_path, "tool_loop", False), "tool_loop", False)


def test_codex_tool_loop_over_websocket_is_recorded_through_the_proxy(tmp_path: Path) -> None:
    check_recorded(record(require_codex(), tmp_path, "tool_loop", True), "tool_loop", True)


# -- replay from another directory and CODEX_HOME ------------------------------------------------


def test_codex_plain_turn_over_sse_replays_elsewhere_with_the_stored_codex_preset(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "plain", False)
    check_replayed(*replay(codex, recording, tmp_path, False), "plain")


def test_codex_plain_turn_over_websocket_replays_elsewhere_with_the_stored_codex_preset(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "plain", True)
    check_replayed(*replay(codex, recording, tmp_path, True), "plain")


def test_codex_tool_loop_over_sse_replays_elsewhere_with_the_stored_codex_preset(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "tool_loop", False)
    check_replayed(*replay(codex, recording, tmp_path, False), "tool_loop")


def test_codex_tool_loop_over_websocket_replays_elsewhere_with_the_stored_codex_preset(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "tool_loop", True)
    check_replayed(*replay(codex, recording, tmp_path, True), "tool_loop")


# -- side channels: what Codex reads beyond the events replays as recorded --------------------------


def test_codex_turn_with_rate_limit_headers_replays_them_byte_for_byte(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "rate_limits", False)
    recorded = [exchange.response_headers for exchange in recording.cassette.exchanges]
    assert recorded and all(RATE_LIMIT_HEADERS.items() <= headers.items() for headers in recorded)
    replayed = replay_seen(codex, recording, tmp_path, False)  # no matching option: the cassette says codex
    check_replayed(replayed.run, replayed.stderr, "rate_limits")
    assert recording.cassette.match_presets == ["codex"]
    assert "matching with preset codex (stored in the cassette)" in replayed.stdout.splitlines()[0]
    assert len(replayed.exchanges) == len(recorded)
    for exchange, headers in zip(replayed.exchanges, recorded, strict=True):
        sent = exchange["response_headers"]
        assert {name: sent.get(name) for name in RATE_LIMIT_HEADERS} == RATE_LIMIT_HEADERS
        assert sent["x-request-id"] == headers["x-request-id"]  # the recorded one, not a new one


CODEX_CLIENT = """\
import os, sys
from pathlib import Path
from rrkit.differential.codex import config_toml, exec_codex
from rrkit.differential.settings import Budgets

binary, home, workdir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
home.mkdir(parents=True, exist_ok=True)
workdir.mkdir(parents=True, exist_ok=True)
budgets = Budgets(request_max_retries=0, stream_max_retries=1, idle_timeout=30.0)
(home / "config.toml").write_text(config_toml(os.environ["RRKIT_HTTP_URL"], websockets=False, budgets=budgets))
run = exec_codex(binary, home, workdir, "say hi", 45.0)
sys.stdout.write(run.stdout)
sys.stderr.write(run.stderr)
sys.exit(1 if run.timed_out else run.returncode)
"""
"""`codex exec` pointed at the replay server `rrkit replay -- COMMAND` starts (its URL in RRKIT_HTTP_URL)."""


def test_rrkit_replay_of_a_codex_cassette_recorded_elsewhere_passes_with_no_matching_option(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "plain", False)
    client = tmp_path / "codex_client.py"
    client.write_text(CODEX_CLIENT, encoding="utf-8")
    elsewhere = tmp_path / "replay-elsewhere"
    command = [sys.executable, str(client), codex, str(elsewhere / "home"), str(elsewhere / "work")]
    replayed = subprocess.run(
        [sys.executable, "-m", "rrkit", "replay", "--json", str(recording.cassette_path), "--", *command],
        capture_output=True,
        text=True,
        timeout=CODEX_TIMEOUT * 2,
    )
    assert replayed.returncode == 0, f"{replayed.stdout}\n{replayed.stderr}"
    (result,) = json.loads(replayed.stdout)["detail"]["replays"]
    assert result["ok"] and result["client"]["ok"], result
    assert result["matching"] == "preset codex (stored in the cassette)"


# -- without the preset, the other directory is a mismatch, and the report says where ---------------


def test_codex_replay_over_sse_with_no_preset_fails_naming_the_differing_fields(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "plain", False)
    check_no_match_report(recording, *replay(codex, recording, tmp_path, False, "--match-preset", "none"))


def test_codex_replay_over_websocket_with_no_preset_fails_naming_the_differing_fields(tmp_path: Path) -> None:
    codex = require_codex()
    recording = record(codex, tmp_path, "plain", True)
    check_no_match_report(recording, *replay(codex, recording, tmp_path, True, "--match-preset", "none"))
