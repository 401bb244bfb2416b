"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket,
every other method and path is a route of the resource (server/resources.py); the admin API lives under `/__rrkit`
(admin.py)."""

from __future__ import annotations

import functools
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from ..protocol import errors
from ..protocol.headers import SESSION_HEADER
from .admin import ADMIN_PREFIX, admin_app, admin_health
from .http import ANY_METHOD, http_responses
from .respond import NO_MATCH_CODE, STATE_KEY, ServerState
from .sessions import SESSION_PARAM, SessionRefused
from .uvicorn_adapter import RAW_SEND, KeepRawSend, mark_denial_sent
from .websocket import websocket_responses

__all__ = ["NO_MATCH_CODE", "ServerState", "create_app"]


@functools.cache
def _shared_app() -> ASGIApp:
    """The one app every server of the process runs (built once: a fresh server per test costs less); each
    request finds its server's state in its scope."""
    routes: list[BaseRoute] = []
    for path in ("/v1/responses", "/responses"):
        routes.append(Route(path, http_responses, methods=["POST"]))
        routes.append(WebSocketRoute(path, websocket_responses))
    routes.append(Route(ADMIN_PREFIX, admin_health, methods=["GET"]))  # `/__rrkit` as `/__rrkit/`, no redirect
    routes.append(Mount(ADMIN_PREFIX, app=admin_app()))
    # every other method and path: the resource's routes (protocol.routes), answered by the store or relayed
    routes.append(Route("/{path:path}", http_responses, methods=list(ANY_METHOD)))
    return KeepRawSend(Starlette(routes=routes))


def create_app(state: ServerState) -> ASGIApp:
    """The app of one server: the shared app, over `state`, or over the state of the session a request names."""
    app = _shared_app()

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await app(scope, receive, send)
            return
        try:
            target = state_for(state, scope)
        except SessionRefused as refused:
            await _refuse(scope, receive, send, refused)
            return
        scope[STATE_KEY] = target
        capture = target.capture
        capture.answering += 1
        try:
            await app(scope, receive, send)
        finally:
            capture.answering -= 1

    return serve


def session_named(scope: Scope) -> str | None:
    """The session a request names: its `x-rrkit-session` header, or an admin request's `session` query parameter."""
    header = SESSION_HEADER.encode()
    for name, value in scope.get("headers", ()):
        if name.lower() == header:
            return bytes(value).decode("latin-1")
    if str(scope["path"]).startswith(ADMIN_PREFIX):
        named = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1")).get(SESSION_PARAM)
        if named:
            return named[0]
    return None


def state_for(state: ServerState, scope: Scope) -> ServerState:
    """The state that answers a request: its session's (made on first use), else the server's own."""
    name = session_named(scope)
    if name is None or name == "" or state.sessions is None:
        return state
    return state.sessions.state_of(name)


async def _refuse(scope: Scope, receive: Receive, send: Send, refused: SessionRefused) -> None:
    """A request whose session cannot be had: an OpenAI-shaped error (over WebSocket, the upgrade refused)."""
    body = JSONResponse(
        errors.error_body(refused.message, type=errors.default_error_type(refused.status), code=refused.code),
        status_code=refused.status,
    )
    if scope["type"] == "http":
        await body(scope, receive, send)
        return
    scope[RAW_SEND] = send  # what `mark_denial_sent` finds uvicorn's protocol by
    websocket = WebSocket(scope, receive, send)
    await websocket.send_denial_response(body)
    mark_denial_sent(scope)
