"""What a scripted reply puts on the wire, read by real clients over SSE (httpx) and WebSocket (websockets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rrkit.protocol import OutcomeKind, check_order
from rrkit.protocol.exceptions import ScriptError
from rrkit.script import (
    Reply,
    Script,
    code_interpreter_call,
    custom_tool_call,
    file_search_call,
    function_call,
    image_generation_call,
    load_script,
    mcp_call,
    mcp_list_tools,
    reasoning,
    refusal,
    reply,
    text,
    web_search_call,
)
from rrkit.server import FakeServer

from ..server.faultclient import BODY, Serve, finished, sdk, stream, text_of, types

TRANSPORTS = ["http", "ws"]


def completed_on_server(server: FakeServer, events: list[dict[str, Any]]) -> None:
    """The server captured exactly what the client read, and recorded the exchange as completed."""
    exchange = finished(server)
    assert exchange.outcome is not None
    assert exchange.outcome.kind is OutcomeKind.COMPLETED
    assert exchange.outcome.events_sent == len(events)
    assert exchange.event_types == types(events)


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("chunks", [1, 4, 9])
def test_text_is_streamed_as_exactly_n_deltas_that_join_into_the_text(
    serve: Serve, transport: str, chunks: int
) -> None:
    server = serve(Script(default=reply(text("The quick brown fox jumps.", chunks=chunks))))
    events = stream(server, transport)
    assert len(of_type(events, "response.output_text.delta")) == chunks
    assert text_of(events) == "The quick brown fox jumps."
    assert of_type(events, "response.output_text.done")[0]["text"] == "The quick brown fox jumps."
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert check_order(events) == []
    completed_on_server(server, events)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_reasoning_summary_arrives_as_summary_deltas_then_done_parts(serve: Serve, transport: str) -> None:
    summary = ["Look up the weather first.", "Then answer briefly."]
    server = serve(Script(default=reply(reasoning(*summary, chunks=3), "Sunny.")))
    events = stream(server, transport)
    for index, part in enumerate(summary):
        deltas = [e for e in of_type(events, "response.reasoning_summary_text.delta") if e["summary_index"] == index]
        assert len(deltas) == 3
        assert "".join(delta["delta"] for delta in deltas) == part
        done = [e for e in of_type(events, "response.reasoning_summary_text.done") if e["summary_index"] == index]
        assert [event["text"] for event in done] == [part]
    item = of_type(events, "response.output_item.done")[0]["item"]
    assert item["type"] == "reasoning"
    assert [part["text"] for part in item["summary"]] == summary
    assert check_order(events) == []
    completed_on_server(server, events)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_function_call_arguments_arrive_as_deltas_then_done_with_the_whole_json(serve: Serve, transport: str) -> None:
    server = serve(Script(default=reply(function_call("get_weather", {"city": "Paris"}, call_id="call_1", chunks=4))))
    events = stream(server, transport)
    deltas = of_type(events, "response.function_call_arguments.delta")
    assert len(deltas) == 4
    arguments = "".join(delta["delta"] for delta in deltas)
    assert json.loads(arguments) == {"city": "Paris"}
    assert of_type(events, "response.function_call_arguments.done")[0]["arguments"] == arguments
    item = of_type(events, "response.output_item.done")[0]["item"]
    assert (item["type"], item["name"], item["call_id"], item["arguments"]) == (
        "function_call",
        "get_weather",
        "call_1",
        arguments,
    )
    assert types(events).index("response.function_call_arguments.done") < types(events).index(
        "response.output_item.done"
    )
    completed_on_server(server, events)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_custom_tool_call_input_arrives_as_deltas_then_done(serve: Serve, transport: str) -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
    server = serve(Script(default=reply(custom_tool_call("apply_patch", patch, chunks=5))))
    events = stream(server, transport)
    deltas = of_type(events, "response.custom_tool_call_input.delta")
    assert len(deltas) == 5
    assert "".join(delta["delta"] for delta in deltas) == patch
    assert of_type(events, "response.custom_tool_call_input.done")[0]["input"] == patch
    item = of_type(events, "response.output_item.done")[0]["item"]
    assert (item["type"], item["name"], item["input"]) == ("custom_tool_call", "apply_patch", patch)
    completed_on_server(server, events)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_several_output_items_are_numbered_in_order_and_all_land_in_response_completed(
    serve: Serve, transport: str
) -> None:
    outputs = reply(
        reasoning("Plan."),
        text("Calling two tools."),
        function_call("read_file", {"path": "a.txt"}),
        custom_tool_call("shell", "ls"),
    )
    server = serve(Script(default=outputs))
    events = stream(server, transport)
    done = of_type(events, "response.output_item.done")
    assert [event["output_index"] for event in done] == [0, 1, 2, 3]
    assert [event["item"]["type"] for event in done] == ["reasoning", "message", "function_call", "custom_tool_call"]
    final = events[-1]["response"]
    assert final["output"] == [event["item"] for event in done]
    assert check_order(events) == []
    completed_on_server(server, events)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_scripted_usage_is_reported_in_response_completed(serve: Serve, transport: str) -> None:
    usage = {"input_tokens": 120, "output_tokens": 8, "cached_tokens": 100, "reasoning_tokens": 3}
    server = serve(Script(default=reply("Hi.", usage=usage)))
    events = stream(server, transport)
    reported = events[-1]["response"]["usage"]
    assert reported["input_tokens"] == 120
    assert reported["output_tokens"] == 8
    assert reported["total_tokens"] == 128
    assert reported["input_tokens_details"]["cached_tokens"] == 100
    assert reported["output_tokens_details"]["reasoning_tokens"] == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_end_turn_false_is_present_in_response_completed_only_when_scripted(serve: Serve, transport: str) -> None:
    server = serve(Script().add(reply("More to come.", end_turn=False)).add(reply("Done.")))
    asks_again = stream(server, transport)
    plain = stream(server, transport)
    assert asks_again[-1]["type"] == "response.completed"
    assert asks_again[-1]["response"]["end_turn"] is False
    assert "end_turn" not in plain[-1]["response"]


def test_strict_sdk_parses_every_output_family(serve: Serve) -> None:
    server = serve(
        Script(
            default=reply(
                reasoning("Think.", chunks=2),
                text("Here you go.", chunks=3),
                refusal("I cannot do that part."),
                function_call("get_weather", {"city": "Oslo"}, chunks=2),
                custom_tool_call("apply_patch", "*** Begin Patch\n*** End Patch\n", chunks=2),
                usage={"input_tokens": 10, "output_tokens": 20},
            )
        )
    )
    with sdk(server).responses.stream(model="gpt-test", input="Hello") as response_stream:
        final = response_stream.get_final_response()
    assert [item.type for item in final.output] == [
        "reasoning",
        "message",
        "message",
        "function_call",
        "custom_tool_call",
    ]
    assert final.output_text == "Here you go."
    assert final.usage is not None and final.usage.total_tokens == 30
    completed_on_server(server, [event.event for event in server.exchanges[-1].events])


def test_the_same_reply_is_the_same_event_sequence_over_both_transports(serve: Serve) -> None:
    script = Script(default=reply(reasoning("Plan."), text("Hi there.", chunks=3), function_call("f", {"a": 1})))
    server = serve(script)
    over_http = stream(server, "http", BODY)
    over_ws = stream(server, "ws", BODY)
    assert types(over_http) == types(over_ws)


BROKEN_ARGUMENTS = '{"cmd": ["echo", "hi"'  # cut short: not valid JSON


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_tool_call_whose_arguments_are_not_json_goes_out_verbatim_and_the_sdk_parses_the_stream(
    serve: Serve, transport: str
) -> None:
    server = serve(Script(default=reply(function_call("shell", BROKEN_ARGUMENTS, chunks=3))))
    events = stream(server, transport)
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    done = next(e for e in events if e["type"] == "response.output_item.done")
    assert deltas == BROKEN_ARGUMENTS == done["item"]["arguments"]
    assert check_order(events) == []
    with sdk(server).responses.create(model="gpt-test", input="Hi", stream=True) as sdk_stream:
        final = [event for event in sdk_stream][-1]
    assert final.response.output[0].arguments == BROKEN_ARGUMENTS  # type: ignore[union-attr]
    with pytest.raises(json.JSONDecodeError):
        json.loads(final.response.output[0].arguments)  # type: ignore[union-attr]


def test_the_python_builders_carry_what_the_yaml_form_carries(serve: Serve) -> None:
    built = reply(
        reasoning("Thinking.", encrypted_content="gAAAA-opaque"),
        text("Done.", phase="final_answer"),
        usage={"input_tokens": 7, "output_tokens": 3, "cached_tokens": 2, "cache_write_tokens": 4},
    )
    events = stream(serve(Script(default=built)), "http")
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[0]["encrypted_content"] == "gAAAA-opaque" and done[1]["phase"] == "final_answer"
    completed = events[-1]["response"]
    assert completed["usage"]["input_tokens_details"] == {"cached_tokens": 2, "cache_write_tokens": 4}
    with sdk(serve(Script(default=built))).responses.create(model="gpt-test", input="Hi", stream=True) as sdk_stream:
        assert [event for event in sdk_stream][-1].type == "response.completed"  # every field parses strictly


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_queued_reply_sends_response_queued_before_created_and_the_sdk_parses_it(
    serve: Serve, transport: str
) -> None:
    server = serve(Script(default=reply(text("Hi.")).model_copy(update={"queued": True})))
    events = stream(server, transport)
    assert [e["type"] for e in events[:2]] == ["response.queued", "response.created"]
    assert events[0]["response"]["status"] == "queued" and events[0]["sequence_number"] == 0
    assert check_order(events) == []
    if transport == "http":
        with sdk(server).responses.create(model="gpt-test", input="Hi", stream=True) as sdk_stream:
            assert next(iter(sdk_stream)).type == "response.queued"  # strict: the SDK's ResponseQueuedEvent


def test_queued_beside_verbatim_events_is_refused_saying_what_to_leave_out() -> None:
    with pytest.raises(ValueError, match="verbatim `events` hold the output and the ending already"):
        Reply.model_validate({"events": [{"event": {"type": "response.created"}}], "queued": True})


PIXEL = "iVBORw0KGgo="  # base64, as the service sends images
HOSTED = {
    "web_search_call": (
        web_search_call("rrkit record replay"),
        ["in_progress", "searching", "completed"],
        {"action": {"type": "search", "query": "rrkit record replay"}},
    ),
    "file_search_call": (
        file_search_call("retry rules"),
        ["in_progress", "searching", "completed"],
        {"queries": ["retry rules"]},
    ),
    "image_generation_call": (
        image_generation_call(PIXEL, "cGFydDE=", "cGFydDI="),
        ["in_progress", "generating", "partial_image", "partial_image", "completed"],
        {"result": PIXEL},
    ),
    "code_interpreter_call": (
        code_interpreter_call("print(6 * 7)", chunks=3),
        ["in_progress", "interpreting", "completed"],
        {"code": "print(6 * 7)", "container_id": "cntr_rrkit"},
    ),
    "mcp_call": (
        mcp_call("docs", "search", {"q": "rrkit"}, "3 results", chunks=2),
        ["in_progress", "completed"],
        {"arguments": '{"q": "rrkit"}', "output": "3 results", "server_label": "docs", "name": "search"},
    ),
    "mcp_list_tools": (
        mcp_list_tools("docs", {"name": "search", "input_schema": {"type": "object"}}),
        ["in_progress", "completed"],
        {"server_label": "docs", "tools": [{"name": "search", "input_schema": {"type": "object"}}]},
    ),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", list(HOSTED))
def test_a_hosted_tool_item_streams_its_own_events_and_the_sdk_parses_it_strictly(
    serve: Serve, transport: str, kind: str
) -> None:
    output, steps, done_fields = HOSTED[kind]
    server = serve(Script(default=reply(output, text("Found it."))))
    events = stream(server, transport)
    own = [e["type"].removeprefix(f"response.{kind}.") for e in events if e["type"].startswith(f"response.{kind}.")]
    assert own == steps
    assert check_order(events) == []
    done = next(e["item"] for e in events if e["type"] == "response.output_item.done")
    assert done["type"] == kind and done["status"] == "completed" and done_fields.items() <= done.items()
    if transport == "http":
        with sdk(server).responses.create(model="gpt-test", input="Hi", stream=True) as sdk_stream:
            final = [event for event in sdk_stream][-1]
        assert final.response.output[0].type == kind  # type: ignore[union-attr]


def test_a_web_search_call_in_yaml_is_the_builder_s(tmp_path: Path) -> None:
    path = tmp_path / "search.yaml"
    path.write_text("name: search\ndefault:\n  output:\n    - {type: web_search_call, query: rrkit}\n")
    assert load_script(path).default == reply(web_search_call("rrkit"))  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("value", ["!!binary aGk=", "2026-12-04", "[.nan]"])
def test_function_call_arguments_that_are_not_json_are_a_script_error_naming_the_field(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(
        f"responses:\n  - output:\n      - type: function_call\n        name: f\n        arguments: {{city: {value}}}\n"
    )
    with pytest.raises(
        ScriptError, match=r"(?s)odd\.yaml.*line 5, responses\[0\]\.output\[0\]\.arguments: the arguments must be JSON"
    ):
        load_script(path)
