"""The default script's reply, made without the script models: what a plain `rrkit serve` answers, with pydantic
and the models loaded only once something asks for a script (`select.ScriptState`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..protocol.events import Event, ResponseEvents, usage
from ..protocol.ids import IdGenerator
from ..protocol.plan import ResponsePlan, events_of
from ..protocol.request import is_compaction_request
from ..protocol.vocabulary import Transport
from ..protocol.wire_events import planned

NAME = "default"
"""The default script's name; it has no steps, only its default reply."""
TEXT = "Hello from rrkit, the fake Responses server."
CHUNKS = 5
"""The default reply: this text, streamed in this many deltas (`loader.default_script` holds them as a script)."""
COMPACTED = "rrkit-compacted-history"
"""The `encrypted_content` of the compaction item answering a request whose input ends with `compaction_trigger`."""


def warmup(builder: ResponseEvents) -> Iterator[Event]:
    """The server's own answer to `generate: false`: created + completed, no output."""
    yield from builder.created()
    yield from builder.completed(usage(0, 0))


def default_plan(
    request: Mapping[str, Any], *, transport: Transport, ids: IdGenerator, warmup_only: bool
) -> ResponsePlan:
    """The plan `reply_plan.plan_reply` makes of the default script's reply (or of its warmup reply) to `request`."""
    builder = ResponseEvents(request, ids=ids, keep_events=False)
    made = warmup(builder) if warmup_only else _reply(builder)
    return ResponsePlan(events_of(planned(event, transport) for event in made), response_id=builder.response_id)


def _reply(builder: ResponseEvents) -> Iterator[Event]:
    yield from builder.start()
    if is_compaction_request(builder.request):
        yield from builder.iter_compaction(COMPACTED)
    else:
        yield from builder.iter_message(TEXT, CHUNKS)
    yield from builder.completed(builder.default_usage())
