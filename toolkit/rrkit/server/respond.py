"""What both transports share: server state, validating a request, rebuilding its logical request, picking
and planning the answer."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.types import Scope

from ..protocol import errors
from ..protocol.exceptions import BadRequest, RRKitError
from ..protocol.ids import IdGenerator
from ..protocol.incremental import logical_from_wire, rebuild_logical
from ..protocol.input_check import resolve_references
from ..protocol.jsontext import UnsafeJSON, json_size
from ..protocol.limits import Limits
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.plan import Chaos, Rejection, ResponsePlan
from ..protocol.request import input_items
from ..protocol.request_check import check_request
from ..protocol.resources import conversation_id, not_found
from ..protocol.vocabulary import Transport
from ..script.select import NoMatch, ReplySource, RequestView
from .admin_guard import AdminPolicy
from .capture import Capture, Exchange, ExchangeCounts
from .store import HTTP_STORE_SIZE, WS_STORE_SIZE, ResponseStore, Stored, store_ended
from .stream import SERVER_ERROR_CODE, own_failure

__all__ = ["HTTP_STORE_SIZE", "WS_STORE_SIZE", "ResponseStore", "Stored", "store_ended"]

log = logging.getLogger("rrkit.server")

NO_MATCH_CODE = "rrkit_no_matching_reply"
NORMAL_CLOSURE = 1000  # the WebSocket close code for "the purpose of the connection has been fulfilled"
ABNORMAL_CLOSURE = 1006  # the WebSocket close code for "closed without a close frame"


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


class RequestRefused(RRKitError):
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
            wire = check_request(body, frame=transport == "ws", lenient=self.state.lenient)
        except BadRequest as error:
            raise invalid_request(error) from None
        if transport == "ws" and wire.get("background") is True and not self.state.source.answers_every_route:
            message = "Background mode is not supported over WebSocket: create the response over HTTP."
            raise RequestRefused(400, errors.error_body(message, param="background"))
        return wire

    def logical(self, wire: dict[str, Any], store: ResponseStore) -> dict[str, Any]:
        """The request as the model sees it: a delta rebuilt on the response it names, or the conversation's
        items before its input, each item reference replaced by the item it names. A relaying source answers an
        id this server never saw itself (the upstream may know it): its logical request keeps the id, and the
        references."""
        logical, http = self._rebuilt(wire, store), self.state.http_store
        items = logical.get("input")
        if self.state.source.relays_unknown_ids or not isinstance(items, list):
            return logical
        try:
            resolved = resolve_references(items, lambda item_id: store.find_item(item_id) or http.find_item(item_id))
        except BadRequest as error:
            raise invalid_request(error) from None
        return logical if resolved is items else {**logical, "input": resolved}

    def _rebuilt(self, wire: dict[str, Any], store: ResponseStore) -> dict[str, Any]:
        previous = wire.get("previous_response_id")
        if wire.get("conversation") is not None and not self.state.source.answers_every_route:
            return self._in_conversation(wire, self.state.http_store)  # the server's one store, whatever the transport
        if not previous:
            return logical_from_wire(wire)
        stored = store.continuable(previous)
        if stored is None and self.state.source.relays_unknown_ids:
            return {**logical_from_wire(wire), "previous_response_id": previous}
        if stored is None:
            message = f"Previous response with id '{previous}' not found."
            raise RequestRefused(
                400,
                errors.error_body(message, code=errors.PREVIOUS_RESPONSE_NOT_FOUND, param="previous_response_id"),
            )
        return rebuild_logical(wire, stored.logical_input, stored.output)

    @staticmethod
    def _in_conversation(wire: dict[str, Any], store: ResponseStore) -> dict[str, Any]:
        if wire.get("previous_response_id"):
            message = (
                "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or "
                "'conversation'."
            )
            raise RequestRefused(400, errors.error_body(message, param="conversation", code="mutually_exclusive"))
        named = conversation_id(wire.get("conversation"))
        conversation = store.conversation(named) if named else None
        if conversation is None:
            raise RequestRefused(404, not_found("Conversation", str(named), param="conversation"))
        logical = logical_from_wire(wire)
        return {**logical, "input": [*conversation.items, *input_items(logical)]}

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
            raise self._no_match(exchange, await chosen.reported(), wire)
        exchange.replayed = chosen.replayed
        if chosen.rejection is not None:
            raise RequestRefused.of(chosen.rejection)
        chaos = self.state.chaos
        if chaos is not None and chosen.body is None and chosen.fault.chaos is None:
            return replace(chosen, fault=replace(chosen.fault, chaos=chaos))
        return chosen

    async def select_route(self, exchange: Exchange, view: RequestView) -> ResponsePlan | None:
        """The source's plan on a route other than the create (None: the server's store answers it)."""
        try:
            chosen = await self.state.source.select_route(view)
        except Exception as error:  # a broken reply source: answered 500, reported once, the server goes on
            raise server_error(error, f"the reply source {type(self.state.source).__name__} failed") from error
        if isinstance(chosen, NoMatch):
            raise self._no_match(exchange, await chosen.reported(), view.wire)
        if chosen is not None:
            exchange.replayed = chosen.replayed
            if chosen.rejection is not None:
                raise RequestRefused.of(chosen.rejection)
        return chosen

    def _no_match(self, exchange: Exchange, chosen: NoMatch, wire: Mapping[str, Any]) -> RequestRefused:
        """The refusal of a request nothing answers, its near-miss report kept."""
        message = chosen.message()
        log.warning("%s", message)
        self.state.unmatched.add(
            Unmatched(exchange.id, exchange.transport, exchange.connection_id, time.time(), chosen, dict(wire))
        )
        return RequestRefused(400, errors.error_body(message, type="rrkit_no_match", code=NO_MATCH_CODE))


def server_error(error: BaseException, what: str = "the server failed") -> RequestRefused:
    """An unexpected error as the answer a client gets (500 `server_error`), its traceback logged once."""
    message = own_failure(error, what)
    log.error("%s", message, exc_info=error)
    return RequestRefused(500, errors.error_body(message, type="server_error", code=SERVER_ERROR_CODE))
