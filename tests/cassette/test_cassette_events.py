"""An exchange's events are held compactly (one text per exchange, not an object per event) and read back as a
sequence of RecordedEvents equal to the events given; a loaded cassette holds about its file's size in memory;
replay plays them from that text, a kept SSE comment left out over WebSocket with its pause."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import tracemalloc
from pathlib import Path

import pytest

from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange, load_cassette, save_cassette
from rrkit.cassette.playback import plan_recording
from rrkit.protocol.plan import PlannedEvent, ResponsePlan

CREATED = '{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}'
COMMENT = '{"type":"rrkit.sse_comment","comment":"keep-alive"}'
COMPLETED = '{"type":"response.completed","response":{"id":"resp_1","status":"completed"}}'


def delta(n: int) -> str:
    return (
        '{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,'
        f'"delta":"w\u00f6rd {n} ","sequence_number":{n}}}'
    )


def exchange_of(*events: RecordedEvent) -> RecordedExchange:
    return RecordedExchange(id=0, transport="http", events=list(events))


@pytest.mark.parametrize("middle", [delta(1), delta(1).replace("\u00f6", "o")], ids=["utf8", "ascii"])
def test_events_read_back_as_a_sequence_equal_to_the_events_given(middle: str) -> None:
    given = [RecordedEvent(0.0, CREATED), RecordedEvent(0.25, middle), RecordedEvent(0.5, COMPLETED)]
    events = exchange_of(*given).events
    assert len(events) == 3 and list(events) == given and events == given and given == events
    assert events[0] == given[0] and events[-1] == given[-1] and events[1:] == given[1:]
    assert [e.type for e in events] == ["response.created", "response.output_text.delta", "response.completed"]
    assert events.index(given[1]) == 1 and given[2] in events
    assert events != given[:2] and events != [*given[:2], RecordedEvent(0.75, COMPLETED)]
    assert repr(events) == repr(given)
    with pytest.raises(IndexError):
        events[3]


def test_a_recorded_event_read_back_is_a_value_not_a_view() -> None:
    recorded = exchange_of(RecordedEvent(0.0, CREATED)).events[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        recorded.at = 1.0  # type: ignore[misc]


def test_an_event_text_no_file_can_hold_is_kept_as_it_was_and_refused_when_saved(tmp_path: Path) -> None:
    raw = '{"type":"response.output_text.delta","delta":"\ud800"}'
    cassette = Cassette(name="lone", exchanges=[exchange_of(RecordedEvent(0.0, raw))])
    assert cassette.exchanges[0].events[0].raw == raw
    with pytest.raises(UnicodeEncodeError):
        save_cassette(cassette, tmp_path / "lone.json")
    assert not list(tmp_path.iterdir())


def test_a_loaded_cassette_holds_about_its_file_size_in_memory(tmp_path: Path) -> None:
    exchanges = [
        RecordedExchange(id=i, transport="http", events=[RecordedEvent(0.001 * n, delta(n)) for n in range(250)])
        for i in range(20)
    ]
    path = save_cassette(Cassette(name="memory", exchanges=exchanges), tmp_path / "memory.json")
    size = path.stat().st_size
    gc.collect()
    tracemalloc.start()
    try:
        loaded = load_cassette(path)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loaded.event_count == 5000
    assert held <= 1.2 * size, f"the loaded cassette holds {held / size:.2f}x its file's size"
    assert peak <= 2 * size, f"loading it took {peak / size:.2f}x its file's size at the peak"


def planned_events(plan: ResponsePlan) -> list[PlannedEvent]:
    async def drain() -> list[PlannedEvent]:
        got: list[PlannedEvent] = []
        async for run in plan.events:
            got += run
        return got

    return asyncio.run(drain())


@pytest.mark.parametrize("middle", [delta(1), delta(1).replace("\u00f6", "o")], ids=["utf8", "ascii"])
def test_replay_sends_the_recorded_texts_with_their_pauses_and_a_comment_over_sse_only(middle: str) -> None:
    recorded = [(0.0, CREATED), (0.5, COMMENT), (1.0, middle), (1.25, COMPLETED)]
    exchange = exchange_of(*(RecordedEvent(at, raw) for at, raw in recorded))
    sse = planned_events(plan_recording(exchange, transport="http", time_scale=1.0))
    assert [p.wire for p in sse] == [
        b"event: response.created\ndata: " + CREATED.encode() + b"\n\n",
        b":keep-alive\n\n",
        b"event: response.output_text.delta\ndata: " + middle.encode() + b"\n\n",
        b"event: response.completed\ndata: " + COMPLETED.encode() + b"\n\n",
    ]
    assert [p.delay for p in sse] == [0.0, 0.5, 0.5, 0.25]
    ws = planned_events(plan_recording(exchange, transport="ws", time_scale=1.0))
    assert [p.wire for p in ws] == [CREATED, middle, COMPLETED]
    assert [p.delay for p in ws] == [0.0, 1.0, 0.25]  # the comment's pause goes to the event after it


def test_replay_sends_its_own_response_id_in_every_event_that_states_the_recorded_one() -> None:
    exchange = exchange_of(RecordedEvent(0.0, CREATED), RecordedEvent(0.5, delta(1)), RecordedEvent(1.0, COMPLETED))
    plan = plan_recording(exchange, transport="ws", rename=lambda recorded: recorded + "_again")
    assert plan.response_id == "resp_1_again"
    assert [p.wire for p in planned_events(plan)] == [
        CREATED.replace("resp_1", "resp_1_again"),
        delta(1),
        COMPLETED.replace("resp_1", "resp_1_again"),
    ]
