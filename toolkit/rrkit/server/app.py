"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp

from .http import http_responses
from .respond import NO_MATCH_CODE, ServerState
from .uvicorn_adapter import KeepRawSend
from .websocket import websocket_responses

__all__ = ["NO_MATCH_CODE", "ServerState", "create_app"]


def create_app(state: ServerState) -> ASGIApp:
    routes: list[BaseRoute] = []
    for path in ("/v1/responses", "/responses"):
        routes.append(Route(path, http_responses, methods=["POST"]))
        routes.append(WebSocketRoute(path, websocket_responses))
    app = Starlette(routes=routes)
    app.state.rrkit = state
    return KeepRawSend(app)
