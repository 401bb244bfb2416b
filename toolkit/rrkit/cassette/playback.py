"""A recorded exchange as a response plan: its events sent as recorded, one at a time, with their recorded faults
(drops, stalls, refusals) and, if asked, their recorded timing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..protocol.events import response_id_of
from ..protocol.headers import TURN_STATE_HEADER, replayable_headers
from ..protocol.outcome import Outcome, OutcomeKind, response_id_of_body
from ..protocol.plan import NO_FAULT, PlannedEvent, ResponsePlan, StreamFault, VerbatimBody, events_of
from ..protocol.steer import SteerQueue
from ..protocol.vocabulary import CloseKind, Transport
from ..protocol.wire_events import verbatim
from ..script.models import Reject
from ..script.reply_plan import rejection_of
from .format import COMMENT_MARK, RecordedBody, RecordedEvents, RecordedExchange, compact


def plan_recording(
    exchange: RecordedExchange,
    *,
    transport: Transport,
    close: CloseKind = "tcp",
    close_code: int = 1011,
    time_scale: float = 0.0,
    rename: Callable[[str], str] | None = None,
    renamed: Callable[[str], str] | None = None,
    steerable: bool = False,
) -> ResponsePlan:
    """The plan that plays `exchange` back. `rename` maps the recorded response id to the id to send (each
    replay issues its own), `renamed` the id of an earlier response the events name (`previous_response_id`) to
    the one this replay sent for it; `time_scale` 0 plays at once, 1 at the recorded speed; `steerable` (a cassette
    with steer frames): over a WebSocket, steering input accepted for it gets its successor."""
    kept = replayable_headers(exchange.response_headers)
    turn_state = next((v for k, v in exchange.response_headers.items() if k.lower() == TURN_STATE_HEADER), None)
    common: dict[str, Any] = {"headers": kept, "turn_state": turn_state, "replayed": True}
    if exchange.response_body is not None and not exchange.events:
        # A whole body that was not played from events (relayed: a response object, an error, a page): served as
        # it was sent. A body the fake server played from events is played again, into the same body.
        return _body_plan(exchange.response_body, exchange.response_status, rename, common)
    outcome = exchange.outcome
    if outcome is not None and outcome.kind is OutcomeKind.REFUSED:
        status = outcome.status or exchange.response_status or 500
        turn = {TURN_STATE_HEADER: turn_state} if turn_state else {}
        refused = Reject(status=status, code=outcome.code, message=outcome.message, headers={**kept, **turn})
        return ResponsePlan(rejection=rejection_of(refused), **common)
    events = compact(exchange.events)
    fault = _fault(outcome, len(events), close, close_code)
    plan = _events_plan(events, transport, time_scale, rename, renamed, fault=fault, **common)
    if steerable and transport == "ws" and plan.response_id:  # steering input accepted for it gets its successor
        return replace(plan, steer=SteerQueue(plan.response_id))
    return plan


def _events_plan(
    events: RecordedEvents,
    transport: Transport,
    time_scale: float,
    rename: Callable[[str], str] | None,
    renamed: Callable[[str], str] | None = None,
    **common: Any,
) -> ResponsePlan:
    """Recorded events played again, the response id they state renamed, and the previous one they name."""
    recorded_id, previous = _first_response_ids(events)
    sent_id = rename(recorded_id) if rename is not None and recorded_id else recorded_id
    swaps = [(recorded_id, sent_id)] if recorded_id and sent_id else []
    if previous and renamed is not None:
        swaps.append((previous, renamed(previous)))
    quoted = [(f'"{old}"', f'"{new}"') for old, new in swaps if old != new]
    played = events_of(_played(events, transport, time_scale, quoted))
    return ResponsePlan(played, response_id=sent_id or "", **common)


def _body_plan(
    recorded: RecordedBody, status: int | None, rename: Callable[[str], str] | None, common: dict[str, Any]
) -> ResponsePlan:
    """A recorded whole body sent again, the response id it states renamed."""
    content = recorded.content
    recorded_id = response_id_of_body(content)
    if rename is not None and recorded_id:
        content = content.replace(f'"{recorded_id}"'.encode(), f'"{rename(recorded_id)}"'.encode())
    body = VerbatimBody(status or 200, content, recorded.content_type)
    return ResponsePlan(response_id=response_id_of_body(content) or "", body=body, **common)


def _fault(outcome: Outcome | None, events: int, close: CloseKind, close_code: int) -> StreamFault:
    """How the recorded stream ended, after its `events`: dropped, stalled, or not at all."""
    if outcome is not None and outcome.kind in (OutcomeKind.DROPPED, OutcomeKind.DISCONNECTED):
        return StreamFault(drop_after=events, close=close, close_code=close_code)
    if outcome is not None and outcome.kind is OutcomeKind.STALLED:
        return StreamFault(stall_after=events)
    return NO_FAULT


def _played(
    events: RecordedEvents, transport: Transport, scale: float, swaps: list[tuple[str, str]]
) -> Iterator[PlannedEvent]:
    """The events as planned, a kept SSE comment left out over WebSocket (its pause goes to the next event)."""
    before = 0.0
    left_out = COMMENT_MARK if transport == "ws" and events.holds(COMMENT_MARK) else None
    for at, raw in events.timed():
        if left_out is not None and left_out in raw:
            continue
        for swap in swaps:
            raw = raw.replace(*swap)
        yield verbatim(raw, transport, max(0.0, at - before) * scale, lazy=True)  # checked at load
        before = at


def _first_response_ids(events: RecordedEvents) -> tuple[str | None, str | None]:
    """The response id the first lifecycle event states and the previous response it names, parsing no event but
    that one (a kept SSE comment has no `"response"`)."""
    for _, raw in events.timed():
        if '"response"' not in raw:
            continue
        event = json.loads(raw)
        if found := response_id_of([event]):
            previous = event["response"].get("previous_response_id")
            return found, previous if isinstance(previous, str) else None
    return None, None
