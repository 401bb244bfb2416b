"""HTTP: `POST /v1/responses` answered as an SSE stream (`stream: true`), as one JSON response object, or with
a whole body exactly as a reply source gives it (a relayed or recorded page, error or response object)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from ..protocol import errors, routes
from ..protocol.encoding import decode_body
from ..protocol.exceptions import BodyEncodingError, BodyTooLarge
from ..protocol.headers import TURN_STATE_HEADER, is_header_value
from ..protocol.jsontext import UnsafeJSON, parse_json
from ..protocol.limits import shown_size
from ..protocol.outcome import STATED_KINDS, OutcomeKind, outcome_of_body
from ..protocol.plan import NO_FAULT, ResponsePlan, StreamFault
from ..protocol.routes import Route, api_path, route_of
from ..protocol.sse import encode_json
from ..protocol.vocabulary import LINE_ENDINGS, CloseKind
from ..script.select import RequestView
from . import resources
from .capture import Exchange
from .respond import (
    RequestRefused,
    Responder,
    ServerState,
    invalid_request,
    key_refused,
    scope_headers,
    state_of,
    store_ended,
)
from .stream import ChannelGone, Gone, first_of, play, until_client_leaves
from .uvicorn_adapter import RAW_SEND, connection_transport, corked, mark_denial_sent, one_write


async def answer_resource(scope: Scope, receive: Receive, send: Send) -> None:
    """An HTTP request to a route of the resource (any method, any path, a newline in it too), answered by the store
    or relayed, with nothing between it and the server's outermost layer (each would wrap every send of a
    stream); that layer answers an error that escapes (`KeepRawSend`)."""
    await _Answer(state_of(scope), Request(scope, receive, send))(scope, receive, send)


async def resource_routes(scope: Scope, receive: Receive, send: Send) -> None:
    """Any request no pattern of the app routes (the router's default): over HTTP a route of the resource; a
    WebSocket upgrade elsewhere than `/v1/responses` is refused with the API's 404."""
    if scope["type"] == "http":
        await answer_resource(scope, receive, send)
        return
    message = f"Invalid URL (GET {scope['path']}): a WebSocket connects to {routes.API_PREFIX}/responses."
    await deny(scope, receive, send, 404, errors.error_body(message))


async def deny(scope: Scope, receive: Receive, send: Send, status: int, body: Mapping[str, object]) -> None:
    """An error in the API's JSON shape, answered over HTTP or as the refusal of a WebSocket upgrade."""
    answer = JSONResponse(body, status_code=status)
    if scope["type"] == "http":
        await answer(scope, receive, send)
        return
    scope.setdefault(RAW_SEND, send)  # what `mark_denial_sent` finds uvicorn's protocol by (the server's own send)
    await WebSocket(scope, receive, send).send_denial_response(answer)
    mark_denial_sent(scope)


class _Answer(Response):
    """The whole answer to one request, sent by this object, so that one watcher of the client covers every
    stage: a client that leaves while the reply source still waits (an upstream) cancels that wait."""

    route: Route  # the request's, once its method and path are read

    def __init__(self, state: ServerState, request: Request) -> None:
        self.state, self.request = state, request
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        too_large: RequestRefused | None = None
        try:
            raw = await read_body(self.request, self.state.limits.body)
        except ClientDisconnect:  # gone (or the server stopping) before its request was whole: nothing to answer
            return
        except RequestRefused as refused:  # more than the limit: not read further
            raw, too_large = b"", refused
        exchange = self.state.capture.new_exchange(
            "http", scope_headers(scope), None, query=scope.get("query_string", b"").decode("latin-1")
        )
        exchange.method, exchange.path = scope["method"], api_path(scope["path"])
        # routed by the path as sent, its escapes kept: an id holding `%2F` is one segment
        self.route = route_of(exchange.method, bytes(scope.get("raw_path") or b"").decode("latin-1") or scope["path"])
        exchange.route = self.route.name
        gone = Gone()
        watcher = asyncio.create_task(_watch_disconnect(receive, gone)) if too_large is None else None
        try:
            answer = self._answer(scope, receive, send, exchange, raw, gone, too_large)
            await until_client_leaves(answer, gone)
        finally:
            if watcher is not None:
                watcher.cancel()
            if exchange.outcome is None:
                exchange.outcome = exchange.left()

    async def _answer(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        exchange: Exchange,
        raw: bytes,
        gone: asyncio.Event,
        too_large: RequestRefused | None = None,
    ) -> None:
        responder = Responder(self.state)
        headers = exchange.request_headers
        wire: dict[str, Any] = {}
        logical: dict[str, Any] = {}
        try:
            if (unauthorized := key_refused(self.state, headers)) is not None:
                raise unauthorized
            if too_large is not None:
                raise too_large
            if exchange.route != routes.CREATE:
                plan = await self._route_plan(responder, exchange, raw)
            else:
                body = _json_body(raw, headers, exchange, self.state.limits.decoded_body)
                wire = responder.parse(body, transport="http")
                exchange.wire_request = wire
                logical = exchange.logical_request = responder.logical(wire, self.state.http_store)
                plan = await responder.plan(exchange, headers, wire, logical, query=exchange.query, body=raw)
                if wire.get("background") is True and not self.state.source.answers_every_route:
                    plan = resources.begin_background(self.state, plan, exchange, wire, logical)
        except RequestRefused as rejected:
            content = encode_json(rejected.body)
            await _send_whole(scope, receive, send, exchange, rejected.status, content, rejected.headers)
            exchange.outcome = rejected.outcome()
            return
        exchange.response_id = plan.response_id
        if plan.body is not None:
            answer_headers = {**plan.headers, **({TURN_STATE_HEADER: plan.turn_state} if plan.turn_state else {})}
            body = plan.body
            await _send_whole(
                scope, receive, send, exchange, body.status, body.content, answer_headers, body.content_type
            )
            exchange.outcome = outcome_of_body(body.status, body.content)
            self._keep(exchange, wire)
            return
        streamed = wire.get("stream") is True or exchange.route != routes.CREATE
        media_type = "text/event-stream; charset=utf-8" if streamed else "application/json"
        response_headers = _played_headers(plan, logical, media_type)
        exchange.response_status = 200
        exchange.response_headers = dict(response_headers)
        stopping = self.state.stopping or asyncio.Event()
        if streamed:
            head = {"type": "http.response.start", "status": 200, "headers": _raw(response_headers)}
            channel = _SSEChannel(scope, send, stopping, gone, plan.fault, head)
            # pieces of a body (a fault) go out one write each, not gathered
            with corked(scope) if plan.fault.chunk_bytes is None else contextlib.nullcontext():
                exchange.outcome = await play(plan, exchange, channel)
        else:
            exchange.outcome = await play(plan, exchange, _CollectingChannel(scope, send, stopping, gone))
            if exchange.outcome.kind in STATED_KINDS:
                status, content = _final_body(exchange)
                exchange.response_status, exchange.response_body = status, content
                await send({"type": "http.response.start", "status": status, "headers": _raw(response_headers)})
                await send({"type": "http.response.body", "body": content})
        self._keep(exchange, wire)

    async def _route_plan(self, responder: Responder, exchange: Exchange, raw: bytes) -> ResponsePlan:
        """The plan on any route but the create: the source's own (a relay, a cassette, a scripted answer), else
        the store's."""
        wire: dict[str, Any] = {}
        relayed = self.state.source.answers_every_route  # a relay forwards any body, JSON or not
        if raw and (relayed or (exchange.route != routes.OTHER and exchange.method == "POST")):
            try:
                body = _json_body(raw, exchange.request_headers, exchange, self.state.limits.decoded_body)
            except RequestRefused:
                if not relayed:
                    raise
                body = None
            if isinstance(body, dict):
                wire = exchange.wire_request = body
            elif not relayed and exchange.route != routes.OTHER:
                raise RequestRefused(400, errors.error_body("The request body must be a JSON object."))
        view = RequestView(
            "http",
            exchange.request_headers,
            wire,
            wire,
            None,
            exchange.query,
            raw,
            ids=self.state.ids,
            method=exchange.method,
            path=exchange.path,
            route=self.route,
        )
        chosen = await responder.select_route(exchange, view)
        if chosen is not None and (
            chosen.body is not None or chosen.has_events or self.state.source.answers_every_route
        ):
            return chosen
        plan = resources.answer(self.state, view)
        if plan.rejection is not None:
            raise RequestRefused.of(plan.rejection)
        if chosen is None:
            return plan
        # a scripted fault or headers, over the store's own answer (a resumed stream cut, a poll with a header)
        headers = {**plan.headers, **chosen.headers}
        return (
            replace(plan, headers=headers)
            if plan.body is not None
            else replace(plan, fault=chosen.fault, headers=headers)
        )

    def _keep(self, exchange: Exchange, wire: Mapping[str, Any]) -> None:
        """A create's response kept, once ended (a background one keeps itself)."""
        if exchange.route != routes.CREATE or (
            wire.get("background") is True and not self.state.source.answers_every_route
        ):
            return
        own = not self.state.source.answers_every_route
        # `store: false` is not kept: a later `previous_response_id` to it is not found, as the service answers
        kept = not (own and wire.get("store") is False)
        store_ended(self.state.http_store, exchange, keep_object=own and kept, kept=kept)
        if own:  # a conversation keeps what its responses said, stored or not
            resources.add_to_conversation(self.state, exchange, wire)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body as sent; one longer than `limit` (by its Content-Length, or as it arrives) is a 413."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise _too_large(f"is {int(length)} bytes", limit, "body")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(f"is more than {limit} bytes", limit, "body")
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(what: str, limit: int, setting: str) -> RequestRefused:
    message = (
        f"The request body {what}; this server takes at most {shown_size(limit)} ({setting}; raise it with "
        f"`--limit {setting}=SIZE`)."
    )
    return RequestRefused(413, errors.error_body(message, code=errors.REQUEST_TOO_LARGE), limit=setting)


def _json_body(raw: bytes, headers: Mapping[str, str], exchange: Exchange, limit: int) -> object:
    """The request body as JSON, its `Content-Encoding` undone (the bytes as sent are what a relay forwards)."""
    try:
        decoded = decode_body(raw, headers.get("content-encoding"), limit)
    except BodyTooLarge as error:
        raise _too_large(f"decodes to more than {limit} bytes ({error})", limit, "decoded-body") from None
    except BodyEncodingError as error:
        raise RequestRefused(400, errors.error_body(f"The request body could not be decoded: {error}.")) from None
    try:
        body = parse_json(decoded)
    except UnsafeJSON as error:
        exchange.raw_body = decoded.decode("utf-8", errors="replace")
        raise invalid_request(error) from None
    if not isinstance(body, dict):
        exchange.raw_body = decoded.decode("utf-8", errors="replace")
    return body


def _played_headers(plan: ResponsePlan, logical: Mapping[str, object], media_type: str) -> dict[str, str]:
    return {
        "content-type": media_type,
        "cache-control": "no-cache",
        "x-request-id": "req_" + secrets.token_hex(8),
        **_if_header_value("openai-model", plan.model or logical.get("model") or "gpt-rrkit"),
        **({TURN_STATE_HEADER: plan.turn_state} if plan.turn_state else {}),
        **plan.headers,
    }


def _if_header_value(name: str, value: object) -> dict[str, str]:
    """`{name: value}` if the value (taken from a request) may be sent as a header, else nothing: a model named
    `gpt-模型` or `gpt\r\nx-injected: yes` is echoed in the body, never in a header."""
    return {name: value} if isinstance(value, str) and is_header_value(value) else {}


def _raw(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


async def _send_whole(
    scope: Scope,
    receive: Receive,
    send: Send,
    exchange: Exchange,
    status: int,
    content: bytes,
    headers: Mapping[str, str],
    media_type: str = "application/json",
) -> None:
    """One whole body with its status, recorded as sent."""
    response = Response(content, status_code=status, headers=dict(headers), media_type=media_type)
    exchange.response_status = status
    exchange.response_headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in response.raw_headers}
    exchange.response_body = content
    await response(scope, receive, send)


class _SSEChannel:
    """An SSE body; a plan's fault says how its bytes go out (in pieces, with other line endings). Its `head` (the
    response's start) goes out in one write with the first events, or alone before the stream first waits or ends:
    a client never waits on a head that is ready."""

    def __init__(
        self,
        scope: Scope,
        send: Send,
        stopping: asyncio.Event,
        gone: asyncio.Event,
        fault: StreamFault = NO_FAULT,
        head: Message | None = None,
    ) -> None:
        self.scope, self._send, self.stopping, self.gone = scope, send, stopping, gone
        self.fault = fault
        self._head = head

    async def _begin(self) -> None:
        """The head, if it has not gone out yet."""
        head, self._head = self._head, None
        if head is not None:
            await self._send(head)

    async def _body(self, message: Message) -> None:
        """A body message, in one write with the head if that has not gone out yet."""
        if self._head is None:
            await self._send(message)
            return
        with one_write(self.scope):
            await self._begin()
            await self._send(message)

    async def send(self, wires: Sequence[str | bytes]) -> None:
        if self.gone.is_set():
            raise ChannelGone
        body = b"".join(cast(Sequence[bytes], wires))  # an SSE event's wire is its frame's bytes (protocol.plan)
        fault = self.fault
        if fault.line_ending != "lf":  # every newline of an SSE frame ends a line (JSON data holds none)
            body = body.replace(b"\n", LINE_ENDINGS[fault.line_ending])
        if fault.chunk_bytes is None:
            await self._body({"type": "http.response.body", "body": body, "more_body": True})
            return
        for start in range(0, len(body), fault.chunk_bytes):
            if start and fault.chunk_delay and await self.pause(fault.chunk_delay):
                raise ChannelGone
            piece = body[start : start + fault.chunk_bytes]
            await self._body({"type": "http.response.body", "body": piece, "more_body": True})

    async def pause(self, seconds: float) -> bool:
        await self._begin()
        return await first_of(self.gone, self.stopping, timeout=seconds)

    async def stall(self) -> None:
        await self._begin()
        await first_of(self.gone, self.stopping)

    async def cut(self, close: CloseKind, code: int, reason: str) -> None:
        """End the connection without the body's final chunk, so the client sees a cut stream; `end`: send the
        final chunk, so the body ends as a whole one does (before any terminal event)."""
        if close == "end":
            await self.finish()
            return
        await self._begin()
        transport = connection_transport(self.scope)
        if transport is None:
            raise ConnectionAbortedError("rrkit: scripted drop (no transport to close)")
        transport.close()
        await first_of(self.gone, timeout=1.0)

    async def finish(self) -> None:
        await self._body({"type": "http.response.body", "body": b"", "more_body": False})


class _CollectingChannel(_SSEChannel):
    """A request without `stream: true`: events are gathered, not sent; the body goes out in one piece at the
    end, the final `response` object, as the real service answers (delays and faults still apply)."""

    async def send(self, wires: Sequence[str | bytes]) -> None:
        if self.gone.is_set():
            raise ChannelGone

    async def finish(self) -> None:
        return None


def _final_body(exchange: Exchange) -> tuple[int, bytes]:
    """The status and JSON body that state a played response: its final `response` object, or a 500 error."""
    ending = exchange.events.last_ending()
    terminal = {} if ending is None else ending.event
    errored = exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.ERRORED
    if errored or "response" not in terminal:
        error = errors.error_object(
            str(terminal.get("message") or "The server had an error."), type="server_error", code=terminal.get("code")
        )
        return 500, encode_json({"error": error})
    return 200, encode_json(terminal["response"])


async def _watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()
