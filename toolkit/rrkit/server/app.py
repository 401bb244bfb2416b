"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket,
every other method and path is a route of the resource (server/resources.py); the admin API lives under `/__rrkit`
(admin.py)."""

from __future__ import annotations

import functools
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from ..protocol import errors
from ..protocol.headers import SESSION_HEADER
from .admin import ADMIN_PREFIX, admin_app, admin_health
from .http import answer_resource, deny, resource_routes
from .respond import NO_MATCH_CODE, STATE_KEY, ServerState
from .sessions import SESSION_PARAM, SessionRefused
from .state import AfterBurst
from .uvicorn_adapter import KeepRawSend
from .websocket import websocket_responses

__all__ = ["NO_MATCH_CODE", "ServerState", "create_app"]


@functools.cache
def _shared_app() -> ASGIApp:
    """The app of the admin API and of WebSocket upgrades every server of the process runs (built once: a fresh
    server per test costs less); each request finds its server's state in its scope. Every other HTTP request
    goes straight to the resource (`_RESOURCE`), past Starlette's router and middleware: the hot path under load."""
    table: list[BaseRoute] = [WebSocketRoute(path, websocket_responses) for path in ("/v1/responses", "/responses")]
    table.append(Route(ADMIN_PREFIX, admin_health, methods=["GET"]))  # `/__rrkit` as `/__rrkit/`, no redirect
    table.append(Mount(ADMIN_PREFIX, app=admin_app()))
    app = Starlette(routes=table, exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.router.default = resource_routes  # a WebSocket upgrade to another path, refused there
    app.router.redirect_slashes = False
    return KeepRawSend(app)


_RESOURCE = KeepRawSend(answer_resource)
_ADMIN = ADMIN_PREFIX + "/"


async def _server_error(request: Request, exc: Exception) -> Response:
    """An error rrkit did not catch: a 500 in the API's shape naming it (a bug in rrkit: the traceback is logged)."""
    return JSONResponse(errors.unexpected_error_body(request.method, request.url.path, exc), status_code=500)


async def _http_error(request: Request, exc: Exception) -> Response:
    """An HTTP error Starlette raises before rrkit's code answers (a method an admin endpoint does not take), as
    the API's JSON error."""
    assert isinstance(exc, HTTPException)
    where = f"{request.method} {request.url.path}"
    allow = (exc.headers or {}).get("Allow")
    message = f"{where}: {exc.detail}" + (f"; use {allow}." if allow else ".")
    body = errors.error_body(message, type=errors.default_error_type(exc.status_code))
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def create_app(state: ServerState) -> ASGIApp:
    """The app of one server: the shared app, over `state`, or over the state of the session a request names."""
    after_burst = AfterBurst()

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await _shared_app()(scope, receive, send)
            return
        try:
            target = state_for(state, scope)
        except SessionRefused as refused:
            await _refuse(scope, receive, send, refused)
            return
        scope[STATE_KEY] = target
        capture = target.capture
        capture.answering += 1
        after_burst.begin()
        path = scope["path"]  # any other HTTP path, a newline or a trailing slash in it too, is the resource's
        routed = scope["type"] != "http" or path == ADMIN_PREFIX or path.startswith(_ADMIN)
        try:
            await (_shared_app() if routed else _RESOURCE)(scope, receive, send)
        finally:
            capture.answering -= 1
            after_burst.end()

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
    body = errors.error_body(refused.message, type=errors.default_error_type(refused.status), code=refused.code)
    await deny(scope, receive, send, refused.status, body)
