"""A scripted reply as a response plan: its events made one at a time, as they are sent."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..protocol import errors
from ..protocol.encoded_runs import EncodedRuns, encoded_runs
from ..protocol.events import ERROR, METADATA, Event, ResponseEvents, estimate_tokens, response_id_of, usage
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.ids import IdGenerator
from ..protocol.plan import Lifecycle, PlannedEvent, Rejection, ResponsePlan, StreamFault, VerbatimBody, events_of
from ..protocol.resources import compaction_object, count_input_tokens, input_tokens_object
from ..protocol.routes import COMPACT, INPUT_TOKENS
from ..protocol.sse import encode_json
from ..protocol.steer import STEERED, SteerQueue
from ..protocol.vocabulary import Transport
from ..protocol.wire_events import planned
from . import default_reply
from .models import ErrorFrame, Fault, Reject, Reply
from .outputs import (
    WHOLE_ITEMS,
    AudioOut,
    CodeInterpreterCallOut,
    CompactionOut,
    CustomToolCallOut,
    FileSearchCallOut,
    FunctionCallOut,
    ImageGenerationCallOut,
    McpCallOut,
    McpListToolsOut,
    MessageOut,
    ReasoningOut,
    RefusalOut,
    ShellCallOut,
    ShellCallOutputOut,
    WebSearchCallOut,
    WholeItemOut,
)

WARMUP_REPLY = Reply.model_construct()  # as Reply(), without building its validator at import
"""The server's own answer to `generate: false`: created + completed, no output (`default_reply.warmup`)."""

_WRITERS: dict[type[Any], Callable[[ResponseEvents, Any], Iterator[Event]]] = {
    MessageOut: lambda b, o: b.iter_message(o.text, o.chunks, phase=o.phase, annotations=o.annotations),
    RefusalOut: lambda b, o: b.iter_refusal(o.text, o.chunks),
    ReasoningOut: lambda b, o: b.iter_reasoning(
        o.summary, o.chunks, text=o.text, encrypted_content=o.encrypted_content
    ),
    FunctionCallOut: lambda b, o: b.iter_function_call(
        o.name, o.arguments, o.chunks, call_id=o.call_id, namespace=o.namespace
    ),
    CustomToolCallOut: lambda b, o: b.iter_custom_tool_call(
        o.name, o.input, o.chunks, call_id=o.call_id, namespace=o.namespace
    ),
    WebSearchCallOut: lambda b, o: b.iter_web_search_call(o.query),
    FileSearchCallOut: lambda b, o: b.iter_file_search_call(*o.queries),
    ImageGenerationCallOut: lambda b, o: b.iter_image_generation_call(o.result, *o.partial_images),
    CodeInterpreterCallOut: lambda b, o: b.iter_code_interpreter_call(o.code, o.chunks, container_id=o.container_id),
    McpCallOut: lambda b, o: b.iter_mcp_call(o.server_label, o.name, o.arguments, o.output, o.chunks, error=o.error),
    McpListToolsOut: lambda b, o: b.iter_mcp_list_tools(o.server_label, o.tools, error=o.error),
    CompactionOut: lambda b, o: b.iter_compaction(o.encrypted_content),
    ShellCallOut: lambda b, o: b.iter_shell_call(
        o.commands, action=o.action, environment=o.environment, call_id=o.call_id
    ),
    ShellCallOutputOut: lambda b, o: b.iter_shell_call_output(o.call_id, [command.sent for command in o.output]),
    AudioOut: lambda b, o: b.iter_audio(o.transcript, *o.audio, chunks=o.chunks),
    **{kind: lambda b, o: _whole_item(b, o) for kind in WHOLE_ITEMS},
}
"""How each kind of scripted output item is written as events."""


def _whole_item(builder: ResponseEvents, output: WholeItemOut) -> Iterator[Event]:
    fields = output.item_fields()
    if (output.makes_call_id or output.asks_client()) and fields.get("call_id") is None:
        fields["call_id"] = builder.ids.new("call")
    return builder.iter_item(output.type, fields, added_status=output.added_status)


def plan_reply(
    reply: Reply,
    request: Mapping[str, Any],
    *,
    transport: Transport,
    ids: IdGenerator,
    warmup: bool = False,
    steerable: bool = False,
) -> ResponsePlan:
    """The plan for one scripted reply to one logical request; a warmup gets created + completed, no output.
    The response id is fixed now; every event is made when the engine asks for it. `steerable` (a script that
    answers steer frames): over a WebSocket, steering input accepted for it stops it at an item boundary."""
    if reply.reject is not None:
        return ResponsePlan(rejection=rejection_of(reply.reject))
    fault = reply.fault
    frames = _frames(reply, transport)
    common: dict[str, Any] = {
        "fault": stream_fault(fault),
        "headers": dict(reply.headers),
        "turn_state": reply.turn_state,
        "model": reply.model,
        "lifecycle": reply.background.lifecycle() if reply.background is not None else Lifecycle(),
    }
    if reply.events is not None:
        timed = list(_with_frames(((t.at, t.event) for t in reply.events), frames))
        delays = [max(0.0, now - before) for (before, _), (now, _) in zip([(0.0, {}), *timed], timed, strict=False)]
        encoded = (planned(event, transport, delay) for (_, event), delay in zip(timed, delays, strict=True))
        return ResponsePlan(events_of(encoded), response_id=response_id_of([e for _, e in timed]) or "", **common)
    undelayed = fault.pace is None and not (fault.delay_each or fault.delay_first)
    # the common case, made lean: encoded straight into runs, each series of deltas from one template
    lean = EncodedRuns(transport) if undelayed and not frames else None
    builder = ResponseEvents(
        request, ids=ids, model=reply.model, keep_events=False, take_deltas=lean.take if lean is not None else None
    )
    steer = SteerQueue(builder.response_id) if steerable and transport == "ws" and not warmup else None
    made = _generated(builder, reply, warmup, steer)
    if lean is not None:
        return ResponsePlan(lean.of(made), response_id=builder.response_id, steer=steer, **common)
    if frames:
        made = (event for _, event in _with_frames(((0.0, e) for e in made), frames))
    if undelayed:
        return ResponsePlan(encoded_runs(made, transport), response_id=builder.response_id, steer=steer, **common)
    return ResponsePlan(
        events_of(_delayed(made, fault, transport)), response_id=builder.response_id, steer=steer, **common
    )


def reply_events(
    reply: Reply, request: Mapping[str, Any], *, ids: IdGenerator | None = None, created_at: int | None = None
) -> list[Event]:
    """The events `reply` sends to `request` (its verbatim events, or the ones it makes, created at `created_at`),
    without faults or timing."""
    if reply.events is not None:
        return [dict(timed.event) for timed in reply.events]
    ids = ids or IdGenerator.counting()
    builder = ResponseEvents(request, ids=ids, model=reply.model, created_at=created_at, keep_events=False)
    return list(_generated(builder, reply, False))


def plan_route_reply(reply: Reply, route: str, request: Mapping[str, Any], *, ids: IdGenerator) -> ResponsePlan:
    """A scripted answer on a route other than the create: a refusal (`reject`); the whole body of a compaction
    (its `output`) or of an input token count (`usage.input_tokens`); else the fault and headers the server's own
    answer goes out with (a resumed stream cut, a poll with a header)."""
    if reply.reject is not None:
        return ResponsePlan(rejection=rejection_of(reply.reject))
    headers = dict(reply.headers)
    if route == COMPACT and reply.output:
        builder = ResponseEvents(request, ids=ids, keep_events=False)
        for _ in _generated(builder, reply, False):
            pass  # made for the items they leave in `builder.output`
        count = count_input_tokens(request)
        compacted = compaction_object(ids.new("response"), builder.output, input_tokens=count)
        return ResponsePlan(body=VerbatimBody(200, encode_json(compacted)), headers=headers)
    if route == INPUT_TOKENS and reply.usage is not None and reply.usage.input_tokens is not None:
        counted = input_tokens_object(reply.usage.input_tokens)
        return ResponsePlan(body=VerbatimBody(200, encode_json(counted)), headers=headers)
    return ResponsePlan(fault=stream_fault(reply.fault), headers=headers)


def _frames(reply: Reply, transport: Transport) -> list[tuple[int, Event]]:
    """The side-channel frames of a reply, each with the response event it goes before."""
    frames = [(frame.before, frame.frame) for frame in reply.frames]
    if reply.metadata_turn_state and transport == "ws":
        frames.insert(0, (0, {"type": METADATA, "headers": {TURN_STATE_HEADER: reply.metadata_turn_state}}))
    return sorted(frames, key=lambda placed: placed[0])  # stable: frames given for one place keep their order


def _with_frames(
    events: Iterable[tuple[float, Event]], frames: list[tuple[int, Event]]
) -> Iterator[tuple[float, Event]]:
    """The (offset, event) pairs with each frame before the response event it names (at that event's offset),
    the frames past the last event after it."""
    waiting = iter(frames)
    pending = next(waiting, None)
    at = 0.0
    for index, (at, event) in enumerate(events):
        while pending is not None and pending[0] <= index:
            yield at, pending[1]
            pending = next(waiting, None)
        yield at, event
    while pending is not None:
        yield at, pending[1]
        pending = next(waiting, None)


def _generated(builder: ResponseEvents, reply: Reply, warmup: bool, steer: SteerQueue | None = None) -> Iterator[Event]:
    """The reply's events; with steering input accepted for it (`steer`), it stops at the next output boundary,
    incomplete (`steered`)."""
    if reply.queued:
        yield from builder.queued()
    if warmup:
        yield from default_reply.warmup(builder)
        return
    yield from builder.start()
    for output in reply.output:
        if steer is not None and steer.requested:
            yield from builder.incomplete(STEERED)
            return
        yield from _WRITERS[type(output)](builder, output)
    yield from _ending(builder, reply)


def _ending(builder: ResponseEvents, reply: Reply) -> list[Event]:
    if reply.fail is not None:
        fail = reply.fail
        return builder.failed(fail.code, fail.message, param=fail.param, type=fail.type)
    if reply.incomplete is not None:
        return builder.incomplete(reply.incomplete)
    if reply.error_event is not None:
        return builder.error(reply.error_event.message, reply.error_event.code, reply.error_event.param)
    if reply.error_frame is not None:
        return [error_frame_event(reply.error_frame)]
    return builder.completed(_usage(reply, builder), end_turn=reply.end_turn)


def _delayed(events: Iterable[Event], fault: Fault, transport: Transport) -> Iterator[PlannedEvent]:
    paced = fault.pace.pace().paced(events) if fault.pace is not None else ((event, 0.0) for event in events)
    for index, (event, pause) in enumerate(paced):
        yield planned(event, transport, pause + fault.delay_each + (fault.delay_first if index == 0 else 0.0))


def stream_fault(fault: Fault) -> StreamFault:
    """A script's fault as the engine applies it (the delays are already in the planned events)."""
    return StreamFault(
        fault.drop_after,
        fault.stall_after,
        fault.close,
        fault.close_code,
        fault.close_reason,
        fault.chunk_bytes,
        fault.chunk_delay,
        fault.line_ending,
        fault.cut_inside,
        fault.not_json_at,
        fault.chaos.chaos() if fault.chaos is not None else None,
        cut_bytes=fault.cut_bytes,
    )


def rejection_of(reject: Reject) -> Rejection:
    """A scripted rejection: its own body, or an OpenAI-shaped error from its fields."""
    body = reject.body or errors.error_body(
        reject.message or f"Scripted error {reject.status}.",
        type=reject.type or errors.default_error_type(reject.status),
        code=reject.code,
        param=reject.param,
    )
    return Rejection(reject.status, body, reject.all_headers)


def error_frame_event(frame: ErrorFrame) -> Event:
    """The WebSocket `error` frame a script asks for; `status` and `headers` only when given."""
    message = frame.message or errors.failure_message(frame.code)
    status = frame.status or 0
    type_ = frame.type or (errors.default_error_type(status) if status else "invalid_request_error")
    event: Event = {"type": ERROR}
    if frame.status is not None:
        event["status"] = frame.status
    event["error"] = {
        **errors.error_object(message, type=type_, code=frame.code, param=frame.param),
        **frame.error_fields,
    }
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
    return usage(
        input_tokens,
        output_tokens,
        cached_tokens=spec.cached_tokens,
        reasoning_tokens=spec.reasoning_tokens,
        cache_write_tokens=spec.cache_write_tokens,
    )
