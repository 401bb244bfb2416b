"""Responses Lite as the Codex binaries send it (the pinned 0.169.0 and the newest 0.171.0 alike, with a model
their own catalogue marks `use_responses_lite`), beside rrkit's Lite encoding (`protocol.lite.to_lite`): the
tools item first, then the instructions; no top-level instructions or tools; no parallel tool calls; the reasoning
context set for all turns; the Lite header over HTTP, its `client_metadata` key over WebSocket."""

from __future__ import annotations

from pathlib import Path

import pytest

from rrkit.protocol import is_warmup, to_lite
from rrkit.protocol.lite import ALL_TURNS, LITE_HEADER, LITE_METADATA
from rrkit.script import Script, reply
from rrkit.server import FakeServer

from .codex import NEWEST, codex_of, run_codex, write_codex_home

pytestmark = pytest.mark.codex

LITE_MODEL = "gpt-6.1-sol"
"""A model the catalogue built into both binaries marks `"use_responses_lite": true`."""


def leading(request: dict[str, object]) -> list[tuple[object, object]]:
    items = request.get("input")
    assert isinstance(items, list)
    return [(item.get("type"), item.get("role")) for item in items[:2]]


@pytest.mark.parametrize("transport", ["http", "ws"])
@pytest.mark.parametrize("version", ["pinned", NEWEST])
def test_codex_sends_a_lite_model_the_encoding_rrkit_sends(tmp_path: Path, version: str, transport: str) -> None:
    binary = codex_of(version)
    with FakeServer(Script(default=reply("hi"))) as server:
        home = write_codex_home(tmp_path / "home", server.http_url, websockets=transport == "ws")
        workdir = tmp_path / "work"
        workdir.mkdir()
        run = run_codex(binary, home=home, workdir=workdir, extra_args=("-m", LITE_MODEL))
        assert run.returncode == 0, run.stderr
        [exchange] = [e for e in server.settle().exchanges if not is_warmup(e.wire_request or {})]
    wire = exchange.wire_request or {}
    ours = to_lite({"model": LITE_MODEL, "instructions": "You are Codex.", "tools": [], "input": "hi"})
    assert exchange.transport == transport
    assert (
        leading(exchange.logical_request or {})
        == leading(ours)
        == [
            ("additional_tools", "developer"),
            ("message", "developer"),
        ]
    )
    assert "instructions" not in wire and "tools" not in wire
    assert wire["parallel_tool_calls"] is ours["parallel_tool_calls"] is False
    assert wire["reasoning"]["context"] == ours["reasoning"]["context"] == ALL_TURNS
    if transport == "http":
        assert exchange.request_headers.get(LITE_HEADER) == "true"
    else:
        assert LITE_HEADER not in exchange.request_headers
        assert exchange.client_metadata.get(LITE_METADATA) == "true"
