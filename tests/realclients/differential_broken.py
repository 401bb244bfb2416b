"""The broken-stream family of the observation table: streams that break an answer rule, and what Codex makes of
each (issue 61): it keeps each `output_item.done` and ends the turn at `response.completed`, whatever came before."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rrkit.protocol import ResponseEvents
from rrkit.script import Reply, Script
from rrkit.script.models import TimedEvent

from .differential_cases import WARM, Case, then_ok

Events = list[dict[str, Any]]
TEXT = "Hi from a broken stream."
ARGUMENTS = json.dumps({"cmd": "true", "login": False})


def _whole(*, call: bool = False) -> ResponseEvents:
    builder = ResponseEvents({"model": "gpt-test"})
    builder.start()
    if call:
        builder.function_call("exec_command", ARGUMENTS, call_id="c1")
    else:
        builder.message(TEXT)
    builder.completed()
    return builder


def _numbered(events: Events) -> Events:
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def _completed_id(events: Events, response_id: str) -> Events:
    last = events[-1]
    return [*events[:-1], {**last, "response": {**last["response"], "id": response_id}}]


def flat_error_then_whole() -> Events:
    """created, in_progress, a flat `error` event (server_error), then a whole message and response.completed."""
    builder = _whole()
    flat = {"type": "error", "code": "server_error", "message": "Something broke.", "param": None}
    return _numbered([*builder.events[:2], flat, *builder.events[2:]])


def completed_id_empty() -> Events:
    """A function call whose response.completed carries an empty id (response.created named another)."""
    return _completed_id(_whole(call=True).events, "")


def completed_id_other() -> Events:
    """A function call whose response.completed names another response than response.created did."""
    return _completed_id(_whole(call=True).events, "resp_other")


def lone_completed() -> Events:
    """response.completed alone, its output listing a message never streamed."""
    return _numbered(_whole().events[-1:])


def out_of_order() -> Events:
    """A whole answer whose second and third events carry each other's sequence_number."""
    events = _whole().events
    first, second = events[1], events[2]
    swapped = [{**first, "sequence_number": 2}, {**second, "sequence_number": 1}]
    return [events[0], *swapped, *events[3:]]


def completion_before_output() -> Events:
    """response.created, then response.completed listing a message no event streamed."""
    events = _whole().events
    return _numbered([events[0], events[-1]])


BROKEN_STREAMS: dict[str, tuple[str, Callable[[], Events]]] = {
    "flat-error-then-a-whole-response": ("a flat error event, then a whole response", flat_error_then_whole),
    "completed-id-empty": ("response.completed with an empty id: no baseline", completed_id_empty),
    "completed-id-other": ("response.completed with another id than response.created", completed_id_other),
    "lone-completed": ("a lone response.completed", lone_completed),
    "out-of-order-by-sequence-number": ("two events out of order by sequence_number", out_of_order),
    "completion-before-output": ("response.completed before its output", completion_before_output),
}
"""Each broken stream: what it is, and its events (one answer; the id cases a function call, so that the turn
sends one more request, full or incremental)."""


def broken_reply(name: str) -> Reply:
    return Reply(events=[TimedEvent(event=event) for event in BROKEN_STREAMS[name][1]()])


def _flow(name: str, websockets: bool) -> tuple[str, ...]:
    """What Codex does: the turn takes the stream; after a call the follow-up is full when no baseline is left."""
    first = ("<none> ws incremental -> completed",) if websockets else ("http full -> completed",)
    if name == "completed-id-empty":
        follow = "<none> ws full -> completed" if websockets else "<none> http full -> completed"
        return (WARM, *first, follow) if websockets else (*first, follow)
    if name == "completed-id-other":  # over WebSocket it continues from the completed id, unknown to the server
        if not websockets:
            return (*first, "<none> http full -> completed")
        return (WARM, *first, "<none> ws incremental -> refused 400", "<backoff> ws full -> completed")
    return (WARM, *first) if websockets else first


def _script(name: str) -> Script:
    return then_ok(broken_reply(name))


BROKEN_CASES: dict[str, Case] = {
    f"{'ws' if websockets else 'http'}-broken-{name}": Case(
        f"{said}: Codex takes it",
        _script(name),
        websockets,
        _flow(name, websockets),
        "completed",
    )
    for name, (said, _) in BROKEN_STREAMS.items()
    for websockets in (False, True)
}
"""The broken-stream family, over SSE and WebSocket."""
