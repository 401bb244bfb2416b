"""HTTP: `POST /v1/responses` answered as an SSE stream (`stream: true`) or as one JSON response object."""

from __future__ import annotations

import asyncio
import json
import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from ..protocol import errors
from ..protocol.events import terminal_event
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.outcome import STATED_KINDS, Outcome, OutcomeKind
from ..protocol.sse import encode_json
from ..script.plan import ResponsePlan
from .capture import Exchange
from .respond import (
    Rejected,
    Responder,
    ServerState,
    connection_transport,
    request_headers,
    store_if_completed,
)
from .stream import ChannelGone, first_of, play


class _PlayedResponse(Response):
    """A response whose body comes from playing a plan; the engine applies faults and records the events."""

    media_type = ""

    def __init__(self, state: ServerState, exchange: Exchange, plan: ResponsePlan, headers: dict[str, str]) -> None:
        super().__init__(status_code=200, headers=headers, media_type=self.media_type)
        self.raw_headers = [(name, value) for name, value in self.raw_headers if name != b"content-length"]
        self.state, self.exchange, self.plan = state, exchange, plan

    async def _play(self, channel: _SSEChannel, receive: Receive) -> Outcome:
        watcher = asyncio.create_task(_watch_disconnect(receive, channel.gone))
        try:
            outcome = self.exchange.outcome = await play(self.plan, self.exchange, channel)
            store_if_completed(self.state.http_store, self.exchange)
            return outcome
        finally:
            watcher.cancel()


class _SSEStream(_PlayedResponse):
    """A plan played as a `text/event-stream` body."""

    media_type = "text/event-stream"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await self._play(_SSEChannel(scope, send, self.state.stopping or asyncio.Event()), receive)


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
        transport = connection_transport(self.scope)
        if transport is None:
            raise ConnectionAbortedError("rrkit: scripted drop (no transport to close)")
        transport.close()
        await first_of(self.gone, timeout=1.0)

    async def finish(self) -> None:
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


async def http_responses(request: Request) -> Response:
    state: ServerState = request.app.state.rrkit
    responder = Responder(state)
    headers = request_headers(request.scope)
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


class _JSONBody(_PlayedResponse):
    """A request without `stream: true`: the plan is played (delays and faults included) into one JSON body,
    the final `response` object, as the real service answers a non-streaming request."""

    media_type = "application/json"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outcome = await self._play(_CollectingChannel(scope, send, self.state.stopping or asyncio.Event()), receive)
        if outcome.kind not in STATED_KINDS:
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
        await send({"type": "http.response.start", "status": status, "headers": self.raw_headers})
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
