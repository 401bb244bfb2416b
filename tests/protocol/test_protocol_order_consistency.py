"""What a stream says twice must agree (an event's item_id and its item, a done item and its done events,
response.completed and the done items, the usage figures); side-channel frames are no event of the stream; a
response may be queued before it is created; audio and the flat error belong to no output item."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rrkit.protocol import Event, ResponseEvents, Rule, Violation, check_order
from rrkit.protocol import events as ev

from .test_protocol_order import builder


def base_stream() -> list[Event]:
    """created, in_progress, a message (0), a function call (1), a custom tool call (2), completed."""
    r = builder()
    r.start()
    r.message("Hello world", 3)
    r.function_call("get_weather", '{"city": "Paris"}', 2)
    r.custom_tool_call("apply", "*** patch", 2)
    r.completed()
    return copy.deepcopy(r.events)


def renumber(events: list[Event]) -> list[Event]:
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def at(events: list[Event], kind: str, output_index: int | None = None) -> int:
    return next(
        index
        for index, event in enumerate(events)
        if event["type"] == kind and output_index in (None, event.get("output_index"))
    )


def found(violations: list[Violation]) -> list[tuple[Rule, int]]:
    return [(violation.rule, violation.index) for violation in violations]


def completed_output(events: list[Event]) -> list[Any]:
    output: list[Any] = events[-1]["response"]["output"]
    return output


# -- side channels -----------------------------------------------------------------------------------


SIDE_FRAMES: dict[str, Event] = {
    ev.SSE_COMMENT: {"type": ev.SSE_COMMENT, "comment": "ping"},
    ev.CODEX_METADATA: {"type": ev.CODEX_METADATA, "headers": {"x-codex-turn-state": "ts_1"}},
    ev.METADATA: {"type": ev.METADATA, "metadata": {"region": "eu"}},
    ev.RATE_LIMITS: {"type": ev.RATE_LIMITS, "primary": {"used_percent": 10.0}, "sequence_number": 99},
}


def test_order_side_channels_are_one_table_of_the_frames_that_are_no_response_event() -> None:
    assert set(SIDE_FRAMES) == ev.SIDE_CHANNELS


@pytest.mark.parametrize("kind", sorted(SIDE_FRAMES))
def test_order_side_channel_frames_anywhere_break_no_rule_and_shift_no_sequence_number(kind: str) -> None:
    events = base_stream()
    for where in range(len(events) + 1):
        with_frames = [*events[:where], SIDE_FRAMES[kind], SIDE_FRAMES[kind], *events[where:]]
        assert check_order(with_frames) == [], f"{kind} at {where}"
        assert check_order(with_frames[: where + 2], complete=False) == []


def test_order_side_channel_frames_are_left_out_of_the_event_index() -> None:
    events = base_stream()
    events[5]["sequence_number"] = 50
    frames = [SIDE_FRAMES[kind] for kind in sorted(SIDE_FRAMES)]
    violations = check_order([frames[0], *events[:3], *frames, *events[3:]])
    assert found(violations) == [(Rule.SEQUENCE, 5)]


def test_order_a_stream_of_side_channel_frames_only_has_no_events() -> None:
    assert check_order(list(SIDE_FRAMES.values()), complete=False) == []
    assert found(check_order(list(SIDE_FRAMES.values()))) == [(Rule.TERMINAL_REQUIRED, 0)]


# -- queued, and the events bound to no item ---------------------------------------------------------------


def queued(r: ResponseEvents) -> Event:
    return {"type": ev.QUEUED, "response": r.response_object("queued")}


def test_order_response_queued_may_come_before_response_created() -> None:
    r = builder()
    r.start()
    r.completed()
    assert check_order(renumber([queued(r), *r.events])) == []
    assert check_order(renumber([queued(r)]), complete=False) == []


def test_order_response_queued_after_response_created_is_one_more_lifecycle_event() -> None:
    r = builder()
    r.created()
    waiting = queued(r)
    r.completed()
    assert check_order(renumber([r.events[0], waiting, r.events[1]])) == []


def test_order_queued_stream_must_then_be_created() -> None:
    r = builder()
    r.start()
    r.completed()
    violations = check_order(renumber([queued(r), *r.events[1:]]))  # queued, in_progress, completed
    assert found(violations) == [(Rule.CREATED_FIRST, 1)]
    assert violations[0].detail == "first event after response.queued is 'response.in_progress'"


def test_order_queued_response_keeps_its_id() -> None:
    r = builder()
    r.start()
    r.completed()
    other = queued(r)
    other["response"]["id"] = "resp_other"
    assert found(check_order(renumber([other, *r.events]))) == [(Rule.ONE_RESPONSE_ID, n) for n in (1, 2, 3)]


AUDIO = [ev.AUDIO_DELTA, ev.AUDIO_DONE, ev.AUDIO_TRANSCRIPT_DELTA, ev.AUDIO_TRANSCRIPT_DONE]


@pytest.mark.parametrize("kind", AUDIO)
def test_order_audio_events_refer_to_no_output_item(kind: str) -> None:
    events = base_stream()
    audio = {"type": kind, "delta": "AAA=", "output_index": 7, "item_id": "nothing"}  # naming an item is ignored
    assert check_order(renumber([*events[:2], audio, *events[2:]])) == []


def test_order_flat_error_event_refers_to_no_output_item() -> None:
    r = builder()
    r.start()
    r.error("boom")
    r.events[-1]["output_index"] = 3
    assert check_order(r.events) == []


# -- an event's item_id -------------------------------------------------------------------------------


def test_order_event_naming_another_item_than_its_output_index_holds_breaks_the_item_id_rule() -> None:
    events = base_stream()
    delta = at(events, ev.TEXT_DELTA)
    events[delta]["item_id"] = events[at(events, ev.ITEM_ADDED, 1)]["item"]["id"]  # the function call's id
    violations = check_order(events)
    assert found(violations) == [(Rule.ITEM_ID, delta)]
    assert violations[0].detail.startswith(f"{ev.TEXT_DELTA} names item 'fc_")


def test_order_done_item_with_another_id_than_the_added_one_breaks_the_item_id_rule() -> None:
    events = base_stream()
    done = at(events, ev.ITEM_DONE, 0)
    events[done]["item"] = {**events[done]["item"], "id": "msg_other"}
    completed_output(events)[0] = events[done]["item"]  # response.completed agrees with the done item
    assert found(check_order(events)) == [(Rule.ITEM_ID, done)]


def test_order_item_added_without_an_id_holds_no_event_to_one() -> None:
    events = base_stream()
    del events[at(events, ev.ITEM_ADDED, 1)]["item"]["id"]
    events[at(events, ev.ARGUMENTS_DELTA)]["item_id"] = "anything"
    assert check_order(events) == []


# -- a done item and its done events -------------------------------------------------------------------------


def two_part_message(first: str = "Hello", second: str = "world") -> list[Event]:
    """A message whose text comes in two content parts (content_index 0 and 1)."""
    r = builder()
    r.start()
    r.message("x")
    events = copy.deepcopy(r.events)
    where = {"item_id": events[2]["item"]["id"], "output_index": 0}
    parts = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []} for text in (first, second)]
    streamed = [
        event
        for index, text in enumerate((first, second))
        for event in (
            {"type": ev.PART_ADDED, **where, "content_index": index, "part": {**parts[index], "text": ""}},
            {"type": ev.TEXT_DELTA, **where, "content_index": index, "delta": text, "logprobs": []},
            {"type": ev.TEXT_DONE, **where, "content_index": index, "text": text, "logprobs": []},
            {"type": ev.PART_DONE, **where, "content_index": index, "part": parts[index]},
        )
    ]
    item = {**events[-1]["item"], "content": parts}
    r.output = [item]
    ending = [{"type": ev.ITEM_DONE, "output_index": 0, "item": item}, *r.completed()]
    return renumber([*events[:3], *streamed, *ending])


def test_order_message_of_two_parts_repeating_each_passes() -> None:
    assert check_order(two_part_message()) == []


def test_order_message_done_item_is_held_to_its_text_per_content_index() -> None:
    events = two_part_message()
    done = at(events, ev.ITEM_DONE)
    content = events[done]["item"]["content"]
    content.reverse()  # response.completed lists the same (reversed) item: only the done events disagree
    violations = check_order(events)
    assert found(violations) == [(Rule.DONE_ITEM_REPEATS, done)] * 2
    assert violations[0].detail == "item.content.0.text is 'world', its response.output_text.done.text gave 'Hello'"


def test_order_message_done_item_without_the_part_breaks_the_repeat_rule() -> None:
    events = two_part_message()
    done = at(events, ev.ITEM_DONE)
    events[done]["item"]["content"].pop()
    violations = check_order(events)
    assert found(violations) == [(Rule.DONE_ITEM_REPEATS, done)]
    assert violations[0].detail.startswith("item.content.1.text is nothing")


@pytest.mark.parametrize(("output_index", "field"), [(1, "arguments"), (2, "input")])
def test_order_tool_call_done_item_is_held_to_its_done_events_field(output_index: int, field: str) -> None:
    events = base_stream()
    done = at(events, ev.ITEM_DONE, output_index)
    events[done]["item"][field] = "changed"
    assert found(check_order(events)) == [(Rule.DONE_ITEM_REPEATS, done)]


# -- response.completed and the done items --------------------------------------------------------------------


def test_order_completed_output_out_of_output_index_order_breaks_the_output_rule() -> None:
    events = base_stream()
    completed_output(events).reverse()
    violations = check_order(events)
    assert found(violations) == [(Rule.COMPLETED_OUTPUT, len(events) - 1)]
    assert violations[0].detail.startswith("response.output[0] is ('custom_tool_call', ")


def test_order_completed_output_missing_a_done_item_breaks_the_output_rule() -> None:
    events = base_stream()
    completed_output(events).pop()
    violations = check_order(events)
    assert found(violations) == [(Rule.COMPLETED_OUTPUT, len(events) - 1)]
    assert violations[0].detail == "response.output has 2 items, the stream's output_item.done events 3"


def test_order_completed_output_is_held_to_a_messages_text() -> None:
    events = base_stream()
    message = completed_output(events)[0]
    message["content"] = [{**message["content"][0], "text": "Hello World"}]
    assert found(check_order(events)) == [(Rule.COMPLETED_OUTPUT, len(events) - 1)]


def test_order_completed_output_is_compared_by_type_and_id_for_other_items() -> None:
    events = base_stream()
    completed_output(events)[1] = {**completed_output(events)[1], "status": "incomplete", "arguments": "{}"}
    assert check_order(events) == []


def test_order_completed_output_null_is_recovered_from_the_done_items() -> None:
    events = base_stream()
    events[-1]["response"]["output"] = None
    assert check_order(events) == []
    events[-1]["response"]["output"] = "three items"
    violations = check_order(events)
    assert found(violations) == [(Rule.COMPLETED_OUTPUT, len(events) - 1)]
    assert violations[0].detail == "response.output is 'three items', not the list of the 3 done items"


def test_order_completed_output_is_not_held_to_a_prefix() -> None:
    events = base_stream()
    completed_output(events).reverse()
    assert check_order(events, complete=False) == []


def test_order_item_done_without_being_added_still_counts_as_done_for_the_output() -> None:
    events = base_stream()
    del events[at(events, ev.ITEM_ADDED, 2)]
    violations = check_order(renumber(events))
    assert {violation.rule for violation in violations} == {Rule.ITEM_ADDED_FIRST}


# -- usage -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "detail"),
    [
        (None, "response.usage is None"),
        ({"input_tokens": 1, "output_tokens": 2}, "usage.total_tokens is None, not an integer"),
        ({"input_tokens": 1.0, "output_tokens": 2, "total_tokens": 3}, "usage.input_tokens is 1.0, not an integer"),
        ({"input_tokens": 1, "output_tokens": True, "total_tokens": 2}, "usage.output_tokens is True, not an integer"),
        ({"input_tokens": 1, "output_tokens": 2, "total_tokens": "3"}, "usage.total_tokens is '3', not an integer"),
        (
            {"input_tokens": 1, "output_tokens": 2, "total_tokens": 4},
            "usage.total_tokens 4 is not input_tokens 1 + output_tokens 2",
        ),
    ],
)
def test_order_completed_without_whole_integer_usage_breaks_the_usage_rule(usage: Any, detail: str) -> None:
    events = base_stream()
    events[-1]["response"]["usage"] = usage
    violations = check_order(events)
    assert found(violations) == [(Rule.USAGE, len(events) - 1)]
    assert violations[0].detail == detail


def test_order_usage_is_asked_of_response_completed_only() -> None:
    for end in ("failed", "incomplete"):
        r = builder()
        r.start()
        r.failed("server_error") if end == "failed" else r.incomplete("max_output_tokens")
        r.events[-1]["response"]["usage"] = None  # a failed or incomplete response may state no usage
        assert check_order(r.events) == []
