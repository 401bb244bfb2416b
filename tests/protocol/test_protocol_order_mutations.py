"""The rules inside each event family, held by mutation: every stream rrkit's event builder makes (one per output
item family, and each ending) is clean; each way the protocol is broken inside a family (a part closed before its
content is done, a part never closed, a done event missing, a delta before its part, a hosted tool's statuses out of
order, missing or doubled, an image's partial index not counting, response.in_progress missing or late, a terminal
event its own response contradicts, an opening event whose response already ended, a response.completed not listing
the done items), applied to every stream it can be applied to, is flagged with exactly its rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from rrkit.protocol import IdGenerator, ResponseEvents, Rule, check_order
from rrkit.protocol import events as ev
from rrkit.protocol.event_families import FAMILIES, PARTS, STATUS_FLOWS
from rrkit.protocol.order_rules import REASONS

Event = dict[str, Any]
Mutation = Callable[[list[Event]], list[Event] | None]

DONES = frozenset(family.done for family in FAMILIES)
CLOSERS = frozenset(part.closed_by for part in PARTS)
OPENERS = {part.closed_by: part.opened_by for part in PARTS}
ENDS = frozenset(end for flow in STATUS_FLOWS for end in flow.ends)

ITEMS: dict[str, Callable[[ResponseEvents], object]] = {
    "message": lambda r: r.message("Hello world", 3),
    "refusal": lambda r: r.refusal("I cannot", 2),
    "reasoning": lambda r: r.reasoning(["first thought", "second"], 2, text="raw"),
    "function-call": lambda r: r.function_call("f", '{"a": 1}', 2),
    "custom-tool-call": lambda r: r.custom_tool_call("c", "input", 2),
    "web-search": lambda r: r.web_search_call("q"),
    "file-search": lambda r: r.file_search_call("q"),
    "image-generation": lambda r: r.image_generation_call("aW1n", "cDA=", "cDE=", "cDI="),
    "code-interpreter": lambda r: r.code_interpreter_call("print(1)", 2),
    "mcp-call": lambda r: r.mcp_call("srv", "tool", '{"x": 1}', "out", 2),
    "mcp-call-failed": lambda r: r.mcp_call("srv", "tool", "{}", "", error="boom"),
    "mcp-list-tools": lambda r: r.mcp_list_tools("srv", [{"name": "t", "input_schema": {}}]),
    "mcp-list-tools-failed": lambda r: r.mcp_list_tools("srv", [], error="unreachable"),
    "shell-call": lambda r: r.shell_call(["ls", "pwd"]),
    "shell-call-output": lambda r: r.shell_call_output("call_1", [{"stdout": "a", "stderr": "", "outcome": {}}]),
    "compaction": lambda r: r.compaction("enc"),
}


def stream(name: str, ending: str = "completed") -> list[Event]:
    r = ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)
    r.start()
    ITEMS[name](r)
    if ending == "completed":
        r.completed()
    elif ending == "failed":
        r.failed("server_error", "boom")
    else:
        r.incomplete("max_output_tokens")
    return copy.deepcopy(r.events)


STREAMS = {
    **{name: (name, "completed") for name in ITEMS},
    "message-failed": ("message", "failed"),
    "message-incomplete": ("message", "incomplete"),
}


def renumbered(events: list[Event]) -> list[Event]:
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def first(events: list[Event], kinds: frozenset[str] | set[str]) -> int | None:
    return next((at for at, event in enumerate(events) if event["type"] in kinds), None)


def swapped_before(events: list[Event], kinds: frozenset[str], before: Callable[[Event], bool]) -> list[Event] | None:
    """The first event of `kinds` moved to just before the first event (before it) that `before` says."""
    at = first(events, kinds)
    if at is None:
        return None
    moved = events[at]
    target = next((place for place in range(at) if before(events[place]) and same_item(events[place], moved)), None)
    if target is None:
        return None
    moving = events.pop(at)
    events.insert(target, moving)
    return renumbered(events)


def same_item(one: Event, other: Event) -> bool:
    return one.get("output_index") == other.get("output_index")


# -- the mutations, each a way to break one rule inside a family --------------------------------------------


def part_closed_before_its_content_is_done(events: list[Event]) -> list[Event] | None:
    return swapped_before(events, CLOSERS, lambda event: event["type"] in DONES)


def without_first(events: list[Event], kinds: frozenset[str]) -> list[Event] | None:
    """The stream without its first event of `kinds` (None when it has none)."""
    at = first(events, kinds)
    return None if at is None else renumbered(events[:at] + events[at + 1 :])


def part_never_closed(events: list[Event]) -> list[Event] | None:
    return without_first(events, CLOSERS)


def done_event_missing(events: list[Event]) -> list[Event] | None:
    return without_first(events, DONES)


def delta_before_its_part(events: list[Event]) -> list[Event] | None:
    needing = {family.delta for family in FAMILIES if family.opened_by in OPENERS.values()}
    return swapped_before(events, frozenset(needing), lambda event: event["type"] in OPENERS.values())


def status_end_before_its_start(events: list[Event]) -> list[Event] | None:
    openings = {flow.opening for flow in STATUS_FLOWS}
    return swapped_before(events, ENDS, lambda event: event["type"] in openings)


def status_end_missing(events: list[Event]) -> list[Event] | None:
    return without_first(events, ENDS)


def status_ended_twice(events: list[Event]) -> list[Event] | None:
    at = first(events, ENDS)
    flow = next((flow for flow in STATUS_FLOWS if at is not None and events[at]["type"] in flow.ends), None)
    if at is None or flow is None or len(flow.ends) < 2:
        return None
    other = next(end for end in flow.ends if end != events[at]["type"])
    return renumbered([*events[: at + 1], {**events[at], "type": other}, *events[at + 1 :]])


def partial_image_index_repeated(events: list[Event]) -> list[Event] | None:
    partials = [event for event in events if event["type"] == ev.IMAGE_GEN_PARTIAL_IMAGE]
    if len(partials) < 2:
        return None
    partials[-1]["partial_image_index"] = partials[-2]["partial_image_index"]
    return events


def in_progress_missing(events: list[Event]) -> list[Event] | None:
    at = first(events, {ev.IN_PROGRESS})
    return None if at is None or first(events, {ev.ITEM_ADDED}) is None else renumbered(events[:at] + events[at + 1 :])


def in_progress_after_output(events: list[Event]) -> list[Event] | None:
    at, added = first(events, {ev.IN_PROGRESS}), first(events, {ev.ITEM_ADDED})
    if at is None or added is None:
        return None
    moving = events.pop(at)
    events.insert(added, moving)  # just after the item added (which moved up one)
    return renumbered(events)


def terminal_status_contradicted(events: list[Event]) -> list[Event] | None:
    events[-1]["response"]["status"] = "completed" if events[-1]["type"] != ev.COMPLETED else "failed"
    return events


def failure_without_its_error(events: list[Event]) -> list[Event] | None:
    if events[-1]["type"] != ev.FAILED:
        return None
    events[-1]["response"]["error"] = None
    return events


def incomplete_without_its_details(events: list[Event]) -> list[Event] | None:
    if events[-1]["type"] != ev.INCOMPLETE:
        return None
    events[-1]["response"]["incomplete_details"] = None
    return events


def completed_with_an_error(events: list[Event]) -> list[Event] | None:
    if events[-1]["type"] != ev.COMPLETED:
        return None
    events[-1]["response"]["error"] = {"code": "server_error", "message": "boom"}
    return events


def created_already_ended(events: list[Event]) -> list[Event] | None:
    events[0]["response"] = {**events[0]["response"], "status": events[-1]["response"]["status"]}  # the end's own
    return events


def in_progress_already_cancelled(events: list[Event]) -> list[Event] | None:
    at = first(events, {ev.IN_PROGRESS})
    if at is None:
        return None
    events[at]["response"] = {**events[at]["response"], "status": "cancelled"}
    return events


def completed_output_not_the_done_items(events: list[Event]) -> list[Event] | None:
    if events[-1]["type"] != ev.COMPLETED or not events[-1]["response"]["output"]:
        return None
    events[-1]["response"]["output"] = []
    return events


MUTATIONS: dict[str, tuple[Mutation, Rule]] = {
    "part closed before its content is done": (part_closed_before_its_content_is_done, Rule.CONTENT_DONE),
    "part never closed": (part_never_closed, Rule.PART_CLOSED),
    "done event missing": (done_event_missing, Rule.CONTENT_DONE),
    "delta before its part": (delta_before_its_part, Rule.PART_ADDED_FIRST),
    "status end before its start": (status_end_before_its_start, Rule.STATUS_ORDER),
    "status end missing": (status_end_missing, Rule.STATUS_ORDER),
    "status ended twice": (status_ended_twice, Rule.STATUS_ORDER),
    "partial image index repeated": (partial_image_index_repeated, Rule.INDEX_COUNTS),
    "in_progress missing": (in_progress_missing, Rule.IN_PROGRESS),
    "in_progress after the output": (in_progress_after_output, Rule.IN_PROGRESS),
    "terminal status contradicted": (terminal_status_contradicted, Rule.TERMINAL_STATE),
    "failure without its error": (failure_without_its_error, Rule.TERMINAL_STATE),
    "incomplete without its details": (incomplete_without_its_details, Rule.TERMINAL_STATE),
    "completed with an error": (completed_with_an_error, Rule.TERMINAL_STATE),
    "created already ended": (created_already_ended, Rule.OPENING_STATE),
    "in_progress already cancelled": (in_progress_already_cancelled, Rule.OPENING_STATE),
    "completed output not the done items": (completed_output_not_the_done_items, Rule.COMPLETED_OUTPUT),
}

CASES = [
    pytest.param(stream_name, mutation, id=f"{stream_name}: {mutation}")
    for stream_name in STREAMS
    for mutation in MUTATIONS
    if MUTATIONS[mutation][0](stream(*STREAMS[stream_name])) is not None
]


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_stream_the_builder_makes_is_clean(name: str) -> None:
    assert check_order(stream(*STREAMS[name])) == []


@pytest.mark.parametrize(("stream_name", "mutation"), CASES)
def test_a_stream_broken_inside_its_family_is_flagged_with_exactly_that_rule(stream_name: str, mutation: str) -> None:
    mutate, rule = MUTATIONS[mutation]
    broken = mutate(stream(*STREAMS[stream_name]))
    assert broken is not None
    violations = check_order(broken)
    assert {violation.rule for violation in violations} == {rule}, [str(violation) for violation in violations]


def test_every_mutation_applies_to_a_stream_and_every_family_meets_a_mutation() -> None:
    mutations = {mutation for _, mutation in (case.values for case in CASES)}
    assert mutations == set(MUTATIONS)
    streams = {stream_name for stream_name, _ in (case.values for case in CASES)}
    assert streams == set(STREAMS)


def test_every_rule_says_why_a_client_needs_it() -> None:
    assert set(REASONS) == set(Rule)
    assert all(len(reason.split()) >= 8 for reason in REASONS.values())  # a reason, not a label
