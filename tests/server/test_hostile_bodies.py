"""One JSON reader for every body rrkit accepts (issue 65): a body nested 200,000 deep, or holding an integer of
thousands of digits, is the API's 400 saying why on every route that takes a body (create, input tokens, compaction,
cancel, conversations and their items), on the admin API (`PUT /__rrkit/chaos`, `PUT /__rrkit/key`, `POST
/__rrkit/script`) and in every WebSocket frame (a create, one naming a `stream_id` lane, a steer), on a real server
that logs no error and still answers after it; a journal line nested as deep is a file error, never a
traceback, for `rrkit show`; and the JSON a header holds (turn metadata) is read by the same reader."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from websockets.sync.client import connect

from rrkit.cli import main
from rrkit.protocol.headers import PREWARM_KIND, TURN_METADATA_HEADER, is_prewarm, turn_metadata
from rrkit.protocol.jsontext import MAX_DEPTH, MAX_INTEGER_DIGITS
from rrkit.protocol.routes import API_PREFIX, ROUTES
from rrkit.server import FakeServer

from . import shared_server

pytestmark = pytest.mark.hostile
server = shared_server.server  # the module's fixtures
client = shared_server.client

DEEP = "[" * 200_000 + "]" * 200_000
BODIES = {
    "deep": '{"model": "m", "input": "hi", "metadata": ' + DEEP + "}",
    "long-integer": '{"model": "m", "input": "hi", "temperature": ' + "7" * 5000 + "}",
}
"""Each reached a recursive parser (RecursionError, a 500) or `int()` beyond its limit on some route before."""
REASONS = {"deep": f"deeper than {MAX_DEPTH} levels", "long-integer": f"more than the {MAX_INTEGER_DIGITS}"}


def body_routes(server: FakeServer, client: httpx.Client) -> list[str]:
    """The path of every route of the resource that takes a body (ROUTES' POSTs), its ids those of real objects."""
    response = client.post(server.http_url + "/responses", json={"model": "m", "input": "hi", "background": True})
    conversation = client.post(server.http_url + "/conversations", json={}).json()
    ids = {"response_id": response.json()["id"], "conversation_id": conversation["id"]}
    paths = [template.format(**ids) for method, template, _ in ROUTES if method == "POST"]
    assert len(paths) >= 6 and all("{" not in path for path in paths), paths
    return paths


def refused(answer: httpx.Response, kind: str, code: str = "invalid_json") -> None:
    assert answer.status_code == 400, (answer.status_code, answer.text[:300])
    error = answer.json()["error"]
    assert error["code"] == code and REASONS[kind] in error["message"], error


@pytest.mark.parametrize("kind", BODIES)
def test_every_route_that_takes_a_body_refuses_it_with_the_api_s_400(
    server: FakeServer, client: httpx.Client, kind: str
) -> None:
    for path in body_routes(server, client):
        answer = client.post(server.http_url + path, content=BODIES[kind], headers={"content-type": "application/json"})
        refused(answer, kind)
    assert client.post(server.http_url + "/responses", json={"model": "m", "input": "hi"}).status_code == 200


@pytest.mark.parametrize("kind", BODIES)
@pytest.mark.parametrize("what", ["chaos", "key"])
def test_the_admin_api_reads_its_bodies_as_the_create_does(
    server: FakeServer, client: httpx.Client, kind: str, what: str
) -> None:
    admin = server.http_url.removesuffix(API_PREFIX) + "/__rrkit"
    refused(client.put(f"{admin}/{what}", content=BODIES[kind]), kind, code=f"invalid_{what}")
    assert client.put(f"{admin}/chaos", json={"seed": 7}).json()["chaos"]["seed"] == 7
    assert client.delete(f"{admin}/chaos").status_code == 200


def test_a_posted_script_nested_too_deep_is_a_400(server: FakeServer, client: httpx.Client) -> None:
    admin = server.http_url.removesuffix(API_PREFIX) + "/__rrkit"
    answer = client.post(admin + "/script", content=DEEP, headers={"content-type": "application/json"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_script", answer.text[:300]
    assert "nested too deeply" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "response.create", "model": "m", "input": "hi"},
        {"type": "response.create", "model": "m", "input": "hi", "stream_id": "lane-1"},
        {"type": "response.steer", "previous_response_id": "resp_x", "input": []},
    ],
    ids=["create", "lane", "steer"],
)
@pytest.mark.parametrize("kind", BODIES)
def test_every_websocket_frame_is_read_by_the_same_reader(server: FakeServer, frame: dict[str, str], kind: str) -> None:
    text = json.dumps(frame)[:-1] + ', "x": ' + BODIES[kind] + "}"
    with connect(server.responses_ws_url, open_timeout=30, max_size=None) as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        while json.loads(socket.recv(timeout=30))["type"] != "response.completed":
            pass
        socket.send(text)
        answer = json.loads(socket.recv(timeout=30))
        assert answer["type"] == "error" and answer["status"] == 400, answer
        assert REASONS[kind] in answer["error"]["message"], answer
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": "again"}))
        while (event := json.loads(socket.recv(timeout=30)))["type"] != "response.completed":
            assert event["type"] != "error", event


@pytest.mark.parametrize("name", ["exchanges.jsonl", "exchanges.log"])
def test_a_journal_line_nested_too_deep_is_a_file_error_naming_its_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text('{"id": 1, "started_at": 1.0, "request": ' + DEEP + "}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["show", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and (name.endswith(".log") or f"{path}: line 1" in result.output)


def test_a_header_s_json_nested_too_deep_is_read_by_the_same_reader() -> None:
    """The turn metadata a cassette's handshake keeps (read by `rrkit replay`): 4,000 levels fit in 8 KiB."""
    assert not is_prewarm({TURN_METADATA_HEADER: "[" * 4000 + "]" * 4000})
    assert is_prewarm({TURN_METADATA_HEADER: turn_metadata("", PREWARM_KIND)})
