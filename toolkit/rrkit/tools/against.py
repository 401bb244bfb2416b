"""`rrkit replay --against URL`: a cassette as a check of a server. Its recorded requests are sent, in order and
on the same connections, each on its route (a create, a retrieve, a conversation's items, ...), to a live server;
what that server answers is recorded like a cassette, to be diffed against the recorded answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from ..cassette.format import (
    Cassette,
    RecordedBody,
    RecordedConnection,
    RecordedEvent,
    RecordedExchange,
    RecordedHandshake,
)
from ..client.ws_transport import websocket_url
from ..protocol.events import ENDING_TYPES, SIDE_CHANNELS, SSE_COMMENT, response_id_of
from ..protocol.outcome import Outcome, OutcomeKind, outcome_of_body, outcome_of_events
from ..protocol.plan import event_of_data
from ..protocol.sse import SSEDecoder
from ..protocol.vocabulary import ClosedBy

IDLE_TIMEOUT = 30.0
"""Seconds the server may stay silent mid-answer before the stream counts as stalled."""
CLOSE_WAIT = 1.0
"""Seconds to wait for a server to close a connection the recording says it closed."""
STALL_WAIT = 1.0
"""Seconds to wait on a stream the recording says stalled: long enough to see that it does not go on."""
TEXT_PATHS = (
    "events[*].delta",
    "events[*].text",
    "events[*].part.text",
    "events[*].item.content[*].text",
    "events[*].response.output[*].content[*].text",
    "response_body.json.output[*].content[*].text",
    "events[*].message",
    "events[*].error.message",
    "events[*].response.error.message",
    "response_body.json.error.message",
    "outcome.message",
)
"""What a live server words its own way: texts and error messages are not compared (their structure and the
error codes are), nor are ids and times."""
_NOT_SENT = frozenset({"host", "content-length", "connection", "transfer-encoding", "accept-encoding", "upgrade"})
_NOT_KEPT = frozenset({"transfer-encoding", "connection", "keep-alive", "date", "server", "upgrade"})
"""Response headers of the connection itself, which a server's capture never records."""
_NOT_KEPT_HANDSHAKE = _NOT_KEPT | {"content-type", "content-length"}


def _kept(items: Iterable[tuple[str, str]], dropped: frozenset[str] = _NOT_KEPT) -> dict[str, str]:
    return {
        name.lower(): value
        for name, value in items
        if name.lower() not in dropped and not name.lower().startswith("sec-websocket-")
    }


def _sendable(headers: Mapping[str, str]) -> dict[str, str]:
    """Recorded request headers fit to send again: no transport ones, no redacted placeholders."""
    return {
        name: value
        for name, value in headers.items()
        if name.lower() not in _NOT_SENT and not name.lower().startswith("sec-websocket-") and value != "[REDACTED]"
    }


_ID_KEYS = ("id", "call_id", "item_id")


def _ids_in(value: Any) -> list[str]:
    """The ids a server issued in an event, in document order."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in _ID_KEYS and isinstance(inner, str):
                found.append(inner)
            else:
                found += _ids_in(inner)
    elif isinstance(value, list):
        for inner in value:
            found += _ids_in(inner)
    return found


def _renamed(value: Any, ids: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {key: _renamed(inner, ids) for key, inner in value.items()}
    if isinstance(value, list):
        return [_renamed(inner, ids) for inner in value]
    return value


@dataclass
class _Live:
    """One live WebSocket standing for a recorded connection, and what is known of it."""

    recorded: RecordedConnection
    ws: ClientConnection | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    closed_by: ClosedBy | None = None
    close_code: int | None = None


class _Run:
    def __init__(self, base_url: str, cassette: Cassette, idle_timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.ws_url = websocket_url(self.base_url)
        self.cassette, self.idle_timeout = cassette, idle_timeout
        self.ids: dict[str, str] = {}  # recorded response id -> the live server's
        self._sent: dict[int, tuple[str, str]] = {}  # exchange id -> the path and query a route's request went to
        self.live: dict[int, _Live] = {}
        self.start = time.monotonic()

    def _wire(self, exchange: RecordedExchange) -> dict[str, Any] | None:
        """The recorded request with the ids the recording's server issued (response, item and call ids)
        replaced by those the live server issued in their place: what a client would send it."""
        if exchange.wire_request is None:
            return None
        wire: dict[str, Any] = _renamed(exchange.wire_request, self.ids)
        return wire

    def _learn(self, exchange: RecordedExchange, observed: RecordedExchange) -> None:
        """Pair the ids of the recorded answer with the live server's, event by event (and in a whole body), in
        order."""
        if exchange.response_id and observed.response_id:
            self.ids[exchange.response_id] = observed.response_id
        pairs = [(before.event, after.event) for before, after in zip(exchange.events, observed.events, strict=False)]
        if exchange.response_body is not None and observed.response_body is not None:  # a conversation, its items
            pairs.append((exchange.response_body.json_value, observed.response_body.json_value))
        for before, after in pairs:
            for old, new in zip(_ids_in(before), _ids_in(after), strict=False):
                self.ids.setdefault(old, new)

    async def run(self) -> Cassette:
        exchanges = []
        async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(self.idle_timeout)) as http:
            for exchange in self.cassette.exchanges:
                if exchange.transport == "http":
                    observed = await self._http(http, exchange)
                else:
                    observed = await self._ws(exchange)
                self._learn(exchange, observed)
                exchanges.append(observed)
            for recorded in self.cassette.connections:  # a connection no exchange used: its handshake alone
                if recorded.id not in self.live:
                    await self._open(recorded)
        for live in self.live.values():
            await self._finish(live)
        connections = [
            RecordedConnection(
                id=live.recorded.id,
                handshake=RecordedHandshake(
                    request_headers=dict(live.recorded.handshake.request_headers),
                    status=live.status,
                    response_headers=live.headers,
                ),
                closed_by=live.closed_by,
                close_code=live.close_code,
            )
            for live in sorted(self.live.values(), key=lambda live: live.recorded.id)
        ]
        name = f"{self.cassette.name} (against {self.base_url})"
        return Cassette(name=name, source="against", connections=connections, exchanges=exchanges)

    def _observed(self, exchange: RecordedExchange, **fields: Any) -> RecordedExchange:
        if "response_id" not in fields:
            fields["response_id"] = response_id_of([recorded.event for recorded in fields.get("events", [])])
        path, query = self._sent.get(exchange.id, (exchange.path, exchange.query))
        return RecordedExchange(
            id=exchange.id,
            transport=exchange.transport,
            connection=exchange.connection,
            started_at=round(time.monotonic() - self.start, 6),
            method=exchange.method,
            path=path,
            route=exchange.route,
            query=query or None,
            request_headers=dict(exchange.request_headers),
            wire_request=fields.pop("wire", exchange.wire_request),
            raw_body=exchange.raw_body,
            logical_request=_renamed(exchange.logical_request, self.ids),
            **fields,
        )

    # -- HTTP -------------------------------------------------------------------------------------
    def _target(self, exchange: RecordedExchange) -> tuple[str, str]:
        """The path and query string a recorded request goes to (the ids the recording's server issued replaced by
        the live server's): a create's `/responses`, as it was sent; any other route's own."""
        if exchange.is_create:
            return "/responses", ""
        path = "/".join(self.ids.get(segment, segment) for segment in exchange.path.split("/"))
        pairs = parse_qsl(exchange.query or "", keep_blank_values=True)
        return path, urlencode([(name, self.ids.get(value, value)) for name, value in pairs])

    async def _http(self, http: httpx.AsyncClient, exchange: RecordedExchange) -> RecordedExchange:
        wire = self._wire(exchange)
        path, query = self._target(exchange)
        content: bytes | None = json.dumps(wire).encode() if wire is not None else None
        if content is None and (exchange.raw_body or exchange.is_create):
            content = (exchange.raw_body or "").encode()
        headers = _sendable(exchange.request_headers)
        if wire is not None or exchange.is_create:
            headers["content-type"] = "application/json"
        headers.pop("content-encoding", None)  # the recorded body is sent decoded
        url = self.base_url + path + (f"?{query}" if query else "")
        request = http.build_request(exchange.method, url, content=content, headers=headers)
        if not exchange.is_create:
            self._sent[exchange.id] = (path, query)
        try:
            response = await http.send(request, stream=True)
        except httpx.HTTPError as error:
            return self._observed(exchange, wire=wire, outcome=Outcome(OutcomeKind.DROPPED, message=str(error)))
        try:
            kept = _kept(response.headers.items())
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                events, outcome = await self._sse(response, exchange)
                return self._observed(
                    exchange,
                    wire=wire,
                    response_status=response.status_code,
                    response_headers=kept,
                    response_id=response_id_of([e.event for e in events]),
                    events=events,
                    outcome=outcome,
                )
            body = await response.aread()
        except httpx.HTTPError as error:
            return self._observed(exchange, wire=wire, outcome=Outcome(OutcomeKind.DROPPED, message=str(error)))
        finally:
            await response.aclose()
        recorded_body = RecordedBody.of(body, response.headers.get("content-type", ""))
        value = recorded_body.json_value
        response_id = value.get("id") if isinstance(value, dict) and value.get("object") == "response" else None
        return self._observed(
            exchange,
            wire=wire,
            response_status=response.status_code,
            response_headers=kept,
            response_id=response_id,
            response_body=recorded_body,
            outcome=outcome_of_body(response.status_code, body),
        )

    async def _sse(self, response: httpx.Response, exchange: RecordedExchange) -> tuple[list[RecordedEvent], Outcome]:
        decoder = SSEDecoder(keep_comments=True)
        events: list[RecordedEvent] = []
        started = time.monotonic()
        chunks = response.aiter_bytes()
        wait = self._wait(exchange)
        while True:
            try:
                chunk = await asyncio.wait_for(anext(chunks), wait)
            except StopAsyncIteration:
                break
            except TimeoutError:
                return events, Outcome(OutcomeKind.STALLED, len(events))
            except httpx.HTTPError:
                return events, Outcome(OutcomeKind.DROPPED, len(events))
            for message in decoder.feed(chunk):
                if message.comment is not None:
                    comment = {"type": SSE_COMMENT, "comment": message.comment}
                    events.append(RecordedEvent.of(time.monotonic() - started, comment))
                elif message.data != "[DONE]":
                    event = event_of_data(message.data, message.event)  # not JSON: kept, as a recording keeps it
                    if isinstance(event, dict):
                        events.append(RecordedEvent.of(time.monotonic() - started, event))
        stated = outcome_of_events([e.event for e in events if e.type not in SIDE_CHANNELS])
        return events, stated or Outcome(OutcomeKind.DROPPED, len(events))

    def _wait(self, exchange: RecordedExchange) -> float:
        stalled = exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.STALLED
        return STALL_WAIT if stalled else self.idle_timeout

    # -- WebSocket --------------------------------------------------------------------------------
    async def _open(self, recorded: RecordedConnection) -> _Live:
        live = self.live[recorded.id] = _Live(recorded)
        headers = _sendable(recorded.handshake.request_headers)
        user_agent = headers.pop("user-agent", None)
        try:
            live.ws = await connect(
                self.ws_url,
                additional_headers=headers,
                user_agent_header=user_agent,
                proxy=None,
                open_timeout=self.idle_timeout,
                max_size=None,
            )
        except InvalidStatus as refused:
            live.status = refused.response.status_code
            live.headers = _kept(refused.response.headers.raw_items(), _NOT_KEPT_HANDSHAKE)
            return live
        except (OSError, TimeoutError, WebSocketException):
            live.closed_by = "tcp"  # never opened: the connection itself failed
            return live
        live.status = 101
        if live.ws.response is not None:
            live.headers = _kept(live.ws.response.headers.raw_items(), _NOT_KEPT_HANDSHAKE)
        return live

    async def _finish(self, live: _Live) -> None:
        """Close a connection as the recording says it ended: wait for the server's close where the server closed
        it, else close it from this side."""
        if live.ws is None:
            return
        if live.recorded.closed_by in ("server", "tcp"):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(live.ws.wait_closed(), CLOSE_WAIT)
        protocol = live.ws.protocol
        if protocol.close_rcvd is not None:
            live.closed_by, live.close_code = "server", protocol.close_rcvd.code
        elif protocol.state.name == "CLOSED" and protocol.close_sent is None:
            live.closed_by = "tcp"
        else:
            with contextlib.suppress(Exception):
                await live.ws.close()  # code 1000
            live.closed_by, live.close_code = "client", 1000

    async def _connection(self, recorded: RecordedConnection) -> _Live:
        """The live connection for a recorded one; handshakes happen in recorded order, so the connections the
        recording opened before this one (a refused upgrade, say) are opened first."""
        for earlier in self.cassette.connections:
            if earlier.id == recorded.id:
                break
            if earlier.id not in self.live:
                await self._open(earlier)
        return self.live.get(recorded.id) or await self._open(recorded)

    async def _ws(self, exchange: RecordedExchange) -> RecordedExchange:
        recorded = self.cassette.connection(exchange.connection)
        if recorded is None:
            return self._observed(exchange, outcome=Outcome(OutcomeKind.DROPPED, message="no recorded connection"))
        live = await self._connection(recorded)
        wire = self._wire(exchange)
        if live.ws is None:
            return self._observed(exchange, wire=wire, outcome=Outcome(OutcomeKind.REFUSED, status=live.status))
        events: list[RecordedEvent] = []
        broken = await self._received(live, exchange, wire, events)
        if broken is not None:
            return self._observed(exchange, wire=wire, events=events, outcome=Outcome(broken, len(events)))
        last = events[-1].event if events else {}
        if last.get("type") == "error" and isinstance(last.get("status"), int):
            return self._refused_by_frame(exchange, wire, last)
        stated = outcome_of_events([e.event for e in events])
        return self._observed(
            exchange,
            wire=wire,
            response_id=response_id_of([e.event for e in events]),
            events=events,
            outcome=stated or Outcome(OutcomeKind.DROPPED, len(events)),
        )

    async def _received(
        self, live: _Live, exchange: RecordedExchange, wire: dict[str, Any] | None, events: list[RecordedEvent]
    ) -> OutcomeKind | None:
        """Send the request on the socket and collect its events into `events` up to an ending one (a frame that
        is not JSON kept as a recording keeps it): None, or how the stream broke (a stall, a closed socket)."""
        assert live.ws is not None
        started = time.monotonic()
        try:
            await live.ws.send(json.dumps(wire) if wire is not None else exchange.raw_body or "")
            while True:
                frame = await asyncio.wait_for(live.ws.recv(), self._wait(exchange))
                event = event_of_data(frame if isinstance(frame, str) else frame.decode("utf-8", "replace"))
                if not isinstance(event, dict):
                    continue
                events.append(RecordedEvent.of(time.monotonic() - started, event))
                if event.get("type") in ENDING_TYPES:
                    return None
        except TimeoutError:
            return OutcomeKind.STALLED
        except ConnectionClosed as closed:
            live.ws, live.closed_by = None, "server" if closed.rcvd is not None else "tcp"
            live.close_code = closed.rcvd.code if closed.rcvd is not None else None
            return OutcomeKind.DROPPED

    def _refused_by_frame(
        self, exchange: RecordedExchange, wire: dict[str, Any] | None, frame: dict[str, Any]
    ) -> RecordedExchange:
        """A request refused with an error frame carrying its status (and the error object, and headers)."""
        error = frame.get("error")
        fields = error if isinstance(error, dict) else {}
        status = frame["status"]
        outcome = Outcome(OutcomeKind.REFUSED, status=status, code=fields.get("code"), message=fields.get("message"))
        sent = frame.get("headers")
        headers = {str(k).lower(): str(v) for k, v in sent.items()} if isinstance(sent, dict) else {}
        return self._observed(exchange, wire=wire, response_status=status, response_headers=headers, outcome=outcome)


async def answers_of(base_url: str, cassette: Cassette, *, idle_timeout: float = IDLE_TIMEOUT) -> Cassette:
    """What the server at `base_url` answers to the cassette's recorded requests, as a cassette."""
    return await _Run(base_url, cassette, idle_timeout).run()
