"""What both transports share: server state, validating a request, rebuilding its logical request, picking
and planning the answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from starlette.types import Scope

from ..protocol import errors
from ..protocol.events import done_items, response_id_of
from ..protocol.ids import IdGenerator
from ..protocol.incremental import logical_from_wire, rebuild_logical
from ..protocol.outcome import Outcome, OutcomeKind, response_of_body
from ..protocol.plan import Rejection, ResponsePlan
from ..protocol.request import Item, ResponseCreateFrame, ResponsesRequest, input_items
from ..protocol.vocabulary import Transport
from ..script.select import NoMatch, ReplySource, RequestView
from .capture import Capture, Exchange

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

    @classmethod
    def of(cls, rejection: Rejection) -> Rejected:
        return cls(rejection.status, rejection.body, rejection.headers)

    @property
    def fields(self) -> dict[str, Any]:
        """The `error` object of the body (empty for a raw scripted body without one)."""
        error = self.body.get("error")
        return error if isinstance(error, dict) else {}

    def outcome(self) -> Outcome:
        fields = self.fields
        return Outcome(OutcomeKind.REFUSED, status=self.status, code=fields.get("code"), message=fields.get("message"))


def scope_headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


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

    def parse(self, body: Any, *, transport: Transport) -> dict[str, Any]:
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
        """The request as the model sees it: a delta rebuilt on the response it names. A relaying source answers
        an id this server never saw itself (the upstream may know it): its logical request keeps the id."""
        previous = wire.get("previous_response_id")
        if not previous:
            return logical_from_wire(wire)
        stored = store.get(previous)
        if stored is None and getattr(self.state.source, "relays_unknown_ids", False):
            return {**logical_from_wire(wire), "previous_response_id": previous}
        if stored is None:
            message = f"Previous response with id '{previous}' not found."
            raise Rejected(
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
        """The source's plan for this request; a rejection (or no plan at all) is raised as `Rejected`."""
        view = RequestView(
            exchange.transport, headers, wire, logical, exchange.connection_id, query, body, ids=self.state.ids
        )
        chosen = await self.state.source.select(view)
        if isinstance(chosen, NoMatch):
            message = chosen.message()
            log.warning("%s", message)
            raise Rejected(400, errors.error_body(message, type_="rrkit_no_match", code=NO_MATCH_CODE))
        exchange.replayed = chosen.replayed
        if chosen.rejection is not None:
            raise Rejected.of(chosen.rejection)
        return chosen


def store_if_completed(store: dict[str, Stored], exchange: Exchange) -> None:
    """A response can be named as `previous_response_id` once (and only if) it completed: streamed, or as
    the response object of a whole body."""
    sent = [sent.event for sent in exchange.events]
    output = done_items(sent)
    response_id = exchange.response_id = exchange.response_id or response_id_of(sent)
    body = response_of_body(exchange.response_body) if exchange.response_body is not None and not sent else None
    if body is not None:
        response_id = exchange.response_id = str(body.get("id") or "") or response_id
        output = [item for item in body.get("output") or [] if isinstance(item, dict)]
    if exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED and response_id:
        store[response_id] = Stored(input_items(exchange.logical_request or {}), output)
