"""One oracle, consistent with itself (issue 61): the three streams it once judged against its own rule, every
operator total on every stream (an empty one included), and, as properties over generated streams, a verdict that
operators keeping a stream valid do not change, that operators breaking it do, and that a done text is judged by
its part's deltas whatever events surround them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrkit.explore.operators import OPERATOR_NAMES, OPERATORS, Op, apply
from rrkit.explore.seeds import shipped_seeds
from rrkit.explore.stream import Stream, Verdict, expected
from rrkit.protocol import events as ev
from rrkit.protocol.order import check_order
from rrkit.protocol.vocabulary import TRANSPORTS, Transport

Event = dict[str, Any]
SEEDS = {seed.name: seed for seed in shipped_seeds()}
KEEPS = [operator.name for operator in OPERATORS if operator.claim == "keeps"]
BREAKS = [operator.name for operator in OPERATORS if operator.claim == "no answer"]
TEXT_EVENTS = (ev.TEXT_DELTA, ev.TEXT_DONE)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ops = st.builds(Op, name=st.sampled_from(OPERATOR_NAMES), at=st.integers(0, 63), value=st.integers(0, 63))
seeds = st.sampled_from(sorted(SEEDS))
transports = st.sampled_from(TRANSPORTS)


def numbered(events: list[Event]) -> tuple[Event, ...]:
    return tuple({**event, "sequence_number": number} for number, event in enumerate(events))


def short_with(middle: list[Event]) -> Stream:
    """The `short` seed ("é" in one delta) with its delta and done event replaced by `middle`, numbered again."""
    events = [event for event in SEEDS["short"].events if event["type"] not in TEXT_EVENTS]
    at = next(index for index, event in enumerate(events) if event["type"] == ev.PART_ADDED)
    return Stream(numbered(events[: at + 1] + middle + events[at + 1 :]))


def text_event(kind: str, text: str) -> Event:
    field = "delta" if kind == ev.TEXT_DELTA else "text"
    where = {"item_id": "msg_2", "output_index": 0, "content_index": 0}
    return {"type": kind, **where, field: text, "logprobs": []}


# -- the three streams of issue 61 --------------------------------------------------------------------------------


def test_a_done_text_no_delta_gave_is_no_answer_whether_one_delta_of_two_or_the_only_one_was_dropped() -> None:
    one_of_two = short_with([text_event(ev.TEXT_DELTA, "x"), text_event(ev.TEXT_DONE, "é")])
    the_only = short_with([text_event(ev.TEXT_DONE, "é")])
    judged = [expected(one_of_two), expected(the_only)]
    assert [(v.verdict, v.why) for v in judged] == [(Verdict.NO_ANSWER, "done_matches_deltas")] * 2


def test_a_done_then_a_delta_then_the_same_done_is_no_answer() -> None:
    middle = [text_event(ev.TEXT_DONE, "é"), text_event(ev.TEXT_DELTA, "é"), text_event(ev.TEXT_DONE, "é")]
    oracle = expected(short_with(middle))
    assert (oracle.verdict, oracle.why) == (Verdict.NO_ANSWER, "done_matches_deltas")


def test_a_delta_after_its_part_closed_still_joins_its_done_text() -> None:
    events = list(SEEDS["text"].events)
    part_done = next(event for event in events if event["type"] == ev.PART_DONE)
    events.remove(part_done)
    last_delta = max(index for index, event in enumerate(events) if event["type"] == ev.TEXT_DELTA)
    events.insert(last_delta, part_done)  # d1-d3, content_part.done, d4, output_text.done = d1+d2+d3+d4
    oracle = expected(Stream(numbered(events)))
    assert (oracle.verdict, oracle.why) == (Verdict.EITHER, "content_done")  # its shape is off, its answer intact


@pytest.mark.parametrize("stated", ["absent", None])
def test_a_completed_without_output_is_an_answer_whose_text_is_its_done_items(stated: str | None) -> None:
    events = list(SEEDS["text"].events)
    response = {key: value for key, value in events[-1]["response"].items() if key != "output"}
    events[-1] = {**events[-1], "response": response if stated == "absent" else {**response, "output": None}}
    oracle = expected(Stream(tuple(events)))
    assert (oracle.verdict, oracle.text) == (Verdict.ANSWER, "Hello! Grüße, 世界 👋 done.")


def test_a_completed_with_an_empty_output_is_no_answer() -> None:
    events = list(SEEDS["short"].events)
    events[-1] = {**events[-1], "response": {**events[-1]["response"], "output": []}}
    oracle = expected(Stream(tuple(events)))
    assert (oracle.verdict, oracle.why) == (Verdict.NO_ANSWER, "completed_output")


# -- every operator total ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("then", ["drop", "cut", "stall", "pause", "unknown_field", "renumber"])
def test_an_operator_sequence_that_empties_a_stream_goes_on_without_an_error(then: str) -> None:
    emptied = apply(Stream(SEEDS["short"].events), [Op("truncate", 0, 0), Op("drop", 0, 0)], "http")
    assert emptied.events == ()
    after = apply(emptied, [Op(then, 5, 3)], "http")
    assert expected(after).verdict is Verdict.NO_ANSWER


def test_every_operator_is_total_on_an_empty_stream() -> None:
    for operator, at, value in itertools.product(OPERATORS, range(4), range(4)):
        for transport in operator.transports:
            changed = apply(Stream(()), [Op(operator.name, at, value)], transport)
            assert expected(changed).verdict is Verdict.NO_ANSWER, operator.name


@PROPERTY
@given(seed=seeds, transport=transports, chain=st.lists(ops, max_size=8))
def test_every_operator_sequence_is_total_and_judged(seed: str, transport: Transport, chain: list[Op]) -> None:
    stream = Stream(SEEDS[seed].events)
    for op in chain:  # each step judged too: the oracle reads every stream the operators make
        stream = apply(stream, [op], transport)
        assert expected(stream).verdict in Verdict


# -- the verdict under operators -----------------------------------------------------------------------------------


@PROPERTY
@given(seed=seeds, transport=transports, chain=st.lists(ops, max_size=3), keep=ops)
def test_an_operator_that_keeps_a_stream_valid_keeps_its_verdict(
    seed: str, transport: Transport, chain: list[Op], keep: Op
) -> None:
    stream = apply(Stream(SEEDS[seed].events), chain, transport)
    keep = Op(KEEPS[keep.value % len(KEEPS)], keep.at, keep.value)
    numbers = [event.get("sequence_number") for event in stream.events]
    if keep.name == "unknown_event" and numbers != list(range(len(numbers))):
        return  # it numbers the stream again: a stream numbered wrong would be mended, not kept
    before, after = expected(stream), expected(apply(stream, [keep], transport))
    assert (after.verdict, after.why, after.text) == (before.verdict, before.why, before.text)


@PROPERTY
@given(seed=seeds, transport=transports, kept=st.lists(ops, max_size=3), breaking=ops)
def test_an_operator_that_breaks_a_valid_stream_leaves_it_no_answer(
    seed: str, transport: Transport, kept: list[Op], breaking: Op
) -> None:
    keeping = [Op(KEEPS[op.value % len(KEEPS)], op.at, op.value) for op in kept]
    stream = apply(Stream(SEEDS[seed].events), keeping, transport)
    assert expected(stream).verdict is Verdict.ANSWER
    breaker = Op(BREAKS[breaking.value % len(BREAKS)], breaking.at, breaking.value)
    assert expected(apply(stream, [breaker], transport)).verdict is Verdict.NO_ANSWER


@PROPERTY
@given(seed=seeds, moved=st.integers(0, 63), to=st.integers(0, 63))
def test_a_done_is_judged_by_its_deltas_whatever_events_surround_them(seed: str, moved: int, to: int) -> None:
    events = list(SEEDS[seed].events)
    others = [index for index, event in enumerate(events) if event["type"] not in TEXT_EVENTS]
    event = events.pop(others[moved % len(others)])
    events.insert(to % (len(events) + 1), event)  # any other event, anywhere: the deltas and their done stay as sent
    verdict = expected(Stream(numbered(events)))
    assert verdict.why != "done_matches_deltas"
    assert "DONE_MATCHES_DELTAS" not in {v.rule.name for v in check_order(numbered(events))}


@PROPERTY
@given(seed=seeds, dropped=st.integers(0, 63), moved=st.integers(0, 63), to=st.integers(0, 63))
def test_a_delta_dropped_is_no_answer_whatever_events_surround_the_rest(
    seed: str, dropped: int, moved: int, to: int
) -> None:
    events = list(SEEDS[seed].events)
    deltas = [index for index, event in enumerate(events) if event["type"] == ev.TEXT_DELTA]
    del events[deltas[dropped % len(deltas)]]  # the only delta, or one of several
    others = [index for index, event in enumerate(events) if event["type"] not in (*TEXT_EVENTS, ev.COMPLETED)]
    event = events.pop(others[moved % len(others)])
    done = next(index for index, event in enumerate(events) if event["type"] == ev.TEXT_DONE)
    events.insert(to % (done + 1), event)  # another event moved anywhere before the done
    assert "DONE_MATCHES_DELTAS" in {v.rule.name for v in check_order(numbered(events))}
    assert expected(Stream(numbered(events))).verdict is Verdict.NO_ANSWER
