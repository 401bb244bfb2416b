"""A create's fields that its response states again (tools, tool_choice, reasoning, text, ...) are held to the
spec's request schema, as the service holds them: the first one a strict client could not read back is refused
with the API's 400 naming it, over HTTP and over WebSocket; a tool of a type the spec does not define is taken as
an extension, and a lenient server (`--lenient`) takes anything."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rrkit.server import FakeServer

from ..errortrap import Serve
from .faultclient import BODY, WAIT, loopback_client, ws_connect, ws_request

CODEX_LIKE: dict[str, Any] = {
    "tools": [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}, "strict": False},
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark", "definition": "s"}},
        {"type": "web_search", "external_web_access": False},
        {"type": "a_tool_from_next_year", "anything": [1, 2]},
    ],
    "tool_choice": "auto",
    "reasoning": {"effort": "medium", "summary": "auto"},
    "text": {"verbosity": "low"},
    "service_tier": "priority",
    "prompt_cache_key": "thread-1",
}
REFUSED = [
    ({"tools": [{"type": "code_interpreter"}]}, "tools[0].container"),
    ({"tools": [{"type": "function", "name": 3}]}, "tools[0].name"),
    ({"tool_choice": {"type": "function"}}, "tool_choice.name"),
    ({"text": {"verbosity": "reset"}}, "text.verbosity"),
    ({"reasoning": {"effort": "as much as it takes"}}, "reasoning.effort"),
]


def _post(server: FakeServer, body: dict[str, Any]) -> httpx.Response:
    with loopback_client(httpx.Timeout(WAIT)) as client:
        return client.post(server.http_url + "/responses", json={**BODY, "stream": False, **body})


@pytest.mark.parametrize(("fields", "param"), REFUSED)
def test_a_field_the_spec_refuses_is_a_400_naming_it_over_http_and_websocket(
    serve: Serve, fields: dict[str, Any], param: str
) -> None:
    server = serve()
    refused = _post(server, fields)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == param, refused.text
    with ws_connect(server) as websocket:
        answer = ws_request(websocket, {**BODY, **fields})
    assert answer.types == ["error"] and answer.last["status"] == 400, answer.events
    assert answer.last["error"]["param"] == param


def test_what_codex_sends_and_a_tool_type_the_spec_does_not_know_are_taken(serve: Serve) -> None:
    answered = _post(serve(), CODEX_LIKE)
    assert answered.status_code == 200, answered.text
    assert [tool["type"] for tool in answered.json()["tools"]] == [tool["type"] for tool in CODEX_LIKE["tools"]]


def test_a_lenient_server_takes_what_the_spec_refuses(serve: Serve) -> None:
    server = serve(lenient=True)
    for fields, _ in REFUSED:
        assert _post(server, fields).status_code == 200
