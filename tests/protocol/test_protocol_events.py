"""Event builders: every event passes the official SDK's models, with sequence numbers, ids and output kept right."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai import omit
from openai._models import validate_type  # what the SDK runs when `_strict_response_validation=True`
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import ResponseFailedEvent, ResponseStreamEvent

from rrkit.protocol import (
    FAILURE_CODES,
    Event,
    IdGenerator,
    ResponseEvents,
    check_order,
    done_items,
    terminal_event,
    usage,
)
from rrkit.protocol import events as ev
from rrkit.protocol.events import split_chunks

from ..sdk_strict import STRICT, assert_sdk_accepts

REQUEST: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "You are a test.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
    "tools": [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "strict": True,
        },
        {"type": "custom", "name": "apply_patch", "description": "Apply a patch."},
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
}

TEXT = "Hello, world! Here is a reply."


def builder(request: dict[str, Any] | None = None) -> ResponseEvents:
    return ResponseEvents(REQUEST if request is None else request, ids=IdGenerator.counting(), created_at=1_700_000_000)


def text_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.message(TEXT, 4), *r.completed()]


def phased_text_reply(r: ResponseEvents) -> list[Event]:
    return [
        *r.start(),
        *r.message("Working on it.", 2, phase="commentary"),
        *r.message(TEXT, 3, phase="final_answer"),
        *r.completed(),
    ]


def reasoning_reply(r: ResponseEvents) -> list[Event]:
    summary = ["**Thinking** about the question.", "Second summary part."]
    return [
        *r.start(),
        *r.reasoning(summary, 3, text="raw chain of thought", encrypted_content="gAAAAenc"),
        *r.message(TEXT, 2),
        *r.completed(usage(20, 10, reasoning_tokens=5)),
    ]


def summary_only_reasoning(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.reasoning(["only a summary"], 2), *r.message(TEXT), *r.completed()]


def function_call_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.function_call("get_weather", '{"city": "Paris"}', 3, call_id="call_abc"), *r.completed()]


def custom_tool_call_reply(r: ResponseEvents) -> list[Event]:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n"
    return [*r.start(), *r.custom_tool_call("apply_patch", patch, 4), *r.completed()]


def refusal_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.refusal("I can't help with that.", 3), *r.completed()]


def mixed_reply(r: ResponseEvents) -> list[Event]:
    return [
        *r.start(),
        *r.reasoning(["plan"], 2, text="raw"),
        *r.message("Let me check.", 2),
        *r.function_call("get_weather", '{"city": "Oslo"}', 2),
        *r.custom_tool_call("apply_patch", "patch body", 2),
        *r.refusal("no", 1),
        *r.completed(usage(100, 40, cached_tokens=60, reasoning_tokens=8, cache_write_tokens=3), end_turn=False),
    ]


def warmup_reply(r: ResponseEvents) -> list[Event]:
    return [*r.created(), *r.completed()]


def empty_text_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.message("", 3), *r.completed()]


def failed_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.message("partial", 2), *r.failed("rate_limit_exceeded", "Please try again in 1.5s.")]


def failed_server_error(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.failed("server_error", "An error occurred while processing your request.")]


def incomplete_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.message("cut sho", 2), *r.incomplete("max_output_tokens")]


def incomplete_content_filter(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.incomplete("content_filter")]


def error_reply(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.error("Something went wrong.", code="server_error", param="input")]


def error_without_code(r: ResponseEvents) -> list[Event]:
    return [*r.start(), *r.error("Something went wrong.")]


SCENARIOS: dict[str, Callable[[ResponseEvents], list[Event]]] = {
    "text": text_reply,
    "text-phases": phased_text_reply,
    "reasoning-summary-and-text": reasoning_reply,
    "reasoning-summary-only": summary_only_reasoning,
    "function-call": function_call_reply,
    "custom-tool-call": custom_tool_call_reply,
    "refusal": refusal_reply,
    "mixed-with-end-turn": mixed_reply,
    "warmup": warmup_reply,
    "empty-text": empty_text_reply,
    "failed": failed_reply,
    "failed-server-error": failed_server_error,
    "incomplete": incomplete_reply,
    "incomplete-content-filter": incomplete_content_filter,
    "error": error_reply,
    "error-without-code": error_without_code,
}
COMPLETED_SCENARIOS = [name for name in SCENARIOS if SCENARIOS[name](builder())[-1]["type"] == ev.COMPLETED]


# -- the SDK's models --------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_events_every_built_event_validates_against_sdk_event_union(scenario: str) -> None:
    events = SCENARIOS[scenario](builder())
    assert events
    for event in events:
        assert_sdk_accepts(event)


def test_events_sdk_validation_is_not_vacuous() -> None:
    """The checks above can fail: a delta without `logprobs` or with a string sequence number is rejected."""
    delta = next(event for event in text_reply(builder()) if event["type"] == ev.TEXT_DELTA)
    without_logprobs = {key: value for key, value in delta.items() if key != "logprobs"}
    with pytest.raises(pydantic.ValidationError):
        validate_type(type_=ResponseStreamEvent, value=without_logprobs)  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        STRICT.validate_python(dict(delta, sequence_number="1"), strict=True)


@pytest.mark.parametrize("code", [*FAILURE_CODES, None, "some_new_code"])
def test_events_failed_event_differs_from_sdk_models_at_most_in_error_code(code: str | None) -> None:
    """The SDK types `response.error.code` as a closed Literal that lacks codes the service really sends
    (`context_length_exceeded`, `insufficient_quota`, ...); everything else about `response.failed` must pass."""
    event = builder().failed(code, "message")[0]
    try:
        pydantic.TypeAdapter(ResponseFailedEvent).validate_python(event, strict=True)
    except pydantic.ValidationError as error:
        assert {tuple(detail["loc"]) for detail in error.errors()} == {("response", "error", "code")}


def without_parsed(value: Any) -> Any:
    """Drop the fields the SDK's parsing helpers add (`parsed`, `parsed_arguments`) to what the server sent."""
    if isinstance(value, dict):
        return {key: without_parsed(item) for key, item in value.items() if key not in ("parsed", "parsed_arguments")}
    if isinstance(value, list):
        return [without_parsed(item) for item in value]
    return value


@pytest.mark.parametrize("scenario", COMPLETED_SCENARIOS)
def test_events_sdk_stream_accumulator_accepts_stream_and_final_response_matches(scenario: str) -> None:
    """`responses.stream(...).get_final_response()` runs this state machine; it enforces order and identity."""
    events = SCENARIOS[scenario](builder())
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    final = None
    for event in events:
        for emitted in state.handle_event(validate_type(type_=ResponseStreamEvent, value=event)):  # type: ignore[arg-type]
            if emitted.type == ev.COMPLETED:
                final = emitted.response
    assert final is not None
    assert final.id == events[0]["response"]["id"]
    assert [without_parsed(item.model_dump(mode="json", exclude_unset=True)) for item in final.output] == done_items(
        events
    )
    messages = [item for item in done_items(events) if item["type"] == "message"]
    texts = [part["text"] for item in messages for part in item["content"] if part["type"] == "output_text"]
    assert final.output_text == "".join(texts)


# -- sequence numbers, ids, output -------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_events_sequence_number_starts_at_zero_and_increases_by_one(scenario: str) -> None:
    events = SCENARIOS[scenario](builder())
    assert [event["sequence_number"] for event in events] == list(range(len(events)))


def test_events_sequence_number_continues_across_builder_calls() -> None:
    r = builder()
    first = r.start()
    second = r.message("a")
    third = r.completed()
    assert [event["sequence_number"] for event in [*first, *second, *third]] == list(range(len(r.events)))
    assert r.events == [*first, *second, *third]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_events_built_streams_pass_order_checker(scenario: str) -> None:
    assert check_order(SCENARIOS[scenario](builder())) == []


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_events_response_id_is_stable_across_lifecycle_events(scenario: str) -> None:
    r = builder()
    events = SCENARIOS[scenario](r)
    ids = {event["response"]["id"] for event in events if "response" in event}
    assert ids == {r.response_id}
    assert r.response_id.startswith("resp_")


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_events_item_ids_are_stable_from_added_to_done(scenario: str) -> None:
    events = SCENARIOS[scenario](builder())
    added = {event["output_index"]: event["item"] for event in events if event["type"] == ev.ITEM_ADDED}
    done = {event["output_index"]: event["item"] for event in events if event["type"] == ev.ITEM_DONE}
    if events[-1]["type"] == ev.COMPLETED:
        assert set(added) == set(done)
    for index, item in done.items():
        assert item["id"] == added[index]["id"]
        assert item["type"] == added[index]["type"]
        if "call_id" in item:
            assert item["call_id"] == added[index]["call_id"]
    for event in events:
        if "item_id" in event:
            assert event["item_id"] == added[event["output_index"]]["id"]
    assert len({item["id"] for item in added.values()}) == len(added)


@pytest.mark.parametrize("scenario", COMPLETED_SCENARIOS)
def test_events_completed_output_equals_output_item_done_items(scenario: str) -> None:
    events = SCENARIOS[scenario](builder())
    completed = events[-1]
    assert completed["type"] == ev.COMPLETED
    assert completed["response"]["status"] == "completed"
    assert completed["response"]["output"] == done_items(events)
    assert all(item.get("status", "completed") == "completed" for item in done_items(events))


def test_events_lifecycle_response_echoes_request_and_created_has_empty_output() -> None:
    events = text_reply(builder())
    created, in_progress = events[0]["response"], events[1]["response"]
    for response in (created, in_progress):
        assert response["status"] == "in_progress"
        assert response["output"] == []
        assert response["usage"] is None
    completed = events[-1]["response"]
    for response in (created, completed):
        assert response["object"] == "response"
        assert response["created_at"] == 1_700_000_000
        assert response["model"] == REQUEST["model"]
        assert response["instructions"] == REQUEST["instructions"]
        assert response["tools"] == REQUEST["tools"]
        assert response["tool_choice"] == "auto"
        assert response["parallel_tool_calls"] is True


def test_events_response_object_defaults_without_a_request() -> None:
    response = ResponseEvents().created()[0]["response"]
    assert response["model"] == "gpt-rrkit"
    assert response["tools"] == []
    assert response["tool_choice"] == "auto"
    assert response["parallel_tool_calls"] is True  # the service's default
    assert ResponseEvents({"model": "m"}, model="override").created()[0]["response"]["model"] == "override"


def test_events_completed_usage_is_passed_through_and_default_usage_adds_up() -> None:
    given_usage = usage(10, 5, cached_tokens=4, reasoning_tokens=2, cache_write_tokens=1)
    assert given_usage["total_tokens"] == 15
    r = builder()
    assert r.completed(given_usage)[0]["response"]["usage"] == given_usage
    default = text_reply(builder())[-1]["response"]["usage"]
    assert default["total_tokens"] == default["input_tokens"] + default["output_tokens"]
    assert default["output_tokens"] > 0


def test_events_completed_end_turn_only_when_given() -> None:
    assert "end_turn" not in builder().completed()[0]["response"]
    assert builder().completed(end_turn=False)[0]["response"]["end_turn"] is False


def test_events_failed_and_incomplete_carry_error_and_reason() -> None:
    failed = builder().failed("context_length_exceeded", "too long")[0]["response"]
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "context_length_exceeded", "message": "too long"}
    incomplete = builder().incomplete("max_output_tokens")[0]["response"]
    assert incomplete["status"] == "incomplete"
    assert incomplete["incomplete_details"] == {"reason": "max_output_tokens"}


def test_events_error_event_is_flat() -> None:
    error = builder().error("boom", code="server_error", param="input")[0]
    assert error == {"type": "error", "sequence_number": 0, "message": "boom", "code": "server_error", "param": "input"}


# -- deltas ------------------------------------------------------------------------------------

DELTA_FAMILIES = {
    "text": (lambda r, s, n: r.message(s, n), ev.TEXT_DELTA, ev.TEXT_DONE, "text"),
    "refusal": (lambda r, s, n: r.refusal(s, n), ev.REFUSAL_DELTA, ev.REFUSAL_DONE, "refusal"),
    "summary": (lambda r, s, n: r.reasoning([s], n), ev.SUMMARY_TEXT_DELTA, ev.SUMMARY_TEXT_DONE, "text"),
    "reasoning-text": (
        lambda r, s, n: r.reasoning(None, n, text=s),
        ev.REASONING_TEXT_DELTA,
        ev.REASONING_TEXT_DONE,
        "text",
    ),
    "arguments": (lambda r, s, n: r.function_call("f", s, n), ev.ARGUMENTS_DELTA, ev.ARGUMENTS_DONE, "arguments"),
    "custom-input": (
        lambda r, s, n: r.custom_tool_call("c", s, n),
        ev.CUSTOM_INPUT_DELTA,
        ev.CUSTOM_INPUT_DONE,
        "input",
    ),
}


@pytest.mark.parametrize("family", list(DELTA_FAMILIES))
@pytest.mark.parametrize(("text", "chunks"), [("abcdefghij", 3), ("abc", 10), ("x", 1), ("", 4), ("é✓🎉 ok", 2)])
def test_events_deltas_join_to_done_value_in_min_chunks_pieces(family: str, text: str, chunks: int) -> None:
    build, delta_type, done_type, field = DELTA_FAMILIES[family]
    r = builder()
    events = build(r, text, chunks)
    deltas = [event["delta"] for event in events if event["type"] == delta_type]
    done = [event for event in events if event["type"] == done_type]
    assert "".join(deltas) == text
    assert len(deltas) == (min(chunks, len(text)) if text else 1)
    assert len(done) == 1
    assert done[0][field] == text
    for event in events:
        assert_sdk_accepts(event)


def test_events_message_item_and_parts_have_sdk_required_fields() -> None:
    events = builder().message("hi", 1)
    part_added = next(event for event in events if event["type"] == ev.PART_ADDED)
    assert part_added["part"] == {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    item = done_items(events)[0]
    assert set(item) >= {"id", "type", "role", "status", "content"}
    assert item["content"] == [{"type": "output_text", "text": "hi", "annotations": [], "logprobs": []}]
    for event in events:
        if event["type"] in (ev.TEXT_DELTA, ev.TEXT_DONE):
            assert event["logprobs"] == []


def test_events_reasoning_done_item_holds_summary_and_raw_text() -> None:
    events = builder().reasoning(["one", "two"], 2, text="raw", encrypted_content="enc")
    item = done_items(events)[0]
    assert item["summary"] == [{"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}]
    assert item["content"] == [{"type": "reasoning_text", "text": "raw"}]
    assert item["encrypted_content"] == "enc"
    indices = [event["summary_index"] for event in events if event["type"] == ev.SUMMARY_TEXT_DELTA]
    assert indices == [0, 0, 1, 1]


def test_events_tool_call_items_keep_given_ids_and_arguments() -> None:
    r = builder()
    call = done_items(r.function_call("f", '{"a": 1}', 2, call_id="call_x", item_id="fc_x"))[0]
    assert call == {
        "id": "fc_x",
        "type": "function_call",
        "call_id": "call_x",
        "name": "f",
        "arguments": '{"a": 1}',
        "status": "completed",
    }
    custom = done_items(r.custom_tool_call("c", "in", call_id="call_y", item_id="ctc_y"))[0]
    assert custom["id"] == "ctc_y" and custom["call_id"] == "call_y" and custom["input"] == "in"
    assert [event["output_index"] for event in r.events if event["type"] == ev.ITEM_ADDED] == [0, 1]


def test_events_counting_ids_make_builds_reproducible() -> None:
    assert mixed_reply(builder()) == mixed_reply(builder())


# -- split_chunks, terminal_event --------------------------------------------------------------


@given(text=st.text(min_size=1, max_size=200), chunks=st.integers(1, 300))
def test_events_split_chunks_joins_back_in_min_n_len_even_pieces(text: str, chunks: int) -> None:
    pieces = split_chunks(text, chunks)
    assert "".join(pieces) == text
    assert len(pieces) == min(chunks, len(text))
    assert all(pieces)
    assert max(map(len, pieces)) - min(map(len, pieces)) <= 1


def test_events_split_chunks_of_empty_text_is_one_empty_piece() -> None:
    assert split_chunks("", 5) == [""]


@pytest.mark.parametrize("chunks", [0, -1])
def test_events_split_chunks_rejects_fewer_than_one_chunk(chunks: int) -> None:
    with pytest.raises(ValueError):
        split_chunks("abc", chunks)


def test_events_terminal_event_is_last_terminal_or_none_for_cut_stream() -> None:
    events = text_reply(builder())
    assert terminal_event(events) is events[-1]
    assert terminal_event(events[:-1]) is None
    errored = error_reply(builder())
    assert terminal_event(errored) is errored[-1]
    assert terminal_event([]) is None


def test_events_response_id_of_is_first_lifecycle_response_id() -> None:
    r = builder()
    events = text_reply(r)
    assert ev.response_id_of(events) == r.response_id
    assert ev.response_id_of(events[2:]) == r.response_id  # from response.completed alone
    assert ev.response_id_of(events[2:-1]) is None  # items only: no lifecycle event
    assert ev.response_id_of([]) is None
