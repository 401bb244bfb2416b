"""Rendering a recorded exchange as a response plan: its events sent as recorded, one at a time, with their
recorded faults (drops, stalls, refusals) and, if asked, their recorded timing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..protocol.events import SSE_COMMENT, response_id_of
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.outcome import OutcomeKind, response_id_of_body
from ..protocol.plan import (
    NO_FAULT,
    PlannedEvent,
    ResponsePlan,
    StreamFault,
    VerbatimBody,
    events_of,
    verbatim,
)
from ..protocol.vocabulary import CloseKind, Transport
from ..script.models import Reject
from ..script.render import rejection_of
from .format import RecordedEvent, RecordedExchange

REPLAYED_HEADERS = (TURN_STATE_HEADER, "openai-model", "retry-after", "retry-after-ms", "x-request-id")
"""The recorded response headers a replay sends again; the rest describe the recording server."""


def render_recording(
    exchange: RecordedExchange,
    *,
    transport: Transport,
    close: CloseKind = "tcp",
    close_code: int = 1011,
    time_scale: float = 0.0,
    rename: Callable[[str], str] | None = None,
) -> ResponsePlan:
    """The plan that plays `exchange` back. `rename` maps the recorded response id to the id to send (each
    replay issues its own); `time_scale` 0 plays at once, 1 at the recorded speed."""
    replayed = {k: v for k, v in exchange.response_headers.items() if k.lower() in REPLAYED_HEADERS}
    kept = {k: v for k, v in replayed.items() if k != TURN_STATE_HEADER}
    common: dict[str, Any] = {"headers": kept, "turn_state": replayed.get(TURN_STATE_HEADER), "replayed": True}
    recorded_body = exchange.response_body
    if recorded_body is not None and not exchange.events:
        # A whole body that was not played from events (relayed: a response object, an error, a page): served as
        # it was sent. A body the fake server played from events is played again, into the same body.
        content = recorded_body.content
        recorded_id = response_id_of_body(content)
        if rename is not None and recorded_id:
            content = content.replace(f'"{recorded_id}"'.encode(), f'"{rename(recorded_id)}"'.encode())
        body = VerbatimBody(exchange.response_status or 200, content, recorded_body.content_type)
        return ResponsePlan(response_id=response_id_of_body(content) or "", body=body, **common)
    outcome = exchange.outcome
    if outcome is not None and outcome.kind is OutcomeKind.REFUSED:
        status = outcome.status or exchange.response_status or 500
        refused = Reject(status=status, code=outcome.code, message=outcome.message, headers=replayed)
        return ResponsePlan(rejection=rejection_of(refused), **common)
    fault = NO_FAULT
    if outcome is not None and outcome.kind in (OutcomeKind.DROPPED, OutcomeKind.DISCONNECTED):
        fault = StreamFault(drop_after=len(exchange.events), close=close, close_code=close_code)
    elif outcome is not None and outcome.kind is OutcomeKind.STALLED:
        fault = StreamFault(stall_after=len(exchange.events))
    events = [e for e in exchange.events if transport != "ws" or f'"type":"{SSE_COMMENT}"' not in e.raw]
    recorded_id = _first_response_id(events)
    sent_id = rename(recorded_id) if rename is not None and recorded_id else recorded_id
    swap = (f'"{recorded_id}"', f'"{sent_id}"') if recorded_id and sent_id != recorded_id else None
    played = events_of(_played(events, transport, time_scale, swap))
    return ResponsePlan(played, response_id=sent_id or "", fault=fault, **common)


def _played(
    events: Sequence[RecordedEvent], transport: Transport, scale: float, swap: tuple[str, str] | None
) -> Iterator[PlannedEvent]:
    before = 0.0
    for recorded in events:
        raw = recorded.raw if swap is None else recorded.raw.replace(*swap)
        yield verbatim(raw, transport, max(0.0, recorded.at - before) * scale, lazy=True)  # checked at load
        before = recorded.at


def _first_response_id(events: Sequence[RecordedEvent]) -> str | None:
    """The response id the first lifecycle event states, parsing no event but that one."""
    for recorded in events:
        if '"response"' in recorded.raw and (found := response_id_of([json.loads(recorded.raw)])):
            return found
    return None
