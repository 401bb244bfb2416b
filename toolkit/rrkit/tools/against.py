"""`rrkit replay --against URL`: a cassette as a check of a server. Its recorded requests are sent through the
remote-server driver (`rrkit.drive.remote`), in order and on the same connections, each on its route (a create, a
retrieve, a conversation's items, ...); what the server answers is recorded like a cassette, to be diffed against
the recorded answers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from websockets.asyncio.client import ClientConnection

from ..cassette.format import Cassette, RecordedConnection, RecordedEvent, RecordedExchange, RecordedHandshake
from ..drive.ending import Ending
from ..drive.remote import RemoteServer
from ..protocol import events as ev
from ..protocol.outcome import Outcome, OutcomeKind
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
    def __init__(self, remote: RemoteServer, cassette: Cassette, idle_timeout: float) -> None:
        self.remote, self.cassette, self.idle_timeout = remote, cassette, idle_timeout
        self.ids: dict[str, str] = {}  # recorded response id -> the live server's
        self.live: dict[int, _Live] = {}

    def _request(self, exchange: RecordedExchange, **sent: Any) -> RecordedExchange:
        """The recorded request with the ids the recording's server issued (response, item and call ids)
        replaced by those the live server issued in their place: what a client would send it."""
        renamed = {"wire_request": _renamed(exchange.wire_request, self.ids)} if exchange.wire_request else {}
        logical = _renamed(exchange.logical_request, self.ids)
        return exchange.model_copy(update={**renamed, "logical_request": logical, **sent})

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
        for exchange in self.cassette.exchanges:
            observed = await (self._http(exchange) if exchange.transport == "http" else self._ws(exchange))
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
        name = f"{self.cassette.name} (against {self.remote.base_url})"
        return Cassette(name=name, source="against", connections=connections, exchanges=exchanges)

    def _wait(self, exchange: RecordedExchange) -> float:
        stalled = exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.STALLED
        return STALL_WAIT if stalled else self.idle_timeout

    # -- HTTP -------------------------------------------------------------------------------------
    def _target(self, exchange: RecordedExchange) -> tuple[str, str]:
        """The path and query string a recorded request goes to (the ids the recording's server issued replaced by
        the live server's): a create's `/responses`, as it was sent; any other route's own."""
        if exchange.is_create:
            return "/responses", ""
        path = "/".join(self.ids.get(segment, segment) for segment in exchange.path.split("/"))
        pairs = parse_qsl(exchange.query or "", keep_blank_values=True)
        return path, urlencode([(name, self.ids.get(value, value)) for name, value in pairs])

    async def _http(self, exchange: RecordedExchange) -> RecordedExchange:
        path, query = self._target(exchange)
        request = self._request(exchange, path=path, query=query or None)
        if request.wire_request is None and request.raw_body is None and exchange.is_create:
            request = request.model_copy(update={"raw_body": ""})
        headers = _sendable(exchange.request_headers)
        if exchange.wire_request is not None or exchange.is_create:
            headers["content-type"] = "application/json"
        headers.pop("content-encoding", None)  # the recorded body is sent decoded
        sent = await self.remote.http(request, headers, idle=self._wait(exchange))
        where = {"path": exchange.path, "query": exchange.query} if exchange.is_create else {}
        kept = _kept(sent.exchange.response_headers.items())
        return sent.exchange.model_copy(update={**where, "raw_body": exchange.raw_body, "response_headers": kept})

    # -- WebSocket --------------------------------------------------------------------------------
    async def _open(self, recorded: RecordedConnection) -> _Live:
        live = self.live[recorded.id] = _Live(recorded)
        headers = _sendable(recorded.handshake.request_headers)
        socket = await self.remote.open_socket(headers, user_agent=headers.pop("user-agent", None))
        live.ws, live.status, live.headers = (
            socket.connection,
            socket.status,
            _kept(socket.headers.items(), _NOT_KEPT_HANDSHAKE),
        )
        if socket.connection is None and socket.status is None:
            live.closed_by = "tcp"  # never opened: the connection itself failed
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
        request = self._request(exchange)
        if recorded is None:
            return request.model_copy(
                update={"outcome": Outcome(OutcomeKind.DROPPED, message="no recorded connection")}
            )
        live = await self._connection(recorded)
        if live.ws is None:
            return request.model_copy(update={"outcome": Outcome(OutcomeKind.REFUSED, status=live.status)})
        sent = await self.remote.on_socket(live.ws, request, idle=self._wait(exchange))
        if sent.closed:
            live.ws, live.closed_by, live.close_code = (
                None,
                "server" if sent.closed_code is not None else "tcp",
                sent.closed_code,
            )
        if sent.ending is Ending.WHOLE and (refused := _refused_by_frame(sent.exchange)) is not None:
            return refused
        return sent.exchange


def _refused_by_frame(exchange: RecordedExchange) -> RecordedExchange | None:
    """A request refused with an error frame carrying its status (and the error object, and headers): recorded as
    a refusal, as the fake server's capture records one."""
    last = exchange.events[-1].event if exchange.events else {}
    if last.get("type") != ev.ERROR or not isinstance(last.get("status"), int):
        return None
    error = last.get("error")
    fields = error if isinstance(error, dict) else {}
    status = last["status"]
    outcome = Outcome(OutcomeKind.REFUSED, status=status, code=fields.get("code"), message=fields.get("message"))
    sent = last.get("headers")
    headers = {str(k).lower(): str(v) for k, v in sent.items()} if isinstance(sent, dict) else {}
    update: dict[str, Any] = {"events": list[RecordedEvent](), "response_id": None}
    return exchange.model_copy(
        update={**update, "response_status": status, "response_headers": headers, "outcome": outcome}
    )


async def answers_of(base_url: str, cassette: Cassette, *, idle_timeout: float = IDLE_TIMEOUT) -> Cassette:
    """What the server at `base_url` answers to the cassette's recorded requests, as a cassette."""
    async with RemoteServer(base_url, timeout=idle_timeout, what="--against URL") as remote:
        return await _Run(remote, cassette, idle_timeout).run()
