"""What the Codex binaries read and skip of a stream, observed rather than read from sources (the pinned 0.169.0
and the newest 0.171.0 alike): which side-channel frame a turn state comes from (a tool-loop turn whose first
response carries the frame: the turn's next request carries the token in its `client_metadata` only where Codex
read it), and an event that is not JSON (skipped: the turn completes with no retry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rrkit.protocol import events as ev
from rrkit.protocol.headers import TURN_STATE_HEADER
from rrkit.script import Match, Script, function_call, reply, side_frame, text
from rrkit.script.models import Fault
from rrkit.server import FakeServer

from .codex import NEWEST, codex_of, run_codex, write_codex_home

pytestmark = pytest.mark.codex

READS = {("ws", ev.METADATA): True, ("ws", ev.CODEX_METADATA): False, ("http", ev.METADATA): False}
"""Observed on both releases: over WebSocket `response.metadata` is read, `codex.response.metadata` is not; over
HTTP SSE no frame is (the response header carries the turn state there)."""


def tool_loop(frame_type: str, token: str) -> Script:
    frame = side_frame(frame_type, before=1, headers={TURN_STATE_HEADER: token})
    script = Script()
    script.add(reply("Done."), when=Match(last_input_type="function_call_output"), repeat=True)
    script.add(reply(function_call("exec_command", {"cmd": "echo hi"}, call_id="call_1"), frames=[frame]), repeat=True)
    return script


@pytest.mark.parametrize(("transport", "frame_type"), list(READS), ids=[f"{t}-{f}" for t, f in READS])
@pytest.mark.parametrize("version", ["pinned", NEWEST])
def test_codex_reads_a_turn_state_only_from_a_response_metadata_frame_over_websocket(
    tmp_path: Path, version: str, transport: str, frame_type: str
) -> None:
    binary = codex_of(version)
    token = f"ts-{transport}-{frame_type}"
    with FakeServer(tool_loop(frame_type, token)) as server:
        home = write_codex_home(tmp_path / "home", server.http_url, websockets=transport == "ws")
        workdir = tmp_path / "work"
        workdir.mkdir()
        run = run_codex(binary, home=home, workdir=workdir, prompt="run echo hi", timeout=60.0)
        assert run.returncode == 0, run.stderr
        turn = [e for e in server.settle().exchanges if (e.wire_request or {}).get("generate") is not False]
    assert [e.transport for e in turn] == [transport, transport]
    follow_up = turn[1]
    assert (follow_up.wire_request or {}).get("input", [{}])[-1].get("type") == "function_call_output"
    echoed = follow_up.client_metadata.get(TURN_STATE_HEADER)
    assert echoed == (token if READS[(transport, frame_type)] else None)
    assert follow_up.request_headers.get(TURN_STATE_HEADER) is None  # a frame's token never becomes a header


@pytest.mark.parametrize("transport", ["http", "ws"])
@pytest.mark.parametrize("version", ["pinned", NEWEST])
def test_codex_skips_an_event_that_is_not_json_and_completes_without_a_retry(
    tmp_path: Path, version: str, transport: str
) -> None:
    binary = codex_of(version)
    words = reply(text("Alpha beta gamma delta.", chunks=4))
    lost_item_added = words.model_copy(update={"fault": Fault(not_json_at=2)})  # output_item.added, not JSON
    script = Script().add(lost_item_added).add(reply("A retry."), repeat=True)
    with FakeServer(script) as server:
        home = write_codex_home(tmp_path / "home", server.http_url, websockets=transport == "ws")
        workdir = tmp_path / "work"
        workdir.mkdir()
        run = run_codex(binary, home=home, workdir=workdir, timeout=60.0)
        turn = [e for e in server.settle().exchanges if (e.wire_request or {}).get("generate") is not False]
    assert run.returncode == 0, run.stderr
    assert "Alpha beta gamma delta." in run.stdout and len(turn) == 1
