"""Turning a reply into the exact events to send, with their timing: the response plan."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..protocol import errors
from ..protocol.events import ERROR, SSE_COMMENT, Event, ResponseEvents, estimate_tokens, response_id_of, usage
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.ids import IdGenerator
from ..protocol.outcome import response_of_body
from ..protocol.sse import encode_comment, encode_json, encode_sse
from ..protocol.vocabulary import CloseKind, Transport
from .models import (
    CustomToolCallOut,
    ErrorFrame,
    Fault,
    FunctionCallOut,
    MessageOut,
    ReasoningOut,
    RefusalOut,
    Reject,
    Reply,
)

WARMUP_REPLY = Reply()
"""The server's own answer to `generate: false`: created + completed, no output."""

RESPONSE_METADATA = "codex.response.metadata"
"""A server frame newer Codex versions read turn state from: `{type, headers: {x-codex-turn-state}}`."""


@dataclass(frozen=True, slots=True)
class VerbatimBody:
    """A whole HTTP answer, relayed or replayed exactly as it came: not a stream (a JSON response object, an
    error body, an HTML page)."""

    status: int
    content: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class RecordedReply:
    """A recorded response played back verbatim: compact JSON events with their offsets, and how it ended."""

    events: Sequence[tuple[float, str]]  # (seconds since the exchange started, compact JSON)
    fault: Fault = field(default_factory=Fault)
    reject: Reject | None = None
    turn_state: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    time_scale: float = 0.0  # 0 plays at once, 1 at recorded speed
    rename: Callable[[str], str] | None = None  # recorded response id -> id to send
    body: VerbatimBody | None = None  # recorded as a whole body: served as it is, instead of events


@dataclass(frozen=True, slots=True)
class PlannedEvent:
    """One event, encoded once for the transport it goes out on, and the pause before it is sent."""

    event: Event
    wire: str | bytes  # the JSON text of a WebSocket frame, or the bytes of an SSE frame
    delay: float


class StreamCut(Exception):
    """Raised by a live stream whose source was cut: the client's connection is cut the same way."""

    def __init__(self, close: CloseKind = "tcp", code: int = 1011, reason: str = "") -> None:
        super().__init__(f"upstream stream cut ({close}, {code})")
        self.close, self.code, self.reason = close, code, reason


@dataclass(frozen=True)
class LiveReply:
    """A response relayed while it arrives (from an upstream server), with the headers it came with; or, when
    the upstream answered with a whole body instead of a stream, that body."""

    events: AsyncIterator[PlannedEvent] | None = None  # may raise StreamCut
    turn_state: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    reject: Reject | None = None
    fault: Fault = field(default_factory=Fault)
    on_finish: Callable[[], Awaitable[None]] | None = None  # releases what the stream held
    body: VerbatimBody | None = None


@dataclass(frozen=True, slots=True)
class ResponsePlan:
    response_id: str  # "" when only the stream will tell (a live relay)
    events: Sequence[PlannedEvent]
    fault: Fault
    live: LiveReply | None = None
    body: VerbatimBody | None = None  # the answer is this body, not a stream of events

    async def stream(self) -> AsyncGenerator[PlannedEvent, None]:
        if self.live is None or self.live.events is None:
            for planned in self.events:
                yield planned
            return
        try:
            async for planned in self.live.events:
                yield planned
        finally:
            if self.live.on_finish is not None:
                await self.live.on_finish()


def planned_event(raw: str, transport: Transport, delay: float = 0.0) -> PlannedEvent:
    """A verbatim event (compact JSON text) made ready for `transport`; a kept SSE comment goes out as one."""
    event = json.loads(raw)
    kind = event.get("type")
    if kind == SSE_COMMENT and transport != "ws":
        return PlannedEvent(event, encode_comment(str(event.get("comment", ""))), delay)
    wire: str | bytes = raw if transport == "ws" else encode_sse(str(kind), raw.encode())
    return PlannedEvent(event, wire, delay)


def sse_comment(text: str) -> PlannedEvent:
    """An SSE comment line (a keep-alive) relayed as it came."""
    return PlannedEvent({"type": SSE_COMMENT, "comment": text}, encode_comment(text), 0.0)


def _planned(events: list[Event], delays: list[float], transport: Transport) -> list[PlannedEvent]:
    if transport == "ws":
        return [PlannedEvent(e, encode_json(e).decode(), d) for e, d in zip(events, delays, strict=True)]
    return [PlannedEvent(e, encode_sse(str(e["type"]), encode_json(e)), d) for e, d in zip(events, delays, strict=True)]


def _delays(offsets: Sequence[float], scale: float = 1.0) -> list[float]:
    return [max(0.0, now - before) * scale for before, now in zip([0.0, *offsets], offsets, strict=False)]


def _render_recorded(reply: RecordedReply, transport: Transport) -> ResponsePlan:
    timed = [(at, raw) for at, raw in reply.events if transport != "ws" or f'"type":"{SSE_COMMENT}"' not in raw]
    raws = [raw for _, raw in timed]
    recorded_id = _first_response_id(raws) if reply.body is None else _body_response_id(reply.body)
    if reply.rename is not None and recorded_id:
        new_id = reply.rename(recorded_id)
        raws = [raw.replace(f'"{recorded_id}"', f'"{new_id}"') for raw in raws]
        if reply.body is not None:
            renamed = reply.body.content.replace(f'"{recorded_id}"'.encode(), f'"{new_id}"'.encode())
            reply = replace(reply, body=replace(reply.body, content=renamed))
    if reply.body is not None:
        return ResponsePlan(_body_response_id(reply.body) or "", [], reply.fault, body=reply.body)
    delays = _delays([at for at, _ in timed], reply.time_scale)
    planned = [planned_event(raw, transport, delay) for raw, delay in zip(raws, delays, strict=True)]
    return ResponsePlan(response_id_of([p.event for p in planned]) or "", planned, reply.fault)


def _first_response_id(raws: Sequence[str]) -> str | None:
    """The response id the first lifecycle event states, parsing no further than that event (each event is
    parsed once more as it is planned)."""
    for raw in raws:
        if '"response"' in raw and (found := response_id_of([json.loads(raw)])):
            return found
    return None


def _body_response_id(body: VerbatimBody) -> str | None:
    """The id of the response object a JSON body holds, if it holds one."""
    response = response_of_body(body.content)
    return str(response["id"]) if response is not None and isinstance(response.get("id"), str) else None


def render(
    reply: Reply | RecordedReply | LiveReply, request: Mapping[str, Any], *, transport: Transport, ids: IdGenerator
) -> ResponsePlan:
    """The plan for one reply to one logical request; `WARMUP_REPLY` gets created + completed, no output."""
    if isinstance(reply, RecordedReply):
        return _render_recorded(reply, transport)
    if isinstance(reply, LiveReply):
        body_id = _body_response_id(reply.body) if reply.body is not None else None
        return ResponsePlan(body_id or "", [], reply.fault, live=reply, body=reply.body)
    warmup = reply is WARMUP_REPLY
    fault = reply.fault
    prelude = _metadata_frame(reply.metadata_turn_state) if reply.metadata_turn_state and transport == "ws" else []
    if reply.events is not None:
        events = [*prelude, *(timed.event for timed in reply.events)]
        delays = _delays([0.0] * len(prelude) + [timed.at for timed in reply.events])
        return ResponsePlan(response_id_of(events) or "", _planned(events, delays, transport), fault)

    builder = ResponseEvents(request, ids=ids, model=reply.model)
    if warmup:
        builder.created()
        builder.completed(usage(0, 0))
    else:
        builder.start()
        for output in reply.output:
            if isinstance(output, MessageOut):
                builder.message(output.text, output.chunks, phase=output.phase)
            elif isinstance(output, RefusalOut):
                builder.refusal(output.text, output.chunks)
            elif isinstance(output, ReasoningOut):
                builder.reasoning(
                    output.summary, output.chunks, text=output.text, encrypted_content=output.encrypted_content
                )
            elif isinstance(output, FunctionCallOut):
                builder.function_call(output.name, output.arguments, output.chunks, call_id=output.call_id)
            elif isinstance(output, CustomToolCallOut):
                builder.custom_tool_call(output.name, output.input, output.chunks, call_id=output.call_id)
        if reply.fail is not None:
            builder.failed(reply.fail.code, reply.fail.message)
        elif reply.incomplete is not None:
            builder.incomplete(reply.incomplete)
        elif reply.error_event is not None:
            builder.error(reply.error_event.message, reply.error_event.code, reply.error_event.param)
        elif reply.error_frame is not None:
            builder.events.append(error_frame_event(reply.error_frame))
        else:
            builder.completed(_usage(reply, builder), end_turn=reply.end_turn)
    events = [*prelude, *builder.events]
    delays = [fault.delay_each + (fault.delay_first if index == 0 else 0.0) for index in range(len(events))]
    return ResponsePlan(builder.response_id, _planned(events, delays, transport), fault)


def _metadata_frame(token: str) -> list[Event]:
    return [{"type": RESPONSE_METADATA, "headers": {TURN_STATE_HEADER: token}}]


def error_frame_event(frame: ErrorFrame) -> Event:
    """The WebSocket `error` frame a script asks for; `status` and `headers` only when given."""
    message = frame.message or errors.failure_message(frame.code)
    status = frame.status or 0
    type_ = frame.type or (errors.default_error_type(status) if status else "invalid_request_error")
    event: Event = {"type": ERROR}
    if frame.status is not None:
        event["status"] = frame.status
    event["error"] = errors.error_object(message, type_=type_, code=frame.code, param=frame.param)
    headers = frame.all_headers
    if headers:
        event["headers"] = headers
    return event


def _usage(reply: Reply, builder: ResponseEvents) -> dict[str, Any]:
    spec = reply.usage
    if spec is None:
        return builder.default_usage()
    input_tokens = spec.input_tokens if spec.input_tokens is not None else estimate_tokens(builder.request.get("input"))
    output_tokens = spec.output_tokens if spec.output_tokens is not None else estimate_tokens(builder.output)
    return usage(input_tokens, output_tokens, cached_tokens=spec.cached_tokens, reasoning_tokens=spec.reasoning_tokens)
