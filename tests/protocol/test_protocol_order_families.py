"""The order checker's knowledge of event families is data: every delta type of the protocol has a family row, and
each row's rules (its item type, its done event's field, the part its deltas need) hold for a stream made from
that row alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rrkit.protocol import IdGenerator, ResponseEvents, Rule, Violation, check_order
from rrkit.protocol import events as ev
from rrkit.protocol.order import FAMILIES, ITEM_EVENTS, Family

Event = dict[str, Any]
IDS = [family.delta for family in FAMILIES]


def family_stream(
    family: Family, *, item_type: str | None = None, done: str = "abc", opened: bool = True
) -> list[Event]:
    """created, the item, its opening part event (if the family needs one), deltas "ab" and "c", the done event,
    the item done, completed: every event numbered in order."""
    where = {"item_id": "item_1", "output_index": 0, "content_index": 0}
    item = {"type": item_type or family.item_type, "id": "item_1"}
    opener = [{"type": family.opened_by, **where}] if family.opened_by and opened else []
    events: list[Event] = [
        {"type": ev.CREATED, "response": {"id": "resp_1"}},
        {"type": ev.ITEM_ADDED, "output_index": 0, "item": item},
        *opener,
        {"type": family.delta, **where, "delta": "ab"},
        {"type": family.delta, **where, "delta": "c"},
        {"type": family.done, **where, family.field: done},
        {"type": ev.ITEM_DONE, "output_index": 0, "item": item},
        {"type": ev.COMPLETED, "response": {"id": "resp_1"}},
    ]
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def rules_of(violations: list[Violation]) -> set[Rule]:
    return {violation.rule for violation in violations}


BUILT: dict[str, Callable[[ResponseEvents], object]] = {
    ev.TEXT_DELTA: lambda r: r.message("abcdef", 3),
    ev.REFUSAL_DELTA: lambda r: r.refusal("abcdef", 3),
    ev.SUMMARY_TEXT_DELTA: lambda r: r.reasoning(["abcdef"], 3),
    ev.REASONING_TEXT_DELTA: lambda r: r.reasoning(None, 3, text="abcdef"),
    ev.ARGUMENTS_DELTA: lambda r: r.function_call("f", "abcdef", 3),
    ev.CUSTOM_INPUT_DELTA: lambda r: r.custom_tool_call("c", "abcdef", 3),
}
"""A builder call whose stream holds each family."""


def built(delta_type: str) -> list[Event]:
    r = ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)
    r.start()
    BUILT[delta_type](r)
    r.completed()
    return r.events


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_family_row_says_what_the_event_builder_streams(family: Family) -> None:
    events = built(family.delta)
    types = [event["type"] for event in events]
    added = events[types.index(ev.ITEM_ADDED)]
    done = events[types.index(family.done)]
    assert added["item"]["type"] == family.item_type
    assert "".join(event["delta"] for event in events if event["type"] == family.delta) == done[family.field]
    if family.opened_by is not None:
        assert types.index(family.opened_by) < types.index(family.delta)


@pytest.mark.parametrize(("kind", "item_type"), list(ITEM_EVENTS.items()))
def test_order_item_event_row_says_which_items_the_event_builder_streams_it_for(kind: str, item_type: str) -> None:
    streams = [built(delta_type) for delta_type in BUILT]
    holding = [events for events in streams if kind in {event["type"] for event in events}]
    assert holding
    assert all(events[2]["item"]["type"] == item_type for events in holding)  # after created, in_progress


def test_order_has_a_family_for_every_delta_type_of_the_protocol() -> None:
    assert {family.delta for family in FAMILIES} == ev.DELTA_TYPES
    assert len({family.done for family in FAMILIES}) == len(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_stream_made_from_a_family_row_passes(family: Family) -> None:
    assert check_order(family_stream(family)) == []


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_done_event_not_repeating_the_deltas_breaks_its_familys_rule(family: Family) -> None:
    events = family_stream(family, done="abX")
    violations = check_order(events)
    assert rules_of(violations) == {Rule.DONE_MATCHES_DELTAS}
    assert violations[0].detail == f"{family.done}.{family.field} differs from the joined deltas"


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_family_events_on_an_item_of_another_type_break_the_item_type_rule(family: Family) -> None:
    violations = check_order(family_stream(family, item_type=f"not_{family.item_type}"))
    assert rules_of(violations) == {Rule.ITEM_TYPE}
    flagged = {violation.detail.split(" on a ")[0] for violation in violations}
    assert {family.delta, family.done} <= flagged


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.opened_by], ids=lambda family: family.delta)
def test_order_deltas_before_the_part_their_family_needs_break_the_part_rule(family: Family) -> None:
    violations = check_order(family_stream(family, opened=False))
    assert rules_of(violations) == {Rule.PART_ADDED_FIRST}
    assert len(violations) == 2  # each delta
    assert violations[0].detail.endswith(f"before {str(family.opened_by).removeprefix('response.')}")


@pytest.mark.parametrize(("kind", "item_type"), list(ITEM_EVENTS.items()))
def test_order_item_event_on_an_item_of_another_type_breaks_the_item_type_rule(kind: str, item_type: str) -> None:
    events = [
        {"type": ev.CREATED, "response": {"id": "resp_1"}},
        {"type": ev.ITEM_ADDED, "output_index": 0, "item": {"type": f"not_{item_type}"}},
        {"type": kind, "output_index": 0, "content_index": 0, "summary_index": 0},
    ]
    numbered = [{**event, "sequence_number": number} for number, event in enumerate(events)]
    assert rules_of(check_order(numbered, complete=False)) == {Rule.ITEM_TYPE}
