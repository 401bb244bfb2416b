"""The order checker: well-formed streams pass, and a stream breaking one rule is reported with exactly that rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from rrkit.protocol import Event, IdGenerator, ResponseEvents, Rule, Violation, check_order
from rrkit.protocol import events as ev
from rrkit.protocol.event_families import FAMILIES


def builder() -> ResponseEvents:
    return ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)


def base_stream() -> list[Event]:
    """created, in_progress, a message (index 0), a function call (index 1), a web search (index 2), an image
    generation with two partial images (index 3), completed."""
    r = builder()
    r.start()
    r.message("Hello world", 3)
    r.function_call("get_weather", '{"city": "Paris"}', 2)
    r.web_search_call("weather in Paris")
    r.image_generation_call("aW1hZ2U=", "cDA=", "cDE=")
    r.completed()
    return copy.deepcopy(r.events)


def renumber(events: list[Event]) -> list[Event]:
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def position(events: list[Event], type_: str, output_index: int | None = None) -> int:
    for index, event in enumerate(events):
        if event["type"] == type_ and (output_index is None or event.get("output_index") == output_index):
            return index
    raise AssertionError(f"no {type_} event")


def rules_of(violations: list[Violation]) -> set[Rule]:
    return {violation.rule for violation in violations}


# -- well-formed streams -----------------------------------------------------------------------


def well_formed_streams() -> dict[str, list[Event]]:
    streams: dict[str, list[Event]] = {"base": base_stream()}
    r = builder()
    r.start()
    r.reasoning(["a", "bb"], 2, text="raw")
    r.message("text", 4)
    r.refusal("no", 2)
    r.function_call("f", "{}", 1)
    r.custom_tool_call("c", "input", 3)
    r.completed()
    streams["every-family"] = r.events
    r = builder()
    r.created()
    r.completed()
    streams["warmup"] = r.events
    r = builder()
    queued = {"type": ev.QUEUED, "response": r.response_object("queued")}
    r.start()
    r.message("after a wait", 2)
    r.completed()
    streams["queued"] = renumber([queued, *copy.deepcopy(r.events)])
    r = builder()
    r.start()
    r.message("part", 2)
    r.failed("server_error", "boom")
    streams["failed"] = r.events
    r = builder()
    r.start()
    r.incomplete("max_output_tokens")
    streams["incomplete"] = r.events
    r = builder()
    r.start()
    r.error("boom", code="server_error")
    streams["error"] = r.events
    return streams


@pytest.mark.parametrize("name", list(well_formed_streams()))
def test_order_well_formed_stream_has_no_violations(name: str) -> None:
    assert check_order(well_formed_streams()[name]) == []


@pytest.mark.parametrize("name", list(well_formed_streams()))
def test_order_every_prefix_of_well_formed_stream_passes_as_incomplete(name: str) -> None:
    events = well_formed_streams()[name]
    for end in range(len(events) + 1):
        assert check_order(events[:end], complete=False) == [], f"prefix of {end} events"


def test_order_accepts_any_iterable() -> None:
    assert check_order(iter(base_stream())) == []


def test_order_empty_stream_misses_its_terminal_only_when_complete() -> None:
    assert rules_of(check_order([])) == {Rule.TERMINAL_REQUIRED}
    assert check_order([], complete=False) == []


# -- one broken rule at a time -----------------------------------------------------------------


def break_sequence(events: list[Event]) -> list[Event]:
    events[3]["sequence_number"] += 10
    return events


def break_created_first(events: list[Event]) -> list[Event]:
    events[0], events[1] = events[1], events[0]  # in_progress before created
    return renumber(events)


def break_one_response_id(events: list[Event]) -> list[Event]:
    events[-1]["response"]["id"] = "resp_other"
    return events


def break_one_terminal(events: list[Event]) -> list[Event]:
    return renumber([*events, copy.deepcopy(events[-1])])


def break_terminal_required(events: list[Event]) -> list[Event]:
    return events[:-1]


def break_item_added_first(events: list[Event]) -> list[Event]:
    del events[position(events, ev.ITEM_ADDED, output_index=3)]  # the image generation is never added
    return renumber(events)


def break_item_open(events: list[Event]) -> list[Event]:
    late = copy.deepcopy(events[position(events, ev.ARGUMENTS_DONE)])
    events.insert(position(events, ev.ITEM_DONE, output_index=1) + 1, late)  # arguments.done again, after item.done
    return renumber(events)


def break_output_index(events: list[Event]) -> list[Event]:
    for event in events:
        if event.get("output_index") == 3:
            event["output_index"] = 4  # the last item is added at 4, skipping 3
    return events


def break_part_added_first(events: list[Event]) -> list[Event]:
    del events[position(events, ev.PART_ADDED)]
    return renumber(events)


def break_done_matches_deltas(events: list[Event]) -> list[Event]:
    events[position(events, ev.TEXT_DONE)]["text"] = "Hello World"  # the done item and response.output say so too:
    events[position(events, ev.ITEM_DONE, output_index=0)]["item"]["content"][0]["text"] = "Hello World"
    events[-1]["response"]["output"][0]["content"][0]["text"] = "Hello World"  # only the deltas say otherwise
    return events


def break_item_type(events: list[Event]) -> list[Event]:
    events[position(events, ev.ITEM_ADDED, output_index=1)]["item"]["type"] = "custom_tool_call"
    return events  # function_call_arguments events now refer to a custom_tool_call item


def break_item_id(events: list[Event]) -> list[Event]:
    events[position(events, ev.ARGUMENTS_DELTA)]["item_id"] = "fc_other"
    return events


def break_done_item_repeats(events: list[Event]) -> list[Event]:
    events[position(events, ev.ITEM_DONE, output_index=1)]["item"]["arguments"] = "{}"  # not what arguments.done gave
    return events


def break_completed_output(events: list[Event]) -> list[Event]:
    events[-1]["response"]["output"].reverse()  # the done items, out of output_index order
    return events


def break_usage(events: list[Event]) -> list[Event]:
    events[-1]["response"]["usage"]["total_tokens"] += 1
    return events


def break_in_progress(events: list[Event]) -> list[Event]:
    del events[position(events, ev.IN_PROGRESS)]  # the output follows response.created directly
    return renumber(events)


def break_terminal_state(events: list[Event]) -> list[Event]:
    events[-1]["response"]["status"] = "failed"  # response.completed, saying its response failed
    return events


def break_opening_state(events: list[Event]) -> list[Event]:
    events[0]["response"]["status"] = "completed"  # response.created, saying its response already ended
    return events


def break_content_done(events: list[Event]) -> list[Event]:
    del events[position(events, ev.TEXT_DONE)]  # the part closes on deltas whose done event never came
    return renumber(events)


def break_part_closed(events: list[Event]) -> list[Event]:
    del events[position(events, ev.PART_DONE)]  # the message is done with its part still open
    return renumber(events)


def break_status_order(events: list[Event]) -> list[Event]:
    del events[position(events, ev.WEB_SEARCH_COMPLETED)]  # the search is done without completing
    return renumber(events)


def break_index_counts(events: list[Event]) -> list[Event]:
    partials = [event for event in events if event["type"] == ev.IMAGE_GEN_PARTIAL_IMAGE]
    partials[1]["partial_image_index"] = 0  # the second partial image numbered as the first
    return events


BREAKERS: dict[Rule, Callable[[list[Event]], list[Event]]] = {
    Rule.SEQUENCE: break_sequence,
    Rule.CREATED_FIRST: break_created_first,
    Rule.ONE_RESPONSE_ID: break_one_response_id,
    Rule.ONE_TERMINAL: break_one_terminal,
    Rule.TERMINAL_REQUIRED: break_terminal_required,
    Rule.ITEM_ADDED_FIRST: break_item_added_first,
    Rule.ITEM_OPEN: break_item_open,
    Rule.OUTPUT_INDEX: break_output_index,
    Rule.PART_ADDED_FIRST: break_part_added_first,
    Rule.DONE_MATCHES_DELTAS: break_done_matches_deltas,
    Rule.ITEM_TYPE: break_item_type,
    Rule.ITEM_ID: break_item_id,
    Rule.DONE_ITEM_REPEATS: break_done_item_repeats,
    Rule.COMPLETED_OUTPUT: break_completed_output,
    Rule.USAGE: break_usage,
    Rule.IN_PROGRESS: break_in_progress,
    Rule.TERMINAL_STATE: break_terminal_state,
    Rule.OPENING_STATE: break_opening_state,
    Rule.CONTENT_DONE: break_content_done,
    Rule.PART_CLOSED: break_part_closed,
    Rule.STATUS_ORDER: break_status_order,
    Rule.INDEX_COUNTS: break_index_counts,
}


def test_order_every_rule_has_a_stream_that_breaks_it() -> None:
    assert set(BREAKERS) == set(Rule)


@pytest.mark.parametrize("rule", list(Rule), ids=[rule.name for rule in Rule])
def test_order_stream_breaking_one_rule_is_reported_with_that_rule(rule: Rule) -> None:
    broken = BREAKERS[rule](base_stream())
    assert broken != base_stream()
    violations = check_order(broken)
    assert violations, f"{rule.name} not detected"
    assert rules_of(violations) == {rule}


def test_order_violations_point_at_the_offending_event() -> None:
    events = break_sequence(base_stream())
    assert [(violation.index, violation.rule) for violation in check_order(events)] == [(3, Rule.SEQUENCE)]
    events = break_done_matches_deltas(base_stream())
    assert [violation.index for violation in check_order(events)] == [position(events, ev.TEXT_DONE)]
    events = break_terminal_required(base_stream())
    assert [violation.index for violation in check_order(events)] == [len(events) - 1]


def test_order_violation_str_names_event_and_rule() -> None:
    violation = check_order(break_done_matches_deltas(base_stream()))[0]
    text = str(violation)
    assert text.startswith(f"event {violation.index}: ")
    assert Rule.DONE_MATCHES_DELTAS.value in text


def test_order_events_after_terminal_are_each_reported() -> None:
    events = base_stream()
    extra = [copy.deepcopy(events[-1]), copy.deepcopy(events[-1])]
    violations = check_order(renumber([*events, *extra]))
    assert [violation.index for violation in violations] == [len(events), len(events) + 1]
    assert rules_of(violations) == {Rule.ONE_TERMINAL}


def test_order_delta_before_its_item_breaks_only_the_item_added_rule_and_still_joins_into_its_done() -> None:
    events = base_stream()
    delta = events.pop(position(events, ev.TEXT_DELTA))
    events.insert(position(events, ev.ITEM_ADDED), delta)
    violations = check_order(renumber(events))
    assert [(violation.rule, violation.index) for violation in violations] == [(Rule.ITEM_ADDED_FIRST, 2)]


def test_order_flat_error_event_counts_as_terminal() -> None:
    r = builder()
    r.start()
    r.error("boom")
    r.completed()  # a completed after the error is a second terminal
    assert rules_of(check_order(r.events)) == {Rule.ONE_TERMINAL}


def test_order_error_event_directly_followed_by_response_failed_is_one_ending() -> None:
    r = builder()
    r.start()
    r.error("boom", code="server_error")
    r.failed("server_error", "boom")
    assert check_order(r.events) == []


def test_order_anything_between_the_error_and_response_failed_or_after_them_is_flagged() -> None:
    r = builder()
    r.start()
    r.error("boom")
    r.failed("server_error")
    r.failed("server_error")  # a second failure: a second terminal
    assert [(v.rule, v.index) for v in check_order(r.events)] == [(Rule.ONE_TERMINAL, len(r.events) - 1)]
    late = builder()
    late.start()
    late.error("boom")
    late.error("again")
    late.failed("server_error")
    assert [v.rule for v in check_order(late.events)] == [Rule.ONE_TERMINAL, Rule.ONE_TERMINAL]


@pytest.mark.parametrize("status", ["completed", "failed", "incomplete", "cancelled"])
@pytest.mark.parametrize("opening", [ev.CREATED, ev.IN_PROGRESS, ev.QUEUED])
def test_order_an_opening_event_whose_response_already_ended_is_flagged_there(opening: str, status: str) -> None:
    events = base_stream()
    if opening == ev.QUEUED:
        events.insert(0, {**copy.deepcopy(events[0]), "type": ev.QUEUED})
        events[0]["response"]["status"] = "queued"
        renumber(events)
    at = position(events, opening)
    events[at]["response"]["status"] = status
    assert check_order(base_stream()) == []
    violations = check_order(events)
    assert [(violation.rule, violation.index) for violation in violations] == [(Rule.OPENING_STATE, at)]
    assert f"response.status {status!r}" in violations[0].detail


@pytest.mark.parametrize("status", ["queued", "in_progress", None])
def test_order_an_opening_event_whose_response_has_not_ended_is_clean(status: str | None) -> None:
    events = base_stream()
    for at in (position(events, ev.CREATED), position(events, ev.IN_PROGRESS)):
        if status is None:
            del events[at]["response"]["status"]  # a field left out says nothing
        else:
            events[at]["response"]["status"] = status
    assert check_order(events) == []


# -- delta/done matching per family ------------------------------------------------------------

DONE_FIELDS: dict[str, tuple[Callable[[ResponseEvents], Any], str, str]] = {
    "text": (lambda r: r.message("abcdef", 3), ev.TEXT_DONE, "text"),
    "refusal": (lambda r: r.refusal("abcdef", 3), ev.REFUSAL_DONE, "refusal"),
    "summary": (lambda r: r.reasoning(["abcdef"], 3), ev.SUMMARY_TEXT_DONE, "text"),
    "reasoning-text": (lambda r: r.reasoning(None, 3, text="abcdef"), ev.REASONING_TEXT_DONE, "text"),
    "arguments": (lambda r: r.function_call("f", "abcdef", 3), ev.ARGUMENTS_DONE, "arguments"),
    "custom-input": (lambda r: r.custom_tool_call("c", "abcdef", 3), ev.CUSTOM_INPUT_DONE, "input"),
}


@pytest.mark.parametrize("family", list(DONE_FIELDS))
def test_order_done_event_differing_from_its_deltas_is_reported_for_every_family(family: str) -> None:
    build, done_type, field = DONE_FIELDS[family]
    r = builder()
    r.start()
    build(r)
    r.completed()
    events = copy.deepcopy(r.events)
    assert check_order(events) == []
    events[position(events, done_type)][field] = "abcdeX"
    violations = check_order(events)
    assert [v.index for v in violations if v.rule is Rule.DONE_MATCHES_DELTAS] == [position(events, done_type)]
    repeated = next(family.in_item is not None for family in FAMILIES if family.done == done_type)
    # where the done item holds the field too, it still holds the deltas' text: that is the other rule it breaks
    assert rules_of(violations) == {Rule.DONE_MATCHES_DELTAS} | ({Rule.DONE_ITEM_REPEATS} if repeated else set())


def test_order_summary_deltas_are_matched_per_summary_index() -> None:
    r = builder()
    r.start()
    r.reasoning(["first", "second"], 2)
    r.completed()
    events = copy.deepcopy(r.events)
    assert check_order(events) == []
    second_done = [event for event in events if event["type"] == ev.SUMMARY_TEXT_DONE][1]
    second_done["text"] = "first"
    violations = [v for v in check_order(events) if v.rule is Rule.DONE_MATCHES_DELTAS]
    assert [v.index for v in violations] == [events.index(second_done)]


@pytest.mark.parametrize(
    ("family", "item_type"),
    [("text", "reasoning"), ("summary", "message"), ("arguments", "message"), ("custom-input", "function_call")],
)
def test_order_delta_on_item_of_wrong_type_is_reported(family: str, item_type: str) -> None:
    build, _, _ = DONE_FIELDS[family]
    r = builder()
    r.start()
    build(r)
    r.completed()
    events = copy.deepcopy(r.events)
    events[position(events, ev.ITEM_ADDED)]["item"]["type"] = item_type
    assert rules_of(check_order(events)) == {Rule.ITEM_TYPE}
