"""The sampling loop: deltas to the display, done items to history, tool calls run, end_turn honoured."""

from __future__ import annotations

import json

import pytest

from rrkit.client import Delta, TextDelta, ToolInputDelta, tool_output
from rrkit.protocol import Item, is_warmup
from rrkit.protocol.lite import LITE_HEADER, LITE_METADATA
from rrkit.script import Script, function_call, reasoning, reply, text

from ..errortrap import Serve
from .client_support import TRANSPORTS, item_types, served, wire_inputs


def two_tool_calls_then_answer() -> Script:
    return Script().queue(
        reply(reasoning("Need the weather."), function_call("get_weather", {"city": "Paris"}, call_id="c1", chunks=3)),
        reply(function_call("get_weather", {"city": "Rome"}, call_id="c2")),
        reply(text("Sunny in Paris, rainy in Rome.", chunks=4)),
    )


def weather(call: Item) -> str:
    city = json.loads(call["arguments"])["city"]
    return {"Paris": "sunny", "Rome": "rainy"}[city]


async def test_a_multi_step_tool_loop_over_websocket_sends_every_follow_up_incrementally(serve: Serve) -> None:
    async with served(serve, two_tool_calls_then_answer()) as h:
        conversation = h.conversation()
        result = await conversation.run_turn("Weather in Paris and Rome?", weather)
        assert result.text == "Sunny in Paris, rainy in Rome."
        assert [exchange.incremental for exchange in h.exchanges] == [False, True, True]
        assert {exchange.connection_id for exchange in h.exchanges} == {0}
        # each follow-up carries only the tool output; the previous response id chains them
        assert wire_inputs(h.exchanges)[1:] == [
            [tool_output({"type": "function_call", "call_id": "c1"}, "sunny")],
            [tool_output({"type": "function_call", "call_id": "c2"}, "rainy")],
        ]
        for previous, current in zip(h.exchanges, h.exchanges[1:], strict=False):
            assert current.wire_request is not None
            assert current.wire_request["previous_response_id"] == previous.response_id
        assert item_types(conversation.history) == [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "function_call",
            "function_call_output",
            "message",
        ]


async def test_a_multi_step_tool_loop_over_http_sends_full_requests(serve: Serve) -> None:
    async with served(serve, two_tool_calls_then_answer(), transport="http") as h:
        result = await h.conversation().run_turn("Weather in Paris and Rome?", weather)
        assert result.text == "Sunny in Paris, rainy in Rome."
        assert [exchange.incremental for exchange in h.exchanges] == [False, False, False]
        assert [len(items) for items in wire_inputs(h.exchanges)] == [1, 4, 6]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_deltas_go_to_the_display_only_and_done_items_to_history(serve: Serve, transport: str) -> None:
    deltas: list[Delta] = []
    async with served(serve, two_tool_calls_then_answer(), transport=transport) as h:
        conversation = h.conversation()
        await conversation.run_turn("Weather?", weather, on_delta=deltas.append)
        shown = "".join(delta.delta for delta in deltas if isinstance(delta, TextDelta))
        assert shown == "Sunny in Paris, rainy in Rome."
        assert "".join(d.delta for d in deltas if isinstance(d, ToolInputDelta)).startswith('{"city": "Paris"}')
        # history holds only complete items, exactly as the server sent them in output_item.done
        done = [
            sent.event["item"]
            for exchange in h.exchanges
            for sent in exchange.events
            if sent.event["type"] == "response.output_item.done"
        ]
        assert [item for item in conversation.history if item in done] == done
        assert all(item.get("status") != "in_progress" for item in conversation.history)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_end_turn_false_samples_again_within_the_turn(serve: Serve, transport: str) -> None:
    script = Script().queue(reply("Let me think more.", end_turn=False), reply("Done."))
    async with served(serve, script, transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert [sample.end_turn for sample in result.samples] == [False, None]
        assert result.text == "Done."
        assert len(h.exchanges) == 2
        if transport == "ws":  # nothing new to send: an incremental request with an empty delta
            assert h.exchanges[1].incremental and wire_inputs(h.exchanges)[1] == []


async def test_sample_returns_tool_calls_to_the_caller_and_records_usage(serve: Serve) -> None:
    script = Script().queue(
        reply(function_call("get_weather", {"city": "Oslo"}), usage={"input_tokens": 50, "output_tokens": 7})
    )
    async with served(serve, script) as h:
        async with h.client.turn() as turn:
            result = await turn.sample(h.conversation().prompt().extended({"role": "user", "content": "Oslo?"}))
        assert [call["name"] for call in result.tool_calls] == ["get_weather"]
        assert result.usage is not None and result.usage["input_tokens"] == 50 and result.usage["total_tokens"] == 57
        assert h.client.usage == [result.usage]


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_lite_encoding_is_sent_as_codex_sends_it_and_logged_as_the_logical_request(
    serve: Serve, transport: str
) -> None:
    """Codex 0.169.0 and 0.171.0 (observed with a Lite model of their catalogue): the tools item first, then the
    instructions; no parallel tool calls; the reasoning context for all turns; the Lite header over HTTP, its
    `client_metadata` key over WebSocket."""
    async with served(serve, Script(default=reply("Hello.")), transport=transport, encoding="lite") as h:
        await h.conversation().run_turn("Hi.")
        [exchange] = [e for e in h.exchanges if not is_warmup(e.wire_request or {})]
        wire = exchange.wire_request
        assert wire is not None and exchange.logical_request is not None
        assert "instructions" not in wire and "tools" not in wire
        assert item_types(exchange.logical_request["input"]) == ["additional_tools", "message", "message"]
        assert wire["parallel_tool_calls"] is False and wire["reasoning"]["context"] == "all_turns"
        if transport == "http":
            assert exchange.request_headers[LITE_HEADER] == "true"
        else:
            assert LITE_HEADER not in exchange.request_headers
            assert wire["client_metadata"][LITE_METADATA] == "true"
