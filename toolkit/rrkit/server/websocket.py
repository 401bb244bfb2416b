"""WebSocket: the upgrade (the key, then the scripted handshake: accept, refuse, delay); each accepted socket's
requests are `accepted_socket`'s."""

from __future__ import annotations

import asyncio

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from ..protocol import errors
from ..protocol.headers import TURN_STATE_HEADER
from .accepted_socket import AcceptedSocket
from .capture import Connection
from .respond import ABNORMAL_CLOSURE, ServerState, key_refused, scope_headers, state_of
from .stream import first_of
from .uvicorn_adapter import mark_denial_sent


async def websocket_responses(websocket: WebSocket) -> None:
    state = state_of(websocket.scope)
    query = websocket.scope.get("query_string", b"").decode("latin-1")
    connection = state.capture.new_connection(scope_headers(websocket.scope), query)
    try:
        await _serve_websocket(state, websocket, connection)
    finally:
        await state.source.connection_closed(connection.id)  # a proxying source closes its upstream socket


async def _serve_websocket(state: ServerState, websocket: WebSocket, connection: Connection) -> None:
    headers = connection.handshake_headers
    if (unauthorized := key_refused(state, headers)) is not None:
        connection.status = unauthorized.status
        await websocket.send_denial_response(JSONResponse(unauthorized.body, status_code=unauthorized.status))
        mark_denial_sent(websocket.scope)
        return
    handshake = await state.source.select_handshake(headers, connection_id=connection.id, query=connection.query)
    if handshake is not None and handshake.delay:
        await first_of(state.stopping or asyncio.Event(), timeout=handshake.delay)
    if handshake is not None and handshake.refuse is not None:
        body = handshake.refuse_body or errors.error_body(
            f"WebSocket upgrade refused with status {handshake.refuse}.",
            type=errors.default_error_type(handshake.refuse),
            code="upgrade_required" if handshake.refuse == errors.UPGRADE_REQUIRED else None,
        )
        refuse_headers = handshake.all_refuse_headers
        connection.status = handshake.refuse
        connection.response_headers = dict(refuse_headers)
        await websocket.send_denial_response(JSONResponse(body, status_code=handshake.refuse, headers=refuse_headers))
        mark_denial_sent(websocket.scope)
        return
    response_headers = dict(handshake.headers) if handshake else {}
    if handshake is not None and handshake.turn_state:
        response_headers[TURN_STATE_HEADER] = handshake.turn_state
    try:
        await websocket.accept(
            headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in response_headers.items()]
        )
    except OSError:  # the client gave up during a scripted handshake delay
        connection.closed_by, connection.close_code = "client", ABNORMAL_CLOSURE
        return
    connection.status = 101
    connection.response_headers = response_headers
    await AcceptedSocket(state, websocket, connection, handshake).run()
