"""What both transports share: validating a request, rebuilding its logical request, picking
and planning the answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from starlette.types import Scope

from ..protocol import errors
from ..protocol.answer_check import check_answers
from ..protocol.exceptions import BadRequest, RRKitError
from ..protocol.incremental import logical_from_wire, rebuild_logical
from ..protocol.input_check import resolve_references
from ..protocol.jsontext import UnsafeJSON
from ..protocol.keys import UNAUTHORIZED, key_refusal
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.plan import Rejection, ResponsePlan
from ..protocol.request import input_items
from ..protocol.request_check import check_request
from ..protocol.resources import not_found
from ..protocol.response_object import conversation_id
from ..protocol.vocabulary import Transport
from ..script.select import NoMatch, RequestView
from .capture import Exchange
from .state import STATE_KEY, ServerState, Unmatched, UnmatchedLog, state_of
from .store import HTTP_STORE_SIZE, WS_STORE_SIZE, ResponseStore, Stored, store_ended
from .stream import SERVER_ERROR_CODE, own_failure

__all__ = [
    "HTTP_STORE_SIZE",
    "STATE_KEY",
    "WS_STORE_SIZE",
    "ResponseStore",
    "ServerState",
    "Stored",
    "Unmatched",
    "UnmatchedLog",
    "state_of",
    "store_ended",
]

log = logging.getLogger("rrkit.server")

NO_MATCH_CODE = "rrkit_no_matching_reply"
NORMAL_CLOSURE = 1000  # the WebSocket close code for "the purpose of the connection has been fulfilled"
ABNORMAL_CLOSURE = 1006  # the WebSocket close code for "closed without a close frame"


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


def key_refused(state: ServerState, headers: Mapping[str, str]) -> RequestRefused | None:
    """The service's 401 for a request without the key the server (or its session) requires; None: let it in."""
    if state.require_key is None:
        return None
    body = key_refusal(state.require_key, headers)
    return None if body is None else RequestRefused(UNAUTHORIZED, body)


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
        if not (self.state.lenient or self.state.source.answers_every_route):  # a recording's answer is its own
            from ..references.request_fields import echoed_refusal  # the spec's schemas: loaded by the first create

            refused = echoed_refusal(wire)
            if refused is not None:
                raise invalid_request(refused)
        if transport == "ws" and wire.get("background") is True and not self.state.source.answers_every_route:
            message = "Background mode is not supported over WebSocket: create the response over HTTP."
            raise RequestRefused(400, errors.error_body(message, param="background"))
        return wire

    def logical(self, wire: dict[str, Any], store: ResponseStore) -> dict[str, Any]:
        """The request as the model sees it: a delta rebuilt on the response it names, or the conversation's
        items before its input, each item reference replaced by the item it names, each answer following the call
        it names (`answer_check`). A relaying source answers an id this server never saw itself (the upstream may
        know it): its logical request keeps the id, and the references."""
        logical, http = self._rebuilt(wire, store), self.state.http_store
        items = logical.get("input")
        if self.state.source.relays_unknown_ids or not isinstance(items, list):
            return logical
        try:
            resolved = resolve_references(items, lambda item_id: store.find_item(item_id) or http.find_item(item_id))
            if not self.state.source.answers_every_route:  # a replayed or relayed answer is the recording's to give
                check_answers(resolved)
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
        """The source's plan for this request; a rejection (or no plan at all) is raised as `RequestRefused`. A
        request the server's chaos rate-limits is refused before the source chooses: no reply is used by it."""
        chaos = self.state.chaos
        if chaos is not None and chaos.rate_limited(exchange.id):
            raise RequestRefused.of(chaos.refusal())
        view = RequestView(
            exchange.transport,
            headers,
            wire,
            logical,
            exchange.connection_id,
            query,
            body,
            ids=self.state.ids,
            exchange_id=exchange.id,
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
