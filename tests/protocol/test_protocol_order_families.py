"""The order checker's knowledge of event families is data: every delta type of the protocol has a family row, and
each row's rules (its item type, its done event's field, the part its deltas need, where its done item holds the
field again) hold for a stream made from that row alone; so do the rows of the other item-bound events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rrkit.protocol import IdGenerator, ResponseEvents, Rule, Violation, check_order
from rrkit.protocol import events as ev
from rrkit.protocol.consistency import PART, value_at
from rrkit.protocol.event_families import COUNTED, FAMILIES, ITEM_EVENTS, NEEDS_PART, PARTS, STATUS_FLOWS, Family

Event = dict[str, Any]
IDS = [family.delta for family in FAMILIES]
USAGE = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
PART_TYPE = {done: part_type for flow in PARTS for part_type, done in flow.contents.items()}
"""The type of the part a family's content streams in (by its done event), where a part opens and closes."""
CLOSER = {flow.opened_by: flow.closed_by for flow in PARTS}
FLOW_OF = {kind: flow for flow in STATUS_FLOWS for kind in (flow.opening, *flow.working, *flow.ends)}
OPENING = [{"type": ev.CREATED, "response": {"id": "resp_1"}}, {"type": ev.IN_PROGRESS, "response": {"id": "resp_1"}}]


def held(family: Family, value: Any) -> dict[str, Any]:
    """The fields of a done item that hold `value` where the family says (part index 0); none if it says nowhere."""
    if family.in_item is None:
        return {}
    built: Any = value
    for step in reversed(family.in_item):
        built = [built] if step == PART else {step: built}
    assert isinstance(built, dict)
    return built


def numbered(events: list[Event]) -> list[Event]:
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def ending(done_item: Event) -> list[Event]:
    """The item's output_item.done, then response.completed listing it, with usage."""
    response = {"id": "resp_1", "output": [done_item], "usage": USAGE}
    return [{"type": ev.ITEM_DONE, "output_index": 0, "item": done_item}, {"type": ev.COMPLETED, "response": response}]


def family_stream(
    family: Family,
    *,
    item_type: str | None = None,
    done: str = "abc",
    opened: bool = True,
    kept: str | None = None,
    item_id: str = "item_1",
) -> list[Event]:
    """created, in_progress, the item, its opening part event (if the family needs one), deltas "ab" and "c", the
    done event (`done`), the event closing the part (where one closes it), the item done (holding `kept`, else what
    the done event gave), completed: numbered in order."""
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    item = {"type": item_type or family.item_type, "id": "item_1"}
    part = {"part": {"type": PART_TYPE[family.done]}} if family.done in PART_TYPE else {}
    opener = [{"type": family.opened_by, **where, **part}] if family.opened_by and opened else []
    closer = [{"type": CLOSER[family.opened_by], **where, **part}] if family.opened_by in CLOSER and opened else []
    events: list[Event] = [
        *OPENING,
        {"type": ev.ITEM_ADDED, "output_index": 0, "item": item},
        *opener,
        {"type": family.delta, **where, "delta": "ab"},
        {"type": family.delta, **where, "delta": "c"},
        {"type": family.done, **where, family.field: done},
        *closer,
        *ending({**item, **held(family, done if kept is None else kept)}),
    ]
    return numbered(events)


def rules_of(violations: list[Violation]) -> set[Rule]:
    return {violation.rule for violation in violations}


def moved(events: list[Event], kinds: set[object], before: str) -> list[Event]:
    """The events of `kinds` moved, in their order, to just before the first event of type `before`."""
    moving = [event for event in events if event["type"] in kinds]
    staying = [event for event in events if event["type"] not in kinds]
    at = next(index for index, event in enumerate(staying) if event["type"] == before)
    return numbered([*staying[:at], *moving, *staying[at:]])


BUILT: dict[str, Callable[[ResponseEvents], object]] = {
    ev.TEXT_DELTA: lambda r: r.message("abcdef", 3),
    ev.REFUSAL_DELTA: lambda r: r.refusal("abcdef", 3),
    ev.SUMMARY_TEXT_DELTA: lambda r: r.reasoning(["abcdef"], 3),
    ev.REASONING_TEXT_DELTA: lambda r: r.reasoning(None, 3, text="abcdef"),
    ev.ARGUMENTS_DELTA: lambda r: r.function_call("f", "abcdef", 3),
    ev.CUSTOM_INPUT_DELTA: lambda r: r.custom_tool_call("c", "abcdef", 3),
}
"""A builder call whose stream holds each family the fake server streams."""


def built(delta_type: str) -> list[Event]:
    r = ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)
    r.start()
    BUILT[delta_type](r)
    r.completed()
    return r.events


BUILT_KINDS = {event["type"] for delta_type in BUILT for event in built(delta_type)}


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.delta in BUILT], ids=lambda family: family.delta)
def test_order_family_row_says_what_the_event_builder_streams(family: Family) -> None:
    events = built(family.delta)
    types = [event["type"] for event in events]
    added = events[types.index(ev.ITEM_ADDED)]
    done = events[types.index(family.done)]
    assert added["item"]["type"] == family.item_type
    assert "".join(event["delta"] for event in events if event["type"] == family.delta) == done[family.field]
    if family.opened_by is not None:
        assert types.index(family.opened_by) < types.index(family.delta)
    if family.in_item is not None:
        item = events[types.index(ev.ITEM_DONE)]["item"]
        assert value_at(item, family.in_item, 0) == done[family.field]  # the done item holds it where the row says


@pytest.mark.parametrize(("kind", "item_type"), [(k, t) for k, t in ITEM_EVENTS.items() if k in BUILT_KINDS])
def test_order_item_event_row_says_which_items_the_event_builder_streams_it_for(kind: str, item_type: str) -> None:
    streams = [built(delta_type) for delta_type in BUILT]
    holding = [events for events in streams if kind in {event["type"] for event in events}]
    assert holding
    assert all(events[2]["item"]["type"] == item_type for events in holding)  # after created, in_progress


def test_order_every_event_the_builder_streams_for_an_item_has_a_row() -> None:
    rows = set(ITEM_EVENTS) | {f.delta for f in FAMILIES} | {f.done for f in FAMILIES} | {ev.ITEM_ADDED, ev.ITEM_DONE}
    assert rows >= BUILT_KINDS - ev.LIFECYCLE_TYPES


def test_order_has_a_family_for_every_delta_type_of_the_protocol() -> None:
    assert {family.delta for family in FAMILIES} >= ev.DELTA_TYPES
    assert len({family.done for family in FAMILIES}) == len(FAMILIES)
    assert len({family.delta for family in FAMILIES}) == len(FAMILIES)


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


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_family_events_before_their_item_is_added_break_the_item_added_rule(family: Family) -> None:
    kinds = {family.opened_by, CLOSER.get(str(family.opened_by)), family.delta, family.done}
    events = moved(family_stream(family), kinds, before=ev.ITEM_ADDED)
    violations = check_order(events)
    assert rules_of(violations) == {Rule.ITEM_ADDED_FIRST}
    assert violations[0].index == 2 and violations[0].detail.startswith(str(events[2]["type"]))


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_family_done_event_after_its_item_is_done_breaks_the_item_open_rule(family: Family) -> None:
    events = moved(family_stream(family), {ev.ITEM_DONE}, before=family.done)
    types = [event["type"] for event in events]
    item_done, done = types.index(ev.ITEM_DONE), types.index(family.done)
    closed = family.opened_by in CLOSER
    # the item done early is done with its content unfinished: the part still open, the deltas without their done
    expected = [(Rule.PART_CLOSED, item_done)] if closed else []
    expected += [(Rule.CONTENT_DONE, item_done), (Rule.ITEM_OPEN, done)]
    expected += [(Rule.ITEM_OPEN, done + 1)] if closed else []
    assert [(v.rule, v.index) for v in check_order(events)] == expected


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.in_item], ids=lambda family: family.delta)
def test_order_done_item_not_holding_what_the_done_event_gave_breaks_the_repeat_rule(family: Family) -> None:
    events = family_stream(family, kept="abX")
    violations = check_order(events)
    assert [(v.rule, v.index) for v in violations] == [(Rule.DONE_ITEM_REPEATS, len(events) - 2)]
    assert violations[0].detail.endswith(f"is 'abX', its {family.done}.{family.field} gave 'abc'")


@pytest.mark.parametrize("family", [f for f in FAMILIES if not f.in_item], ids=lambda family: family.delta)
def test_order_family_without_a_place_in_its_done_item_is_not_held_to_one(family: Family) -> None:
    assert check_order(family_stream(family, kept="abX")) == []


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_order_family_events_naming_another_item_break_the_item_id_rule(family: Family) -> None:
    events = family_stream(family, item_id="item_2")
    violations = check_order(events)
    assert rules_of(violations) == {Rule.ITEM_ID}
    assert len(violations) == sum("item_id" in event for event in events)  # every event of the family names item_2


# -- the other events of an item ----------------------------------------------------------------------


def item_body(kind: str, *, opened: bool = True) -> list[Event]:
    """The event of type `kind` with what it needs around it to break no rule: the part it needs opened before it
    and closed after it (unless not `opened`), a part it closes opened, a part it opens closed, its status flow
    begun before it and ended after it, the index it counts by at 0."""
    where = {"item_id": "item_1", "output_index": 0, "content_index": 0}
    before: list[str] = []
    after: list[str] = []
    if (opener := NEEDS_PART.get(kind)) is not None and opened:
        before, after = [opener], [CLOSER[opener]]
    for part in PARTS:
        before += [part.opened_by] if kind == part.closed_by else []
        after += [part.closed_by] if kind == part.opened_by else []
    if (flow := FLOW_OF.get(kind)) is not None:
        before += [flow.opening] if kind != flow.opening else []
        after += [flow.ends[0]] if kind not in flow.ends else []
    counted = {COUNTED[kind]: 0} if kind in COUNTED else {}
    return [
        *({"type": one, **where} for one in before),
        {"type": kind, **where, **counted},
        *({"type": one, **where} for one in after),
    ]


def item_event_stream(kind: str, item_type: str, *, added_as: str | None = None, opened: bool = True) -> list[Event]:
    """created, in_progress, an item of `item_type` (or `added_as`), the event of type `kind` with what it needs
    around it (`item_body`), the item done, completed."""
    item = {"type": item_type, "id": "item_1"}
    events: list[Event] = [
        *OPENING,
        {"type": ev.ITEM_ADDED, "output_index": 0, "item": {**item, "type": added_as or item_type}},
        *item_body(kind, opened=opened),
        *ending(item),
    ]
    return numbered(events)


ROWS = list(ITEM_EVENTS.items())


@pytest.mark.parametrize(("kind", "item_type"), ROWS)
def test_order_item_event_on_an_item_of_its_type_passes(kind: str, item_type: str) -> None:
    assert check_order(item_event_stream(kind, item_type)) == []


@pytest.mark.parametrize(("kind", "item_type"), ROWS)
def test_order_item_event_on_an_item_of_another_type_breaks_the_item_type_rule(kind: str, item_type: str) -> None:
    violations = check_order(item_event_stream(kind, item_type, added_as=f"not_{item_type}"))
    assert rules_of(violations) == {Rule.ITEM_TYPE}
    assert kind in {violation.detail.split(" on a ")[0] for violation in violations}


@pytest.mark.parametrize(("kind", "item_type"), ROWS)
def test_order_item_event_before_its_item_is_added_breaks_the_item_added_rule(kind: str, item_type: str) -> None:
    body = {event["type"] for event in item_body(kind)}
    events = moved(item_event_stream(kind, item_type), body, before=ev.ITEM_ADDED)
    assert rules_of(check_order(events)) == {Rule.ITEM_ADDED_FIRST}


@pytest.mark.parametrize(("kind", "item_type"), ROWS)
def test_order_item_event_after_its_item_is_done_breaks_the_item_open_rule(kind: str, item_type: str) -> None:
    body = item_body(kind)
    events = moved(item_event_stream(kind, item_type), {ev.ITEM_DONE}, before=body[0]["type"])
    late = range(len(events) - 1 - len(body), len(events) - 1)  # the body, between the item done and completed
    assert [(v.rule, v.index) for v in check_order(events)] == [(Rule.ITEM_OPEN, at) for at in late]
    assert events[late[0] + [one["type"] for one in body].index(kind)]["type"] == kind


@pytest.mark.parametrize("kind", list(NEEDS_PART))
def test_order_item_event_before_the_part_it_needs_breaks_the_part_rule(kind: str) -> None:
    violations = check_order(item_event_stream(kind, ITEM_EVENTS[kind], opened=False))
    assert rules_of(violations) == {Rule.PART_ADDED_FIRST}
    assert violations[0].detail == f"{kind} at content_index 0 before {NEEDS_PART[kind].removeprefix('response.')}"
