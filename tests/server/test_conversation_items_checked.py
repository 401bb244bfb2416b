"""Items added to a conversation (at its creation or later) are checked as the service checks them: as a create's
input (fields and their types, references resolved), then each of the `ConversationItem` shape a strict client
reads back; a refusal is the API's 400 naming the field, and nothing is added."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rrkit.server import FakeServer

from ..errortrap import Serve
from .faultclient import WAIT, loopback_client

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]}


def _post(server: FakeServer, path: str, body: dict[str, Any]) -> httpx.Response:
    with loopback_client(httpx.Timeout(WAIT)) as client:
        return client.post(server.http_url + path, json=body)


def _items(server: FakeServer, conversation: str) -> list[dict[str, Any]]:
    with loopback_client(httpx.Timeout(WAIT)) as client:
        page = client.get(f"{server.http_url}/conversations/{conversation}/items?order=asc").json()
    return list(page["data"])


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": "message", "role": "user"}, "items[0].content"),
        (
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": 3}]},
            "items[0].content[0].text",
        ),
        ({"type": "function_call_output", "call_id": 7, "output": "x"}, "items[0].call_id"),
        ({"type": "compaction_trigger"}, "items[0].type"),
        ({"type": "computer_call_output", "call_id": "c", "output": "not an object"}, "items[0].output"),
        ({"type": "item_reference", "id": "msg_nowhere"}, "input"),
    ],
)
def test_a_malformed_item_is_refused_naming_its_field_and_nothing_is_added(
    serve: Serve, item: dict[str, Any], param: str
) -> None:
    server = serve()
    created = _post(server, "/conversations", {"items": [USER]}).json()
    refused = _post(server, f"/conversations/{created['id']}/items", {"items": [item]})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["param"] == param and error["message"].endswith("."), error
    assert [kept["content"] for kept in _items(server, created["id"])] == [USER["content"]]
    assert _post(server, "/conversations", {"items": [item]}).status_code == 400


def test_an_item_reference_adds_the_item_it_names(serve: Serve) -> None:
    server = serve()
    first = _post(server, "/conversations", {"items": [USER]}).json()
    kept = _items(server, first["id"])[0]
    other = _post(server, "/conversations", {"items": [{"type": "item_reference", "id": kept["id"]}]})
    assert other.status_code == 200, other.text
    assert _items(server, other.json()["id"]) == [kept]


def test_well_formed_items_of_every_common_kind_are_kept_as_a_strict_client_reads_them(serve: Serve) -> None:
    server = serve()
    items = [
        USER,
        {"role": "assistant", "content": "Hi."},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "done"},
    ]
    created = _post(server, "/conversations", {"items": items})
    assert created.status_code == 200, created.text
    assert [item["type"] for item in _items(server, created.json()["id"])] == ["message"] * 2 + [
        "function_call",
        "function_call_output",
    ]
