"""The engine sends the events of a plan in runs: what is due at once goes out in one write, a pause or a fault
splits a run exactly where the events say, and the capture keeps each event as its wire form only."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrkit.protocol.encoded_runs import encoded_runs
from rrkit.protocol.events import SSE_COMMENT
from rrkit.protocol.plan import NO_FAULT, RUN_BYTES, RUN_EVENTS, PlannedEvent, ResponsePlan, StreamFault, events_of
from rrkit.protocol.vocabulary import CloseKind, Transport
from rrkit.protocol.wire_events import event_of_wire, planned, sse_comment, type_of_wire, verbatim
from rrkit.server.capture import Capture, SentEvent, SentEvents
from rrkit.server.stream import play


class Recorder:
    """A channel that records what the engine asks of it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def send(self, wires: Sequence[str | bytes]) -> None:
        self.calls.append(("send", len(wires)))

    async def pause(self, seconds: float) -> bool:
        self.calls.append(("pause", seconds))
        return False

    async def stall(self) -> None:
        self.calls.append(("stall", None))

    async def cut(self, close: CloseKind, code: int, reason: str) -> None:
        self.calls.append(("cut", close))

    async def finish(self) -> None:
        self.calls.append(("finish", None))


def deltas(count: int, delays: dict[int, float] | None = None) -> Iterator[PlannedEvent]:
    for index in range(count):
        event = {"type": "response.output_text.delta", "sequence_number": index, "delta": "x"}
        yield planned(event, "http", (delays or {}).get(index, 0.0))


def played(events: Iterator[PlannedEvent], fault: StreamFault = NO_FAULT) -> tuple[list[tuple[str, object]], int]:
    channel = Recorder()
    exchange = Capture().new_exchange("http", {}, None)
    outcome = asyncio.run(play(ResponsePlan(events_of(events), fault=fault), exchange, channel))
    assert len(exchange.events) == outcome.events_sent
    return channel.calls, outcome.events_sent


async def runs_of(events: Iterator[PlannedEvent]) -> list[int]:
    return [len(run) async for run in events_of(events)]  # type: ignore[arg-type]


def test_ready_events_come_in_runs_of_one_event_then_of_run_events() -> None:
    assert asyncio.run(runs_of(deltas(1000))) == [1, 256, 256, 256, 231]
    assert RUN_EVENTS == 256


def test_an_event_that_waits_begins_a_new_run() -> None:
    assert asyncio.run(runs_of(deltas(10, {5: 0.1}))) == [1, 4, 5]  # events 1-4, then 5 (waits) to 9


def test_a_run_ends_once_it_holds_run_bytes_of_wire() -> None:
    big = (planned({"type": "response.output_text.delta", "delta": "x" * (RUN_BYTES // 3)}, "http") for _ in range(12))
    assert asyncio.run(runs_of(big)) == [1, 3, 3, 3, 2]


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_scripted_streams_encoded_runs_are_the_runs_of_its_planned_events(transport: Transport) -> None:
    """encoded_runs (every scripted event's path, no object made per event) is events_of(planned(...)) exactly:
    the same runs, the same wires and types, each event read back as the PlannedEvent planned made."""
    big = "x" * (RUN_BYTES // 3)
    events = [
        {"type": "response.output_text.delta", "sequence_number": n, "delta": big if n % 97 == 5 else "x"}
        for n in range(1200)
    ]

    async def both() -> tuple[list[list[PlannedEvent]], list[list[PlannedEvent]], list[object]]:
        lean = [run async for run in encoded_runs(iter(events), transport)]
        made = [list(run) async for run in events_of(planned(event, transport) for event in events)]
        return [list(run) for run in lean], made, [(run.wires, run.types) for run in lean]  # type: ignore[attr-defined]

    lean, made, raw = asyncio.run(both())
    assert [len(run) for run in lean] == [len(run) for run in made] and len(made) > 5
    assert lean == made
    assert raw == [([one.wire for one in run], [one.type for one in run]) for run in made]


def test_a_run_of_events_due_at_once_is_one_send() -> None:
    calls, sent = played(deltas(7))
    assert calls == [("send", 1), ("send", 6), ("finish", None)] and sent == 7


def test_a_pause_splits_a_run_before_the_event_that_waits() -> None:
    calls, _ = played(deltas(7, {4: 0.01}))
    assert calls == [("send", 1), ("send", 3), ("pause", 0.01), ("send", 3), ("finish", None)]


@pytest.mark.parametrize("after", [0, 1, 2, 5, 7])
def test_a_drop_inside_a_run_sends_exactly_the_events_before_it(after: int) -> None:
    calls, sent = played(deltas(7), StreamFault(drop_after=after))
    assert sent == after and calls[-1] == ("cut", "tcp")
    assert sum(count for kind, count in calls if kind == "send") == after  # type: ignore[misc]


@pytest.mark.parametrize("after", [0, 3, 7])
def test_a_stall_inside_a_run_sends_exactly_the_events_before_it(after: int) -> None:
    calls, sent = played(deltas(7), StreamFault(stall_after=after))
    assert sent == after and calls[-1] == ("stall", None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)


@settings(deadline=None, max_examples=200)
@given(
    kind=st.text(alphabet=st.characters(blacklist_characters='\r\n\\"'), min_size=1, max_size=20),
    fields=st.dictionaries(st.text(max_size=8).filter(lambda key: key != "type"), json_values, max_size=4),
    transport=st.sampled_from(["http", "ws"]),
)
def test_an_event_reads_back_from_its_wire_form_exactly(kind: str, fields: dict[str, object], transport: str) -> None:
    event = {"type": kind, **fields}
    wire = planned(event, transport).wire  # type: ignore[arg-type]
    assert event_of_wire(wire) == event
    assert type_of_wire(wire) in (kind, None)


TYPES = st.sampled_from(["response.output_item.done", "response.output_item.done.x", "response.created", "a\\b"])


def sent_together(events: SentEvents, at: float, run: list[PlannedEvent]) -> None:
    """What the engine notes of a run it sent in one write: the events' wires and types."""
    events.sent(at, [one.wire for one in run], [one.type for one in run])


@settings(deadline=None, max_examples=200)
@given(kinds=st.lists(TYPES, max_size=8), transport=st.sampled_from(["http", "ws"]), kept_whole=st.booleans())
def test_the_done_items_noted_as_sent_are_the_events_whose_type_reads_so(
    kinds: list[str], transport: str, kept_whole: bool
) -> None:
    """`SentEvents.done_items` finds by the positions noted at send time exactly what reading every event's type
    finds, whether an event went out from the engine or was kept as it came."""
    events = Capture().new_exchange("ws", {}, None).events
    for index, kind in enumerate(kinds):
        if kept_whole and index % 2:
            events.append(SentEvent(0.0, {"type": kind, "n": index}))
        else:
            sent_together(events, 0.0, [planned({"type": kind, "n": index}, transport)])  # type: ignore[arg-type]
    slow = [sent.event for sent in events if sent.type == "response.output_item.done"]
    assert [sent.event for sent in events.done_items()] == slow


def test_a_kept_comment_and_a_lone_surrogate_read_back_from_their_wire_form() -> None:
    comment = sse_comment(" ping")
    assert event_of_wire(comment.wire) == {"type": SSE_COMMENT, "comment": " ping"}
    assert type_of_wire(comment.wire) == SSE_COMMENT
    odd = verbatim('{"type":"response.created","note":"\\udc00","big":123456789012345678901234567890}', "http")
    assert event_of_wire(odd.wire) == {
        "type": "response.created",
        "note": "\udc00",
        "big": 123456789012345678901234567890,
    }


def test_a_captured_stream_leaves_nothing_for_the_garbage_collector_to_walk() -> None:
    exchange = Capture().new_exchange("ws", {}, None)
    gc.collect()
    before = len(gc.get_objects())
    for start in range(0, 20_000, 100):
        sent_together(exchange.events, start / 1000, list(deltas(100)))
    gc.collect()
    assert len(exchange.events) == 20_000
    assert len(gc.get_objects()) - before < 100  # one list, not an object or two per event
    assert exchange.events[-1].event["sequence_number"] == 99 and exchange.events[-1].at == 19.9


def test_a_capture_reads_back_as_the_events_it_was_given() -> None:
    exchange = Capture().new_exchange("http", {}, None)
    sent_together(exchange.events, 0.5, list(deltas(2)))
    exchange.events.append(SentEvent(0.75, {"type": "response.completed", "response": {"id": "resp_1"}}))
    assert [sent.type for sent in exchange.events] == ["response.output_text.delta"] * 2 + ["response.completed"]
    assert exchange.events[1] == SentEvent(
        0.5, {"type": "response.output_text.delta", "sequence_number": 1, "delta": "x"}
    )
    assert exchange.events.last_ending() == exchange.events[2]
    assert exchange.event_types[-1] == "response.completed"
