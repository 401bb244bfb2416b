"""Responses Lite (docs/protocol.md: Responses Lite): the fake server answers both encodings, and the recording shows
that a standard request and its Lite encoding carry the same logical content."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from rrkit.cassette import Cassette, cassette_from_capture
from rrkit.cassette.match import logical_content_differences
from rrkit.protocol import OutcomeKind, from_lite, is_lite, to_lite
from rrkit.protocol.lite import instructions_in_input, without_lite_settings

from ..errortrap import Serve

TOOLS = [
    {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    {"type": "custom", "name": "apply_patch"},
]
STANDARD: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "Be brief.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]}],
    "tools": TOOLS,
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "store": False,
    "stream": True,
}


def send_http(base_url: str, body: dict[str, Any]) -> None:
    response = httpx.post(base_url + "/responses", json=body)
    assert response.status_code == 200 and "response.completed" in response.text


def send_ws(url: str, bodies: list[dict[str, Any]]) -> None:
    with connect(url, proxy=None) as socket:
        for body in bodies:
            socket.send(json.dumps({"type": "response.create", **body}))
            while json.loads(socket.recv(timeout=5))["type"] != "response.completed":
                pass


def record(serve: Serve, transport: str, *bodies: dict[str, Any]) -> Cassette:
    with serve.running() as server:
        if transport == "http":
            for body in bodies:
                send_http(server.http_url, body)
        else:
            send_ws(server.responses_ws_url, list(bodies))
        server.settle()
        return cassette_from_capture(server.exchanges, server.connections, name="lite")


def without_parallel(request: dict[str, Any]) -> dict[str, Any]:
    """The content both encodings carry alike: the instructions leading the input, Lite's own settings left out."""
    return without_lite_settings(instructions_in_input(request))


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_lite_request_and_its_standard_encoding_are_both_answered_with_the_same_logical_content(
    serve: Serve, transport: str
) -> None:
    cassette = record(serve, transport, STANDARD, to_lite(STANDARD))
    standard, lite = cassette.exchanges
    assert [exchange.outcome.kind if exchange.outcome else None for exchange in cassette.exchanges] == [
        OutcomeKind.COMPLETED,
        OutcomeKind.COMPLETED,
    ]
    assert standard.logical_request is not None and lite.logical_request is not None
    assert is_lite(lite.logical_request) and not is_lite(standard.logical_request)  # recorded as sent
    assert without_parallel(from_lite(lite.logical_request)) == without_parallel(from_lite(standard.logical_request))
    assert from_lite(lite.logical_request)["parallel_tool_calls"] is False
    assert logical_content_differences(standard, lite) == []


def test_lite_logical_content_differences_name_what_a_lite_request_changed(serve: Serve) -> None:
    changed = to_lite({**STANDARD, "tools": TOOLS[:1], "instructions": "Be verbose."})
    standard, lite = record(serve, "http", STANDARD, changed).exchanges
    differences = "\n".join(logical_content_differences(standard, lite))
    assert "logical['input'][0]" in differences and "Be verbose." in differences
    assert "logical['tools'][1]" in differences
    assert "parallel_tool_calls" not in differences
