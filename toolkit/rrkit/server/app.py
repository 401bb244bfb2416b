"""The fake Responses server as an ASGI app: `POST /v1/responses` streams SSE, the same path upgrades to WebSocket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..protocol import errors
from ..protocol.events import done_items, response_id_of, terminal_event
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.ids import IdGenerator
from ..protocol.incremental import logical_from_wire, rebuild_logical
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.request import Item, ResponseCreateFrame, ResponsesRequest, input_items
from ..protocol.sse import encode_json
from ..script.models import Handshake
from ..script.plan import RecordedReply, ResponsePlan, render
from ..script.select import Answer, NoMatch, ReplySource, RequestView
from .capture import Capture, Connection, Exchange
from .stream import ChannelGone, first_of, play

log = logging.getLogger("rrkit.server")

NO_MATCH_CODE = "rrkit_no_matching_reply"
ABNORMAL_CLOSURE = 1006  # the WebSocket close code for "closed without a close frame"


@dataclass
class Stored:
    """A completed response, kept so that a later request can name it as `previous_response_id`."""

    logical_input: list[Item]
    output: list[Item]


@dataclass
class ServerState:
    source: ReplySource
    capture: Capture = field(default_factory=Capture)
    ids: IdGenerator = field(default_factory=IdGenerator)
    http_store: dict[str, Stored] = field(default_factory=dict)
    stopping: asyncio.Event | None = None  # set by the runner on shutdown; ends stalls and pauses


class Rejected(Exception):
    """A request answered with an error before any stream event."""

    def __init__(self, status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        super().__init__(body.get("error", {}).get("message", ""))
        self.status = status
        self.body = body
        self.headers = dict(headers or {})

    @property
    def fields(self) -> dict[str, Any]:
        """The `error` object of the body (empty for a raw scripted body without one)."""
        error = self.body.get("error")
        return error if isinstance(error, dict) else {}

    def outcome(self) -> Outcome:
        fields = self.fields
        return Outcome(OutcomeKind.REFUSED, status=self.status, code=fields.get("code"), message=fields.get("message"))


def _headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


def _transport(scope: Scope) -> asyncio.Transport | None:
    """The connection's transport, reached through the server's own `send` (uvicorn's protocol object)."""
    owner = getattr(scope.get("rrkit.raw_send"), "__self__", None)
    transport = getattr(owner, "transport", None)
    return transport if isinstance(transport, asyncio.BaseTransport) else None  # type: ignore[return-value]


class _KeepRawSend:
    """Outermost middleware: remembers the server's `send` so that faults can cut the TCP connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["rrkit.raw_send"] = send
        await self.app(scope, receive, send)


def _param(loc: tuple[int | str, ...]) -> str | None:
    """The OpenAI-style `param` of a validation error: the field and any list indexes (`tools[0]`),
    without pydantic's union member labels (`input.list[dict[str,any]]` is `input`)."""
    if not loc:
        return None
    param = str(loc[0])
    for part in loc[1:]:
        if not isinstance(part, int):
            break
        param += f"[{part}]"
    return param


def _validation_rejection(error: ValidationError, what: str) -> Rejected:
    problem = error.errors()[0]
    param = _param(problem["loc"])
    message = f"Invalid {what}: field {param!r}: {problem['msg']}" if param else f"Invalid {what}: {problem['msg']}"
    return Rejected(400, errors.error_body(message, param=param))


class Responder:
    """The per-request logic shared by both transports: validate, rebuild, pick a reply, plan it."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def parse(self, body: Any, *, transport: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise Rejected(
                400, errors.error_body(f"The request body must be a JSON object, got {type(body).__name__}.")
            )
        model = ResponseCreateFrame if transport == "ws" else ResponsesRequest
        try:
            model.model_validate(body)
        except ValidationError as error:
            raise _validation_rejection(
                error, "response.create frame" if transport == "ws" else "request body"
            ) from None
        return body

    def logical(self, wire: dict[str, Any], store: Mapping[str, Stored]) -> dict[str, Any]:
        previous = wire.get("previous_response_id")
        if not previous:
            return logical_from_wire(wire)
        stored = store.get(previous)
        if stored is None:
            message = f"Previous response with id '{previous}' not found."
            raise Rejected(
                400,
                errors.error_body(message, code=errors.PREVIOUS_RESPONSE_NOT_FOUND, param="previous_response_id"),
            )
        return rebuild_logical(wire, stored.logical_input, stored.output)

    async def plan(
        self, exchange: Exchange, headers: dict[str, str], wire: dict[str, Any], logical: dict[str, Any]
    ) -> tuple[Answer, ResponsePlan]:
        view = RequestView(exchange.transport, headers, wire, logical, exchange.connection_id)
        chosen = await self.state.source.select(view)
        exchange.replayed = isinstance(chosen, RecordedReply)
        if isinstance(chosen, NoMatch):
            message = chosen.message()
            log.warning("%s", message)
            raise Rejected(400, errors.error_body(message, type_="rrkit_no_match", code=NO_MATCH_CODE))
        if chosen.reject is not None:
            reject = chosen.reject
            body = reject.body or errors.error_body(
                reject.message or f"Scripted error {reject.status}.",
                type_=reject.type or errors.default_error_type(reject.status),
                code=reject.code,
                param=reject.param,
            )
            raise Rejected(reject.status, body, reject.headers)
        return chosen, render(chosen, logical, transport=exchange.transport, ids=self.state.ids)


# ---------------------------------------------------------------------------------------------
# HTTP + SSE


class _SSEStream(Response):
    """Plays a plan as a `text/event-stream` body; the engine applies faults and records the events."""

    def __init__(self, state: ServerState, exchange: Exchange, plan: ResponsePlan, headers: dict[str, str]) -> None:
        super().__init__(status_code=200, headers=headers, media_type="text/event-stream")
        self.raw_headers = [(name, value) for name, value in self.raw_headers if name != b"content-length"]
        self.state, self.exchange, self.plan = state, exchange, plan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        channel = _SSEChannel(scope, send, self.state.stopping or asyncio.Event())
        watcher = asyncio.create_task(_watch_disconnect(receive, channel.gone))
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            self.exchange.outcome = await play(self.plan, self.exchange, channel)
            _store_if_completed(self.state.http_store, self.exchange)
        finally:
            watcher.cancel()


class _SSEChannel:
    def __init__(self, scope: Scope, send: Send, stopping: asyncio.Event) -> None:
        self.scope, self._send, self.stopping = scope, send, stopping
        self.gone = asyncio.Event()

    async def send(self, wire: str | bytes) -> None:
        if self.gone.is_set():
            raise ChannelGone
        body = wire if isinstance(wire, bytes) else wire.encode()
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def pause(self, seconds: float) -> bool:
        return await first_of(self.gone, self.stopping, timeout=seconds)

    async def stall(self) -> None:
        await first_of(self.gone, self.stopping)

    async def cut(self, close: str, code: int, reason: str) -> None:
        """End the connection without the body's final chunk, so the client sees a cut stream."""
        transport = _transport(self.scope)
        if transport is None:
            raise ConnectionAbortedError("rrkit: scripted drop (no transport to close)")
        transport.close()
        await first_of(self.gone, timeout=1.0)

    async def finish(self) -> None:
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


async def http_responses(request: Request) -> Response:
    state: ServerState = request.app.state.rrkit
    responder = Responder(state)
    headers = _headers(request.scope)
    raw = await request.body()
    exchange = state.capture.new_exchange("http", headers, None)
    try:
        try:
            body = json.loads(raw)
        except ValueError as error:
            exchange.raw_body = raw.decode("utf-8", errors="replace")
            raise Rejected(400, errors.error_body(f"The request body is not valid JSON: {error}.")) from None
        if not isinstance(body, dict):
            exchange.raw_body = raw.decode("utf-8", errors="replace")
        wire = responder.parse(body, transport="http")
        exchange.wire_request = wire
        logical = exchange.logical_request = responder.logical(wire, state.http_store)
        reply, plan = await responder.plan(exchange, headers, wire, logical)
    except Rejected as rejected:
        exchange.response_status = rejected.status
        exchange.response_headers = rejected.headers
        exchange.outcome = rejected.outcome()
        return JSONResponse(rejected.body, status_code=rejected.status, headers=rejected.headers)
    exchange.response_id = plan.response_id
    response_headers = {
        "cache-control": "no-cache",
        "x-request-id": "req_" + secrets.token_hex(8),
        "openai-model": str(reply.model or logical.get("model") or "gpt-rrkit"),
        **({TURN_STATE_HEADER: reply.turn_state} if reply.turn_state else {}),
        **reply.headers,
    }
    response: _SSEStream | _JSONBody
    if wire.get("stream") is True:
        response = _SSEStream(state, exchange, plan, response_headers)
    else:
        response = _JSONBody(state, exchange, plan, response_headers)
    exchange.response_status = response.status_code
    exchange.response_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in response.raw_headers}
    return response


def _store_if_completed(store: dict[str, Stored], exchange: Exchange) -> None:
    """A response can be named as `previous_response_id` once (and only if) it completed."""
    sent = [sent.event for sent in exchange.events]
    response_id = exchange.response_id = exchange.response_id or response_id_of(sent)
    if exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED and response_id:
        store[response_id] = Stored(input_items(exchange.logical_request or {}), done_items(sent))


class _JSONBody(Response):
    """A request without `stream: true`: the plan is played (delays and faults included) into one JSON body,
    the final `response` object, as the real service answers a non-streaming request."""

    def __init__(self, state: ServerState, exchange: Exchange, plan: ResponsePlan, headers: dict[str, str]) -> None:
        super().__init__(status_code=200, headers=headers, media_type="application/json")
        self.raw_headers = [(name, value) for name, value in self.raw_headers if name != b"content-length"]
        self.state, self.exchange, self.plan = state, exchange, plan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        channel = _CollectingChannel(scope, send, self.state.stopping or asyncio.Event())
        watcher = asyncio.create_task(_watch_disconnect(receive, channel.gone))
        try:
            outcome = self.exchange.outcome = await play(self.plan, self.exchange, channel)
            _store_if_completed(self.state.http_store, self.exchange)
        finally:
            watcher.cancel()
        if outcome.kind in (OutcomeKind.DROPPED, OutcomeKind.STALLED, OutcomeKind.DISCONNECTED):
            return
        terminal = terminal_event([sent.event for sent in self.exchange.events]) or {}
        if outcome.kind is OutcomeKind.ERRORED or "response" not in terminal:
            error = errors.error_object(
                str(terminal.get("message") or "The server had an error."),
                type_="server_error",
                code=terminal.get("code"),
            )
            status, body = 500, {"error": error}
        else:
            status, body = 200, terminal["response"]
        self.exchange.response_status = status
        headers = [(k, v) for k, v in self.raw_headers]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": encode_json(body)})


class _CollectingChannel(_SSEChannel):
    """Events are gathered, not sent: the body goes out in one piece at the end."""

    async def send(self, wire: str | bytes) -> None:
        if self.gone.is_set():
            raise ChannelGone

    async def finish(self) -> None:
        return None


async def _watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


# ---------------------------------------------------------------------------------------------
# WebSocket


class _WebSocketSession:
    """One accepted socket: many requests in sequence, each answered by playing its plan as frames.

    It is the engine's channel for its own socket (send, pause, stall, cut, finish)."""

    def __init__(
        self, state: ServerState, websocket: WebSocket, connection: Connection, handshake: Handshake | None
    ) -> None:
        self.state, self.ws, self.connection, self.handshake = state, websocket, connection, handshake
        self.store: dict[str, Stored] = {}
        self.responder = Responder(state)
        self.stopping = state.stopping or asyncio.Event()

    async def run(self) -> None:
        served = 0
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                self.connection.closed_by = self.connection.closed_by or "client"
                self.connection.close_code = message.get("code")
                return
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
            keep_open = await self._request(text)
            served += 1
            if not keep_open:
                return
            limit = self.handshake.close_after if self.handshake else None
            if limit is not None and served >= limit:
                assert self.handshake is not None
                await self.cut(self.handshake.close, self.handshake.close_code, "")
                return

    async def _request(self, text: str) -> bool:
        """Answer one client frame; False when the socket is finished."""
        exchange = self.state.capture.new_exchange("ws", self.connection.handshake_headers, None, self.connection)
        try:
            try:
                body = json.loads(text)
            except ValueError as error:
                exchange.raw_body = text
                raise Rejected(
                    400, errors.error_body(f"The frame is not valid JSON: {error}.", code="invalid_json")
                ) from None
            if not isinstance(body, dict) or body.get("type") != "response.create":
                exchange.raw_body = text
                kind = body.get("type") if isinstance(body, dict) else type(body).__name__
                raise Rejected(
                    400,
                    errors.error_body(
                        f"Unsupported frame type {kind!r}: this server answers 'response.create' frames only.",
                        code="unsupported_frame_type",
                        param="type",
                    ),
                )
            wire = self.responder.parse(body, transport="ws")
            exchange.wire_request = wire
            logical = exchange.logical_request = self.responder.logical(wire, self.store)
            _answer, plan = await self.responder.plan(exchange, self.connection.handshake_headers, wire, logical)
        except Rejected as rejected:
            fields = rejected.fields
            frame = errors.error_frame(
                rejected.status,
                str(fields.get("message", "")),
                type_=fields.get("type"),
                code=fields.get("code"),
                param=fields.get("param"),
                headers=rejected.headers or None,
            )
            exchange.response_status = rejected.status
            exchange.outcome = rejected.outcome()
            try:
                await self.ws.send_text(json.dumps(frame))
            except (OSError, WebSocketDisconnect, RuntimeError):
                return False
            return True
        exchange.response_id = plan.response_id
        exchange.outcome = outcome = await play(plan, exchange, self)
        _store_if_completed(self.store, exchange)
        return outcome.kind in (OutcomeKind.COMPLETED, OutcomeKind.FAILED, OutcomeKind.INCOMPLETE, OutcomeKind.ERRORED)

    async def send(self, wire: str | bytes) -> None:
        try:
            await self.ws.send({"type": "websocket.send", "text": wire})
        except (OSError, WebSocketDisconnect, RuntimeError) as error:
            self._client_gone(error.code if isinstance(error, WebSocketDisconnect) else ABNORMAL_CLOSURE)
            raise ChannelGone from error

    async def pause(self, seconds: float) -> bool:
        return await first_of(self.stopping, timeout=seconds)

    async def finish(self) -> None:
        """A WebSocket response ends with its terminal event; the socket stays open."""

    def _client_gone(self, code: int | None) -> None:
        """Record that the client went away (1006: without a close frame), unless the server closed first."""
        if self.connection.closed_by is None:
            self.connection.closed_by, self.connection.close_code = "client", code

    async def stall(self) -> None:
        """Send nothing more; wait for the client to give up (or the server to stop)."""
        receiver = asyncio.create_task(self._drain_until_disconnect())
        try:
            await first_of(self.stopping, _task_done(receiver))
        finally:
            receiver.cancel()

    async def _drain_until_disconnect(self) -> None:
        while (message := await self.ws.receive())["type"] != "websocket.disconnect":
            pass
        self._client_gone(message.get("code"))

    async def cut(self, how: str, code: int, reason: str) -> None:
        if how == "tcp":
            transport = _transport(self.ws.scope)
            if transport is None:
                raise ConnectionAbortedError("rrkit: scripted TCP close (no transport to close)")
            transport.close()
            self.connection.closed_by = "tcp"
            return
        self.connection.closed_by, self.connection.close_code = "server", code
        with contextlib.suppress(OSError, RuntimeError):
            await self.ws.close(code, reason)


def _task_done(task: asyncio.Task[None]) -> asyncio.Event:
    done = asyncio.Event()
    task.add_done_callback(lambda _: done.set())
    return done


async def websocket_responses(websocket: WebSocket) -> None:
    state: ServerState = websocket.app.state.rrkit
    connection = state.capture.new_connection(_headers(websocket.scope))
    try:
        await _serve_websocket(state, websocket, connection)
    finally:
        await state.source.connection_closed(connection.id)  # a proxying source closes its upstream socket


async def _serve_websocket(state: ServerState, websocket: WebSocket, connection: Connection) -> None:
    headers = connection.handshake_headers
    handshake = await state.source.select_handshake(headers, connection_id=connection.id)
    if handshake is not None and handshake.delay:
        await first_of(state.stopping or asyncio.Event(), timeout=handshake.delay)
    if handshake is not None and handshake.refuse is not None:
        body = handshake.refuse_body or errors.error_body(
            f"WebSocket upgrade refused with status {handshake.refuse}.",
            type_=errors.default_error_type(handshake.refuse),
            code="upgrade_required" if handshake.refuse == errors.UPGRADE_REQUIRED else None,
        )
        connection.status = handshake.refuse
        connection.response_headers = dict(handshake.refuse_headers)
        await websocket.send_denial_response(
            JSONResponse(body, status_code=handshake.refuse, headers=handshake.refuse_headers)
        )
        _mark_denial_sent(websocket.scope)
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
    await _WebSocketSession(state, websocket, connection, handshake).run()


def _mark_denial_sent(scope: Scope) -> None:
    """uvicorn's websockets-sansio protocol does not count a denial response as a finished handshake and
    logs a spurious "ASGI callable returned without completing handshake" error (Kludex/uvicorn#3138)."""
    owner = getattr(scope.get("rrkit.raw_send"), "__self__", None)
    if owner is not None and getattr(owner, "handshake_complete", None) is False:
        owner.handshake_complete = True


def create_app(state: ServerState) -> ASGIApp:
    routes: list[BaseRoute] = []
    for path in ("/v1/responses", "/responses"):
        routes.append(Route(path, http_responses, methods=["POST"]))
        routes.append(WebSocketRoute(path, websocket_responses))
    app = Starlette(routes=routes)
    app.state.rrkit = state
    return _KeepRawSend(app)
