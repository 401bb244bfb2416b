"""Every error the fake server gives is the API's JSON error body (`{"error": {message, type, param, code}}`, as
`application/json`), on any path and method: unknown paths, ids the router cannot parse (a newline, `%2F`, NUL,
escapes that are not UTF-8), overlong paths, wrong methods (405 with `allow`), bodies that are not JSON, requests
uvicorn cannot parse, and WebSocket upgrades elsewhere than `/v1/responses`."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from rrkit.server import FakeServer

from ..errortrap import Serve

ERROR_FIELDS = {"message", "type", "param", "code"}
LONG_ID = "resp_" + "x" * 60_000
"""An id in a path of 60 kB (httpx sends at most 64 kB of URL): the router still reads it."""


@pytest.fixture
def server(serve: Serve) -> Iterator[FakeServer]:
    with serve.running() as running:
        yield running


def error_of(status: int, media: str, content: bytes) -> dict[str, Any]:
    """The error object of an answer, checked to be the API's JSON error body."""
    assert media.split(";")[0].strip() == "application/json", (status, media, content[:200])
    body = json.loads(content)
    assert set(body) == {"error"} and set(body["error"]) == ERROR_FIELDS, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    error: dict[str, Any] = body["error"]
    return error


@pytest.mark.parametrize(
    ("method", "path", "content", "status", "says"),
    [
        ("GET", "/v1/files", None, 404, "Invalid URL (GET /v1/files)"),
        ("POST", "/v1/responses/a%0Ab/cancel", None, 404, "'a\nb'"),
        ("GET", "/v1/responses/a%0Ab/cancel", None, 405, "use POST"),
        ("GET", "/v1/conversations/c%0A/items", None, 404, "'c\n'"),
        ("GET", "/v1/responses/a%2Fb", None, 404, "'a/b'"),
        ("DELETE", "/v1/responses/a%00b", None, 404, "'a\x00b'"),
        ("GET", "/v1/responses/a%FF%FEb", None, 404, "not found"),
        ("GET", "/v1/responses/%zz", None, 404, "'%zz'"),
        ("GET", "/v1/responses/" + LONG_ID, None, 404, LONG_ID),
        ("PUT", "/v1/responses/resp_1", None, 405, "use GET, DELETE"),
        ("TRACE", "/v1/models", None, 405, "use GET"),
        ("PATCH", "/v1/models/ft:a%0Ab", None, 405, "use GET, DELETE"),
        ("DELETE", "/v1/models/gpt-5.5", None, 403, "cannot be deleted"),
        ("POST", "/v1/responses", b"{not json", 400, "not valid JSON"),
        ("POST", "/v1/responses/", b"\xff\xfe", 400, "JSON"),
        ("POST", "/v1/conversations", b"[1, 2]", 400, "JSON object"),
        ("POST", "/v1/responses/input_tokens", b"model=gpt", 400, "JSON"),
        ("POST", "/__rrkit", None, 405, "Method Not Allowed"),
    ],
)
def test_an_error_on_any_path_and_method_is_the_api_s_json_error(
    server: FakeServer, method: str, path: str, content: bytes | None, status: int, says: str
) -> None:
    base = server.http_url.removesuffix("/v1")
    with httpx.Client(timeout=30) as client:
        answer = client.request(method, httpx.URL(base + path), content=content)
    assert answer.status_code == status, answer.text[:300]
    error = error_of(answer.status_code, answer.headers.get("content-type", ""), answer.content)
    assert says in error["message"], error
    if status == 405:
        assert answer.headers["allow"]


def raw_exchange(server: FakeServer, request: bytes) -> tuple[int, str, bytes]:
    """One request sent as bytes on its own connection: the status, content type and body of the answer."""
    where = urlsplit(server.http_url)
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers["content-type"], body


@pytest.mark.parametrize(
    "request_line",
    [
        b"GET /v1/responses/a b HTTP/1.1",  # a space in the path
        b"GET /v1/responses/\xff HTTP/1.1",  # a byte beyond ASCII, not percent-encoded
        b"FETCH /v1/models HTTP/1.1",  # a method the parser does not know
        b"GET /v1/responses/" + b"x" * 100_000 + b" HTTP/1.1",  # past the parser's limit
    ],
    ids=["space", "non-ascii", "unknown-method", "overlong"],
)
def test_a_request_uvicorn_cannot_parse_is_answered_with_the_api_s_json_400(
    server: FakeServer, request_line: bytes
) -> None:
    status, media, body = raw_exchange(server, request_line + b"\r\nhost: x\r\nconnection: close\r\n\r\n")
    assert status == 400
    assert "could not be parsed" in error_of(status, media, body)["message"]


def test_a_websocket_upgrade_elsewhere_than_the_responses_path_is_refused_with_a_json_404(server: FakeServer) -> None:
    url = server.responses_ws_url.replace("/v1/responses", "/v1/files")
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=30)
    answer = refused.value.response
    error = error_of(answer.status_code, answer.headers.get("content-type", ""), answer.body or b"")
    assert answer.status_code == 404 and "/v1/responses" in error["message"]


def test_the_server_still_answers_after_every_malformed_request(server: FakeServer) -> None:
    raw_exchange(server, b"GET /v1/a b HTTP/1.1\r\n\r\n")
    answer = httpx.post(server.http_url + "/responses", json={"model": "gpt-test", "input": "hi"}, timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == "completed"


@pytest.mark.parametrize(
    ("broken_at", "path"),
    [
        ("rrkit.server.resources.answer", "/v1/models"),  # a route of the resource: no Starlette in between
        ("rrkit.server.admin.memory_summary", "/__rrkit"),  # the admin API: Starlette's own error handler
    ],
)
def test_an_error_rrkit_did_not_catch_is_a_json_500_naming_it(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, broken_at: str, path: str
) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("a bug planted by the test")

    monkeypatch.setattr(broken_at, broken)
    serve.allow_errors("a bug planted by the test")
    server = serve()
    answer = httpx.get(server.http_url.removesuffix("/v1") + path, timeout=30)
    error = error_of(answer.status_code, answer.headers.get("content-type", ""), answer.content)
    assert answer.status_code == 500 and error["type"] == "server_error"
    assert "RuntimeError: a bug planted by the test" in error["message"] and f"GET {path}" in error["message"]
    still = httpx.post(server.http_url + "/responses", json={"model": "m", "input": "hi"}, timeout=30)
    assert still.status_code == 200 and still.json()["status"] == "completed"  # the server goes on
