"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket;
the admin API lives under `/__rrkit` (admin.py)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp

from .admin import ADMIN_PREFIX, admin_app
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
    admin, answers = admin_app(state)
    routes.append(Route(ADMIN_PREFIX, answers.health, methods=["GET"]))  # `/__rrkit` as `/__rrkit/`, no redirect
    routes.append(Mount(ADMIN_PREFIX, app=admin))
    app = Starlette(routes=routes)
    app.state.rrkit = state
    return KeepRawSend(app)
