"""The Responses protocol, sans-I/O: request models, events and their builder, the SSE codec, order rules, the
error catalogue, the incremental rule, Lite, outcomes, and the response plan every reply source produces.

The names below load with their module on first use (PEP 562): a server loads only the modules it uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .errors import (
        FAILURE_CODES,
        Classification,
        ErrorKind,
        FailureCode,
        classify_failure,
        error_body,
        ws_error_frame,
    )
    from .events import Event, ResponseEvents, done_items, terminal_event, usage
    from .exceptions import RRKitError
    from .headers import OPENAI_BETA_HEADER, RESPONSES_WEBSOCKETS_BETA, TURN_STATE_HEADER
    from .ids import IdGenerator
    from .incremental import Decision, Incremental, LastResponse, decide, rebuild_logical, response_create
    from .lite import from_lite, is_lite, to_lite
    from .order import Violation, check_order
    from .order_rules import Rule
    from .outcome import Outcome, OutcomeKind, outcome_of_events
    from .plan import PlannedEvent, Rejection, ResponsePlan, StreamCut, StreamFault, VerbatimBody
    from .request import Item, input_items, is_warmup
    from .request_model import ResponseCreateFrame, ResponsesRequest
    from .sse import SSEDecoder, SSEMessage, encode_event, iter_events

_HOMES = {
    ".errors": (
        "FAILURE_CODES",
        "Classification",
        "ErrorKind",
        "FailureCode",
        "classify_failure",
        "error_body",
        "ws_error_frame",
    ),
    ".exceptions": ("RRKitError",),
    ".events": ("Event", "ResponseEvents", "done_items", "terminal_event", "usage"),
    ".headers": ("OPENAI_BETA_HEADER", "RESPONSES_WEBSOCKETS_BETA", "TURN_STATE_HEADER"),
    ".ids": ("IdGenerator",),
    ".incremental": ("Decision", "Incremental", "LastResponse", "decide", "rebuild_logical", "response_create"),
    ".lite": ("from_lite", "is_lite", "to_lite"),
    ".order": ("Violation", "check_order"),
    ".order_rules": ("Rule",),
    ".outcome": ("Outcome", "OutcomeKind", "outcome_of_events"),
    ".plan": ("PlannedEvent", "Rejection", "ResponsePlan", "StreamCut", "StreamFault", "VerbatimBody"),
    ".request": ("Item", "input_items", "is_warmup"),
    ".request_model": ("ResponseCreateFrame", "ResponsesRequest"),
    ".sse": ("SSEDecoder", "SSEMessage", "encode_event", "iter_events"),
}

__all__ = [
    "FAILURE_CODES",
    "OPENAI_BETA_HEADER",
    "RESPONSES_WEBSOCKETS_BETA",
    "TURN_STATE_HEADER",
    "Classification",
    "Decision",
    "ErrorKind",
    "Event",
    "FailureCode",
    "IdGenerator",
    "Incremental",
    "Item",
    "LastResponse",
    "Outcome",
    "OutcomeKind",
    "PlannedEvent",
    "RRKitError",
    "Rejection",
    "ResponseCreateFrame",
    "ResponseEvents",
    "ResponsePlan",
    "ResponsesRequest",
    "Rule",
    "SSEDecoder",
    "SSEMessage",
    "StreamCut",
    "StreamFault",
    "VerbatimBody",
    "Violation",
    "check_order",
    "classify_failure",
    "decide",
    "done_items",
    "encode_event",
    "error_body",
    "from_lite",
    "input_items",
    "is_lite",
    "is_warmup",
    "iter_events",
    "outcome_of_events",
    "rebuild_logical",
    "response_create",
    "terminal_event",
    "to_lite",
    "usage",
    "ws_error_frame",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
