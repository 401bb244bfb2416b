"""A series of deltas encoded from one template is, wire for wire, what encoding each of its events makes; a
builder that hands its deltas over whole yields the same runs, wires, types and events as one that makes them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rrkit.protocol.encoded_runs as encoded_runs_module
from rrkit.protocol.encoded_runs import EncodedRuns, encoded_runs, series_wires
from rrkit.protocol.event_builder import DeltaSeries
from rrkit.protocol.events import ResponseEvents
from rrkit.protocol.ids import IdGenerator
from rrkit.protocol.plan import RUN_BYTES, RUN_EVENTS, PlannedEvent
from rrkit.protocol.vocabulary import Transport
from rrkit.protocol.wire_events import wire_of
from rrkit.script import reply, text
from rrkit.script.reply_plan import plan_reply

_values = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond 64 bits: what orjson refuses
    st.booleans(),
    st.none(),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3),
)
_pieces = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from(["x", "", '"', "\\", "\n", "é", "\u2028"])), max_size=40
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["response.output_text.delta", "response.reasoning_text.delta", "x.é.delta", 't"q']),
    first=st.integers(min_value=0, max_value=10**6),
    where=st.dictionaries(st.sampled_from(["item_id", "output_index", "content_index", "summary_index"]), _values),
    pieces=_pieces,
    extra=st.one_of(st.just({}), st.just({"logprobs": []}), st.dictionaries(st.just("obfuscation"), _values)),
    ws=st.booleans(),
)
def test_a_series_encoded_from_its_template_is_each_event_encoded(
    kind: str, first: int, where: dict[str, Any], pieces: list[str], extra: dict[str, Any], ws: bool
) -> None:
    series = DeltaSeries(kind, first, where, pieces, extra)
    assert series_wires(series, ws) == [wire_of(event, ws) for event in series.events()]


@pytest.mark.parametrize("ws", [False, True])
def test_a_series_with_a_lone_surrogate_or_a_huge_integer_is_encoded_each_event_its_own_way(ws: bool) -> None:
    for where, pieces in (({"item_id": "m"}, ["a", "\ud800", "b"]), ({"output_index": 2**80}, ["a", "b"])):
        series = DeltaSeries("response.output_text.delta", 3, where, pieces, {"logprobs": []})
        assert series_wires(series, ws) == [wire_of(event, ws) for event in series.events()]


def _stream(builder: ResponseEvents, chunks: int) -> Iterator[dict[str, Any]]:
    yield from builder.start()
    yield from builder.iter_reasoning(["thinking it over"], chunks, text="why " * 40)
    yield from builder.iter_message("y" * (RUN_BYTES // 50) + "z" * 9000, chunks)
    yield from builder.iter_function_call("lookup", '{"q": "é"}', chunks)
    yield from builder.completed()


def _runs(
    transport: Transport, chunks: int, taker: Callable[[EncodedRuns], bool]
) -> list[tuple[list[str | bytes], list[str | None], list[PlannedEvent]]]:
    lean = EncodedRuns(transport)
    builder = ResponseEvents(
        {"model": "m", "input": "hi"},
        ids=IdGenerator.counting(),
        created_at=1_700_000_000,
        keep_events=False,
        take_deltas=lean.take if taker(lean) else None,
    )
    runs = lean.of(_stream(builder, chunks)) if taker(lean) else encoded_runs(_stream(builder, chunks), transport)

    async def collect() -> list[tuple[list[str | bytes], list[str | None], list[PlannedEvent]]]:
        return [(list(run.wires), list(run.types), list(run)) async for run in runs]  # type: ignore[attr-defined]

    return asyncio.run(collect())


@pytest.mark.parametrize("transport", ["http", "ws"])
@pytest.mark.parametrize("chunks", [1, 7, 600, 5000])
def test_a_builder_handing_its_deltas_over_whole_makes_the_runs_of_one_that_makes_each_event(
    transport: Transport, chunks: int
) -> None:
    whole = _runs(transport, chunks, lambda _: True)
    each = _runs(transport, chunks, lambda _: False)
    assert [len(wires) for wires, _, _ in whole] == [len(wires) for wires, _, _ in each]
    assert whole == each
    assert sum(len(wires) for wires, _, _ in whole) > chunks  # the deltas are there, in their runs


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_series_that_fills_a_run_to_exactly_run_bytes_is_cut_after_the_wire_that_fills_it(
    transport: Transport,
) -> None:
    kind, where = "response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0}

    def length(number: int, piece: str) -> int:
        return len(wire_of(next(DeltaSeries(kind, number, where, [piece], {}).events()), transport == "ws"))

    big = "a" * (RUN_BYTES // 3)
    pieces = ["x", big, big]  # a run of one, then a run these begin
    pieces.append("a" * (RUN_BYTES - length(1, big) - length(2, big) - length(3, "")))
    pieces += ["x"] * 10
    series = DeltaSeries(kind, 0, where, pieces, {})
    runs = EncodedRuns(transport)
    runs.take(series)

    async def lengths() -> tuple[list[int], list[int]]:
        whole = [len(run) async for run in runs.of([])]
        return whole, [len(run) async for run in encoded_runs(series.events(), transport)]

    whole, each = asyncio.run(lengths())
    assert whole == each == [1, 3, 10]


async def test_a_long_series_is_encoded_a_run_at_a_time_as_the_engine_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = 0
    wires_of = encoded_runs_module._SeriesWires.wires

    def counting(self: Any, start: int, stop: int) -> list[str | bytes]:
        nonlocal encoded
        made = wires_of(self, start, stop)
        encoded += len(made)
        return made

    monkeypatch.setattr(encoded_runs_module._SeriesWires, "wires", counting)
    plan = plan_reply(reply(text("x" * 100_000, chunks=100_000)), {"model": "m"}, transport="http", ids=IdGenerator())
    asked = 0
    async for run in plan.events:
        asked += len(run)
        if asked > 2 * RUN_EVENTS:
            break
    await plan.events.aclose()
    assert asked > 2 * RUN_EVENTS and encoded <= asked + RUN_EVENTS  # not the 100,000 the message holds
