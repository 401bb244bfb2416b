"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from .http import http_responses
from .respond import NO_MATCH_CODE, RAW_SEND, ServerState
from .websocket import websocket_responses

__all__ = ["NO_MATCH_CODE", "ServerState", "create_app"]


class _KeepRawSend:
    """Outermost middleware: remembers the server's `send` so that faults can cut the TCP connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[RAW_SEND] = send
        await self.app(scope, receive, send)


def create_app(state: ServerState) -> ASGIApp:
    routes: list[BaseRoute] = []
    for path in ("/v1/responses", "/responses"):
        routes.append(Route(path, http_responses, methods=["POST"]))
        routes.append(WebSocketRoute(path, websocket_responses))
    app = Starlette(routes=routes)
    app.state.rrkit = state
    return _KeepRawSend(app)
