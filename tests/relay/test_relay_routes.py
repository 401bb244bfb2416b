"""The HTTP relay on every route: a request on any method and path under the upstream's base goes upstream as the
client sent it (method, path, query string, headers by the relay's policy, body bytes), its answer comes back as it
came, and the relay's redirect, size and error handling hold there as on the create. Everything is on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from rrkit.cassette.proxy import RecordingProxy
from rrkit.server.runner import LoopbackServer

from ..errortrap import Serve

SECRET = "sk-proj-7c21d4e5b6a8c0d2e4f63f9a"


@dataclass(frozen=True)
class Arrived:
    """One request as the upstream received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


class Upstream(LoopbackServer):
    """Answers every method and path with `answer(request)`, keeping each request exactly as it arrived."""

    def __init__(self, answer: Callable[[Request], Response]) -> None:
        super().__init__()
        self.answer = answer
        self.arrived: list[Arrived] = []

    def app(self) -> ASGIApp:
        async def anything(request: Request) -> Response:
            body = await request.body()
            headers = {name.lower(): value for name, value in request.headers.items()}
            self.arrived.append(Arrived(request.method, request.url.path, request.url.query, headers, body))
            return self.answer(request)

        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        return Starlette(routes=[Route("/{path:path}", anything, methods=methods)])


@contextmanager
def proxied(serve: Serve, upstream: Upstream, **options: object) -> Iterator[RecordingProxy]:
    with upstream, RecordingProxy(upstream.http_url, **options) as proxy:  # type: ignore[arg-type]
        serve.guard(proxy)
        yield proxy


def test_any_method_and_path_goes_upstream_with_its_query_headers_and_body_bytes_and_comes_back_as_it_came(
    serve: Serve,
) -> None:
    answer = Response(b"made", status_code=201, media_type="text/plain", headers={"x-upstream": "yes"})
    upstream = Upstream(lambda request: answer)
    body = gzip.compress(json.dumps({"file_id": "file-1", "attributes": {"k": "v"}}).encode())
    with proxied(serve, upstream) as proxy:
        authority = upstream.http_url.split("/")[2]
        sent = httpx.post(
            proxy.http_url + "/vector_stores/vs_1/files?include=chunks&limit=2",
            content=body,
            headers={"content-type": "application/json", "content-encoding": "gzip", "authorization": SECRET},
            trust_env=False,
            timeout=10,
        )
        patched = httpx.patch(proxy.http_url + "/assistants/asst_1", json={"name": "x"}, trust_env=False, timeout=10)
        cassette = proxy.cassette()

    assert (sent.status_code, sent.content, sent.headers["x-upstream"]) == (201, b"made", "yes")
    assert sent.headers["content-type"].startswith("text/plain")
    first, second = upstream.arrived
    assert (first.method, first.path, first.query, first.body) == (
        "POST",
        "/v1/vector_stores/vs_1/files",
        "include=chunks&limit=2",
        body,  # the bytes as sent, still encoded
    )
    assert first.headers["content-encoding"] == "gzip"
    assert first.headers["authorization"] == SECRET
    assert first.headers["accept-encoding"] == "identity"
    assert first.headers["host"] == authority
    assert (second.method, second.path, json.loads(second.body)) == ("PATCH", "/v1/assistants/asst_1", {"name": "x"})
    assert patched.status_code == 201
    recorded = cassette.exchanges[0]
    assert (recorded.method, recorded.path, recorded.route, recorded.query) == (
        "POST",
        "/vector_stores/vs_1/files",
        "other",
        "include=chunks&limit=2",
    )
    assert recorded.wire_request == {"file_id": "file-1", "attributes": {"k": "v"}}
    assert recorded.request_headers["authorization"] != SECRET  # redacted as on the create


def test_an_unreachable_upstream_on_any_route_is_a_502_naming_the_method_and_url(serve: Serve) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with RecordingProxy(f"http://127.0.0.1:{port}/v1", connect_timeout=2) as proxy:
        serve.guard(proxy)
        answer = httpx.delete(proxy.http_url + "/conversations/conv_1", trust_env=False, timeout=10)
    assert answer.status_code == 502
    message = answer.json()["error"]["message"]
    assert f"DELETE http://127.0.0.1:{port}/v1/conversations/conv_1 failed" in message


def test_a_same_origin_redirect_on_a_route_is_followed_keeping_its_method_and_body(serve: Serve) -> None:
    def answer(request: Request) -> Response:
        if request.url.path.endswith("/old"):
            return Response(status_code=307, headers={"location": "/v1/items/new?kept=1"})
        return Response(b'{"ok": true}', media_type="application/json")

    upstream = Upstream(answer)
    with proxied(serve, upstream, redirects="same-origin") as proxy:
        moved = httpx.put(proxy.http_url + "/items/old", json={"v": 1}, trust_env=False, timeout=10)
    assert (moved.status_code, moved.json()) == (200, {"ok": True})
    assert [(a.method, a.path, a.query, a.body) for a in upstream.arrived] == [
        ("PUT", "/v1/items/old", "", b'{"v":1}'),
        ("PUT", "/v1/items/new", "kept=1", b'{"v":1}'),
    ]


def test_an_answer_on_a_route_larger_than_the_upstream_message_limit_is_a_502_naming_the_limit(serve: Serve) -> None:
    upstream = Upstream(lambda request: Response(b"x" * 5000, media_type="application/octet-stream"))
    with proxied(serve, upstream, max_message=1000) as proxy:
        answer = httpx.get(proxy.http_url + "/files/file-1/content", trust_env=False, timeout=10)
    assert answer.status_code == 502
    assert "GET " in answer.json()["error"]["message"]
    assert "--limit upstream-message" in answer.json()["error"]["message"]
