"""`Rule.DONE_MATCHES_DELTAS` is one rule over all the deltas of a part: a done event is compared with every delta of
its part before it (none included, joining to ""), whatever events come between them; the three streams that once
contradicted it (issue 61) are held here."""

from __future__ import annotations

from typing import Any

import pytest

from rrkit.protocol import Rule, check_order
from rrkit.protocol import events as ev
from rrkit.protocol.order import answer_breaks, answer_output

Event = dict[str, Any]
WHERE = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
PART = {"type": "output_text", "text": "", "annotations": []}


def delta(text: str) -> Event:
    return {"type": ev.TEXT_DELTA, **WHERE, "delta": text}


def done(text: str) -> Event:
    return {"type": ev.TEXT_DONE, **WHERE, "text": text}


def part_done(text: str) -> Event:
    return {"type": ev.PART_DONE, **WHERE, "part": {**PART, "text": text}}


def stream(middle: list[Event], text: str) -> list[Event]:
    """created, in_progress, a message and its part opened, `middle`, the part and the item done with `text`,
    completed listing it: numbered in order (a part_done in `middle` stands for the closing one)."""
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
    whole = {**item, "content": [{**PART, "text": text}]}
    response = {"id": "resp_1", "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
    closing: list[Event] = [] if any(event["type"] == ev.PART_DONE for event in middle) else [part_done(text)]
    events: list[Event] = [
        {"type": ev.CREATED, "response": {"id": "resp_1"}},
        {"type": ev.IN_PROGRESS, "response": {"id": "resp_1"}},
        {"type": ev.ITEM_ADDED, "output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
        {"type": ev.PART_ADDED, **WHERE, "part": PART},
        *middle,
        *closing,
        {"type": ev.ITEM_DONE, "output_index": 0, "item": whole},
        {"type": ev.COMPLETED, "response": {**response, "output": [whole]}},
    ]
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def rules(events: list[Event]) -> set[Rule]:
    return {violation.rule for violation in check_order(events)}


def test_deltas_joined_to_the_done_text_break_nothing() -> None:
    assert check_order(stream([delta("a"), delta("b"), done("ab")], "ab")) == []
    assert check_order(stream([done("")], "")) == []  # no delta: the text is empty


@pytest.mark.parametrize(
    "middle",
    [
        pytest.param([delta("b"), done("é")], id="one of two deltas dropped"),
        pytest.param([done("é")], id="the only delta dropped: a done no delta gave"),
    ],
)
def test_a_done_text_no_delta_gave_breaks_the_rule_with_or_without_other_deltas(middle: list[Event]) -> None:
    violation = answer_breaks(stream(middle, "é"))
    assert violation is not None and violation.rule is Rule.DONE_MATCHES_DELTAS


def test_a_done_repeated_after_a_delta_is_held_to_every_delta_each_time() -> None:
    # the first done carries text no delta gave; the second equals the one delta that came between
    events = stream([done("é"), delta("é"), done("é")], "é")
    flagged = [v.index for v in check_order(events) if v.rule is Rule.DONE_MATCHES_DELTAS]
    assert flagged == [4]
    assert answer_breaks(events) is not None


def test_deltas_around_a_closed_part_still_join_to_the_done_text() -> None:
    # d1-d3, the part closed, d4, a done equal to d1+d2+d3+d4: the done is its deltas; only the part's order is off
    middle = [delta("a"), delta("b"), delta("c"), part_done("abcd"), delta("d"), done("abcd")]
    events = stream(middle, "abcd")
    assert Rule.DONE_MATCHES_DELTAS not in rules(events)
    assert Rule.CONTENT_DONE in rules(events)
    assert answer_breaks(events) is None


def test_deltas_after_their_item_is_done_are_joined_with_the_ones_before() -> None:
    events = stream([delta("a"), done("a")], "a")
    late = [{**delta("b"), "sequence_number": 0}, {**done("ab"), "sequence_number": 0}]
    completed = events.pop()
    events = [*events, *late, completed]
    events = [{**event, "sequence_number": number} for number, event in enumerate(events)]
    assert Rule.DONE_MATCHES_DELTAS not in rules(events)
    assert Rule.ITEM_OPEN in rules(events)


def test_the_answer_is_the_completed_output_or_without_one_the_done_items() -> None:
    events = stream([delta("a"), done("a")], "a")
    whole = events[-1]["response"]["output"]
    assert answer_output(events) == whole
    bare = {key: value for key, value in events[-1]["response"].items() if key != "output"}
    for response in (bare, {**bare, "output": None}):  # the SDK recovers a null output from the done items
        without = [*events[:-1], {**events[-1], "response": response}]
        assert answer_output(without) == whole and check_order(without) == []
    emptied = [*events[:-1], {**events[-1], "response": {**bare, "output": []}}]
    assert answer_output(emptied) == [] and Rule.COMPLETED_OUTPUT in rules(emptied)
