"""What both transports share: server state, validating a request, rebuilding its logical request, picking
and planning the answer."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.types import Scope

from ..protocol import errors
from ..protocol.events import done_items, response_id_of
from ..protocol.exceptions import BadRequest, SettingError
from ..protocol.ids import IdGenerator
from ..protocol.incremental import logical_from_wire, rebuild_logical
from ..protocol.jsontext import UnsafeJSON, json_size
from ..protocol.limits import Limits
from ..protocol.outcome import Outcome, OutcomeKind, response_of_body
from ..protocol.plan import Chaos, Rejection, ResponsePlan
from ..protocol.request import Item, input_items
from ..protocol.request_check import check_request
from ..protocol.vocabulary import Transport
from ..script.select import NoMatch, ReplySource, RequestView
from .admin_guard import AdminPolicy
from .capture import Capture, Exchange, ExchangeCounts
from .stream import SERVER_ERROR_CODE

log = logging.getLogger("rrkit.server")

NO_MATCH_CODE = "rrkit_no_matching_reply"
NORMAL_CLOSURE = 1000  # the WebSocket close code for "the purpose of the connection has been fulfilled"
ABNORMAL_CLOSURE = 1006  # the WebSocket close code for "closed without a close frame"


@dataclass
class Stored:
    """A completed response, kept so that a later request can name it as `previous_response_id`."""

    logical_input: list[Item]
    output: list[Item]


HTTP_STORE_SIZE = 1000
"""Completed HTTP responses kept for `previous_response_id` (the least recently used one goes first)."""
WS_STORE_SIZE = 100
"""Completed responses each WebSocket connection keeps for `previous_response_id`."""


class ResponseStore(MutableMapping[str, Stored]):
    """The responses a later request may continue, by id: bounded, least recently used evicted first. An evicted
    id is answered `previous_response_not_found`, as the real service answers an id it no longer has."""

    def __init__(self, size: int = HTTP_STORE_SIZE, max_bytes: int | None = None) -> None:
        if size < 1:
            raise SettingError(f"a response store keeps at least one response, got size {size}")
        self.size = size
        self.max_bytes = max_bytes  # None: bounded by `size` alone
        self.kept_bytes = 0
        self.evicted = 0
        self._kept: OrderedDict[str, Stored] = OrderedDict()
        self._sizes: dict[str, int] = {}

    def __getitem__(self, response_id: str) -> Stored:
        stored = self._kept[response_id]
        self._kept.move_to_end(response_id)
        return stored

    def __setitem__(self, response_id: str, stored: Stored) -> None:
        if response_id in self._kept:
            del self[response_id]
        self._kept[response_id] = stored
        if self.max_bytes is not None:
            self._sizes[response_id] = json_size(stored.logical_input) + json_size(stored.output)
            self.kept_bytes += self._sizes[response_id]
        while len(self._kept) > self.size or (
            self.max_bytes is not None and self.kept_bytes > self.max_bytes and len(self._kept) > 1
        ):
            del self[next(iter(self._kept))]
            self.evicted += 1

    def __delitem__(self, response_id: str) -> None:
        del self._kept[response_id]
        self.kept_bytes -= self._sizes.pop(response_id, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()
        self._sizes.clear()
        self.kept_bytes = 0


UNMATCHED_KEPT = 100
"""Requests nothing answered whose near-miss reports a server keeps (the most recent ones) for `/__rrkit/unmatched`."""


@dataclass(frozen=True)
class Unmatched:
    """A request nothing answered: which exchange carried it, and the source's near-miss report (`NoMatch`)."""

    exchange_id: int
    transport: Transport
    connection_id: int | None
    at: float  # when it was refused (seconds since the epoch)
    report: NoMatch
    wire_request: dict[str, Any]


class UnmatchedLog:
    """The most recent `Unmatched` requests, readable from any thread while the server answers."""

    def __init__(self, size: int = UNMATCHED_KEPT, max_bytes: int | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes  # None: bounded by `size` alone
        self.kept_bytes = 0
        self._recent: deque[tuple[Unmatched, int]] = deque()
        self._lock = threading.Lock()
        self.total = 0  # requests nothing answered since the start (or the last reset), evicted ones included

    def add(self, unmatched: Unmatched) -> None:
        size = json_size(unmatched.wire_request) if self.max_bytes is not None else 0
        with self._lock:
            self._recent.append((unmatched, size))
            self.kept_bytes += size
            self.total += 1
            while len(self._recent) > self.size or (
                self.max_bytes is not None and self.kept_bytes > self.max_bytes and len(self._recent) > 1
            ):
                self.kept_bytes -= self._recent.popleft()[1]

    def recent(self) -> list[Unmatched]:
        with self._lock:
            return [unmatched for unmatched, _ in self._recent]

    def clear(self) -> None:
        with self._lock:
            self._recent.clear()
            self.kept_bytes = self.total = 0


@dataclass
class ServerState:
    source: ReplySource
    capture: Capture = field(default_factory=Capture)
    ids: IdGenerator = field(default_factory=IdGenerator)
    http_store: ResponseStore = field(default_factory=ResponseStore)
    ws_store_size: int = WS_STORE_SIZE  # each WebSocket connection's own ResponseStore
    stopping: asyncio.Event | None = None  # set by the runner on shutdown; ends stalls and pauses
    lenient: bool = False  # accept coercible field types (`stream: "yes"`), as `check_request` says
    unmatched: UnmatchedLog = field(default_factory=UnmatchedLog)  # recent near-miss reports
    admin: AdminPolicy = field(default_factory=AdminPolicy)  # who may call the admin API
    limits: Limits = field(default_factory=Limits)  # the sizes of what it reads
    counts: ExchangeCounts = field(default_factory=ExchangeCounts)  # exchanges ended, for /__rrkit/metrics
    chaos: Chaos | None = None  # drawn on every stream whose plan has no chaos (nor cut) of its own


STATE_KEY = "rrkit.state"
"""Scope key: the state of the server a request reached (one app serves every server of the process)."""


def state_of(scope: Scope) -> ServerState:
    state: ServerState = scope[STATE_KEY]
    return state


class RequestRefused(Exception):
    """Raised to refuse a request: the server answers it with this error, before any stream event (a reply source
    plans one as a `Rejection`)."""

    def __init__(
        self, status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None, *, limit: str | None = None
    ) -> None:
        super().__init__(body.get("error", {}).get("message", ""))
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        self.limit = limit  # the `--limit` setting the request went over, if that is why it is refused

    @classmethod
    def of(cls, rejection: Rejection) -> RequestRefused:
        return cls(rejection.status, rejection.body, rejection.headers)

    @property
    def fields(self) -> dict[str, Any]:
        """The `error` object of the body (empty for a raw scripted body without one)."""
        error = self.body.get("error")
        return error if isinstance(error, dict) else {}

    def outcome(self) -> Outcome:
        fields = self.fields
        return Outcome(
            OutcomeKind.REFUSED,
            status=self.status,
            code=fields.get("code"),
            message=fields.get("message"),
            reason=self.limit,
        )


def scope_headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


def invalid_request(error: BadRequest | UnsafeJSON) -> RequestRefused:
    """The OpenAI-shaped 400 for a body or frame refused by the protocol's checks, naming the field."""
    return RequestRefused(400, errors.error_body(error.message, param=error.param, code=error.code))


class Responder:
    """The per-request logic shared by both transports: validate, rebuild, pick a reply, plan it."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def parse(self, body: Any, *, transport: Transport) -> dict[str, Any]:
        """The wire request, its field types checked (strictly, unless the server is lenient: then coerced)."""
        try:
            return check_request(body, frame=transport == "ws", lenient=self.state.lenient)
        except BadRequest as error:
            raise invalid_request(error) from None

    def logical(self, wire: dict[str, Any], store: Mapping[str, Stored]) -> dict[str, Any]:
        """The request as the model sees it: a delta rebuilt on the response it names. A relaying source answers
        an id this server never saw itself (the upstream may know it): its logical request keeps the id."""
        previous = wire.get("previous_response_id")
        if not previous:
            return logical_from_wire(wire)
        stored = store.get(previous)
        if stored is None and self.state.source.relays_unknown_ids:
            return {**logical_from_wire(wire), "previous_response_id": previous}
        if stored is None:
            message = f"Previous response with id '{previous}' not found."
            raise RequestRefused(
                400,
                errors.error_body(message, code=errors.PREVIOUS_RESPONSE_NOT_FOUND, param="previous_response_id"),
            )
        return rebuild_logical(wire, stored.logical_input, stored.output)

    async def plan(
        self,
        exchange: Exchange,
        headers: dict[str, str],
        wire: dict[str, Any],
        logical: dict[str, Any],
        *,
        query: str = "",
        body: bytes | None = None,
    ) -> ResponsePlan:
        """The source's plan for this request; a rejection (or no plan at all) is raised as `RequestRefused`."""
        view = RequestView(
            exchange.transport, headers, wire, logical, exchange.connection_id, query, body, ids=self.state.ids
        )
        try:
            chosen = await self.state.source.select(view)
        except Exception as error:  # a broken reply source: answered 500, reported once, the server goes on
            raise server_error(error, f"the reply source {type(self.state.source).__name__} failed") from error
        if isinstance(chosen, NoMatch):
            message = chosen.message()
            log.warning("%s", message)
            self.state.unmatched.add(
                Unmatched(exchange.id, exchange.transport, exchange.connection_id, time.time(), chosen, dict(wire))
            )
            raise RequestRefused(400, errors.error_body(message, type="rrkit_no_match", code=NO_MATCH_CODE))
        exchange.replayed = chosen.replayed
        if chosen.rejection is not None:
            raise RequestRefused.of(chosen.rejection)
        chaos = self.state.chaos
        if chaos is not None and chosen.body is None and chosen.fault.chaos is None:
            return replace(chosen, fault=replace(chosen.fault, chaos=chaos))
        return chosen


def server_error_message(error: BaseException, what: str = "the server failed") -> str:
    return f"rrkit: {what}: {type(error).__name__}: {error}"


def server_error(error: BaseException, what: str = "the server failed") -> RequestRefused:
    """An unexpected error as the answer a client gets (500 `server_error`), its traceback logged once."""
    message = server_error_message(error, what)
    log.error("%s", message, exc_info=error)
    return RequestRefused(500, errors.error_body(message, type="server_error", code=SERVER_ERROR_CODE))


def store_if_completed(store: MutableMapping[str, Stored], exchange: Exchange) -> None:
    """A response can be named as `previous_response_id` once (and only if) it completed: streamed, or as
    the response object of a whole body."""
    response_id, output = _stated(exchange)
    exchange.response_id = response_id
    if exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED and response_id:
        store[response_id] = Stored(input_items(exchange.logical_request or {}), output)


def _stated(exchange: Exchange) -> tuple[str | None, list[Item]]:
    """The response id and the output items an answer states: the response object of a whole body, or the stream's
    lifecycle events and done items."""
    sent = exchange.events
    body = response_of_body(exchange.response_body) if exchange.response_body is not None and not sent else None
    if body is not None:
        output = [item for item in body.get("output") or [] if isinstance(item, dict)]
        return str(body.get("id") or "") or exchange.response_id, output
    stated = (one.event for one in sent)  # parsed only up to the first event that states it
    done = done_items([one.event for one in sent.done_items()])
    return exchange.response_id or response_id_of(stated), done
