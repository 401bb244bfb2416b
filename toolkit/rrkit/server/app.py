"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket,
every other method and path is a route of the resource (server/resources.py); the admin API lives under `/__rrkit`
(admin.py)."""

from __future__ import annotations

import functools

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from .admin import ADMIN_PREFIX, admin_app, admin_health
from .http import ANY_METHOD, http_responses
from .respond import NO_MATCH_CODE, STATE_KEY, ServerState
from .uvicorn_adapter import KeepRawSend
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
    """The app of one server: the shared app, over `state`."""
    app = _shared_app()

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        scope[STATE_KEY] = state
        capture = state.capture
        capture.answering += 1
        try:
            await app(scope, receive, send)
        finally:
            capture.answering -= 1

    return serve
