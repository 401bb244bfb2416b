"""rrkit's fake server, correct on every route of the resource, broken one duty at a time by rewriting the request
a route gets on its way in (an ASGI layer in front of it): what the route probes of `rrkit conform --server URL`
are tested against (tests/conform/test_conform_server_routes.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rrkit.protocol import routes
from rrkit.server import FakeServer


class RouteFault(StrEnum):
    """What the server gets wrong on one route; every other duty stays right."""

    RESUME_REPEATS = "resume_repeats"  # a resumed stream starts at starting_after, not after it
    RESUME_SKIPS = "resume_skips"  # a resumed stream starts one event too late (a gap)
    CANCEL_ANYTHING = "cancel_anything"  # a cancel of a finished response answers 200 (the response as it is)
    DELETE_KEEPS = "delete_keeps"  # a delete answers 200 and deletes nothing
    ITEMS_ANY_ORDER = "items_any_order"  # input items always newest first, whatever `order` asks
    ITEMS_UNPAGED = "items_unpaged"  # input items ignore `limit`
    CONVERSATION_AND_PREVIOUS = "conversation_and_previous"  # `conversation` with `previous_response_id` accepted


Rewrite = Callable[[Scope, bytes], tuple[Scope, bytes]]


def _query(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))


def _with_query(scope: Scope, query: dict[str, str]) -> Scope:
    return {**scope, "query_string": urlencode(query).encode("latin-1")}


def _shift_resume(by: int) -> Rewrite:
    def rewrite(scope: Scope, body: bytes) -> tuple[Scope, bytes]:
        query = _query(scope)
        if "starting_after" in query:
            query["starting_after"] = str(int(query["starting_after"]) + by)
        return _with_query(scope, query), body

    return rewrite


def _as_retrieve(scope: Scope, body: bytes) -> tuple[Scope, bytes]:
    """The request read as `GET /responses/{id}`: answered with the response as it is, changing nothing."""
    response_id = routes.route_of(scope["method"], scope["path"]).params["response_id"]
    path = f"/v1/responses/{response_id}"
    return {**scope, "method": "GET", "path": path, "raw_path": path.encode()}, b""


def _newest_first(scope: Scope, body: bytes) -> tuple[Scope, bytes]:
    return _with_query(scope, {**_query(scope), "order": "desc"}), body


def _no_limit(scope: Scope, body: bytes) -> tuple[Scope, bytes]:
    return _with_query(scope, {key: value for key, value in _query(scope).items() if key != "limit"}), body


def _previous_dropped(scope: Scope, body: bytes) -> tuple[Scope, bytes]:
    request = json.loads(body or b"{}")
    if isinstance(request, dict) and request.get("conversation") is not None:
        request.pop("previous_response_id", None)
    return scope, json.dumps(request).encode()


REWRITES: dict[RouteFault, tuple[str, Rewrite]] = {
    RouteFault.RESUME_REPEATS: (routes.RETRIEVE, _shift_resume(-1)),
    RouteFault.RESUME_SKIPS: (routes.RETRIEVE, _shift_resume(+1)),
    RouteFault.CANCEL_ANYTHING: (routes.CANCEL, _as_retrieve),
    RouteFault.DELETE_KEEPS: (routes.DELETE, _as_retrieve),
    RouteFault.ITEMS_ANY_ORDER: (routes.INPUT_ITEMS, _newest_first),
    RouteFault.ITEMS_UNPAGED: (routes.INPUT_ITEMS, _no_limit),
    RouteFault.CONVERSATION_AND_PREVIOUS: (routes.CREATE, _previous_dropped),
}
"""Each fault: the route whose requests it rewrites, and how."""


def broken(app: ASGIApp, fault: RouteFault) -> ASGIApp:
    """`app` with the requests of one route rewritten as `fault` says (the whole body read first)."""
    route, rewrite = REWRITES[fault]

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or routes.route_of(scope["method"], scope["path"]).name != route:
            await app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        scope, body = rewrite(scope, b"".join(chunks))
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        scope["headers"].append((b"content-length", str(len(body)).encode()))
        sent = False

        async def replayed() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replayed, send)

    return serve


class BrokenRouteServer(FakeServer):
    """The fake server with one route broken (`fault`), or correct (`fault=None`)."""

    def __init__(self, fault: RouteFault | None = None) -> None:
        super().__init__()
        self.fault = fault

    def app(self) -> ASGIApp:
        app = super().app()
        return app if self.fault is None else broken(app, self.fault)
