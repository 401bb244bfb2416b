"""Full vs incremental requests (docs/protocol.md: When a request may be incremental) as the reference client
sends them to the fake server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from rrkit.client import Prompt, user_message
from rrkit.protocol import Item, ResponseEvents
from rrkit.protocol.incremental import changed_properties
from rrkit.protocol.request import COMPARED_FIELDS, IGNORED_FIELDS
from rrkit.script import Script, function_call, reply, text

from ..errortrap import Serve
from .client_support import PROMPT, WEATHER_TOOL, served, verbatim, wire_inputs

TOOL_OUTPUT = "sunny, 21C"


def tool_then_answer() -> Script:
    return Script().queue(
        reply(function_call("get_weather", {"city": "Paris"}, call_id="call_1", chunks=2)),
        reply(text("Sunny in Paris.", chunks=3)),
    )


async def test_strict_prefix_sends_only_the_suffix_with_previous_response_id(serve: Serve) -> None:
    async with served(serve, tool_then_answer()) as h:
        await h.conversation().run_turn("Weather in Paris?", lambda call: TOOL_OUTPUT)
        first, second = h.exchanges
        assert not first.incremental
        assert second.wire_request is not None
        assert second.wire_request["previous_response_id"] == first.response_id
        assert second.wire_request["input"] == [
            {"type": "function_call_output", "call_id": "call_1", "output": TOOL_OUTPUT}
        ]
        assert second.logical_request is not None
        assert second.logical_request["input"][:2] == [*first.wire_request["input"], *first_done_items(h)]
        assert [entry.incremental for entry in h.trace.entries] == [False, True]


def first_done_items(h: Any) -> list[Item]:
    return [sent.event["item"] for sent in h.exchanges[0].events if sent.event["type"] == "response.output_item.done"]


async def test_the_first_request_after_a_prewarm_continues_from_it_with_the_remaining_delta(serve: Serve) -> None:
    context = user_message("You are in a test.")
    async with served(serve, Script().queue(reply("Hello."))) as h:
        conversation = h.conversation(PROMPT.extended(context))
        warmup_id = await conversation.warmup()
        await conversation.run_turn("Say hello.")
        warmup, real = h.exchanges
        assert warmup.warmup and warmup.wire_request is not None
        assert warmup.wire_request["input"] == [context]
        assert warmup_id == warmup.response_id
        assert real.wire_request is not None
        assert real.wire_request["previous_response_id"] == warmup_id
        assert real.wire_request["input"] == [user_message("Say hello.")]
        assert h.trace.entries[1].logical["input"] == [context, user_message("Say hello.")]


async def test_after_a_warmup_with_the_whole_prompt_the_first_request_carries_an_empty_delta(serve: Serve) -> None:
    prompt = PROMPT.extended(user_message("Say hello."))
    async with served(serve, Script().queue(reply("Hello."))) as h:
        warmup_id = await h.client.warmup(prompt)
        async with h.client.turn() as turn:
            result = await turn.sample(prompt)
        assert result.items[0]["content"][0]["text"] == "Hello."
        real = h.exchanges[1]
        assert real.wire_request is not None
        assert real.wire_request["previous_response_id"] == warmup_id
        assert real.wire_request["input"] == []
        # the trace's logical view shows the model got the whole prompt, and the server agrees
        assert h.trace.entries[1].logical["input"] == [user_message("Say hello.")]
        assert real.logical_request is not None
        assert real.logical_request["input"] == [user_message("Say hello.")]


async def test_a_response_without_an_id_is_no_baseline_for_an_incremental_request(serve: Serve) -> None:
    builder = ResponseEvents({"model": PROMPT.model})
    builder.start()
    builder.message("One.")
    builder.completed()
    events = [{**e, "response": {**e["response"], "id": ""}} if "response" in e else e for e in builder.events]
    async with served(serve, Script().queue(verbatim(*events), reply("Two."))) as h:
        conversation = h.conversation()
        await conversation.run_turn("First?")
        await conversation.run_turn("Second?")
        second = h.trace.entries[1]
        assert not second.incremental and second.decision == "the previous response has no id"
        assert "previous_response_id" not in (h.exchanges[1].wire_request or {})


async def test_no_warmup_is_sent_when_the_sessions_socket_already_holds_a_last_request(serve: Serve) -> None:
    async with served(serve, Script().queue(reply("One."), reply("Two."))) as h:
        conversation = h.conversation()
        assert await conversation.warmup() is not None
        await conversation.run_turn("First?")
        assert await conversation.warmup() is None
        await conversation.run_turn("Second?")
        assert [exchange.warmup for exchange in h.exchanges] == [True, False, False]
        assert [exchange.incremental for exchange in h.exchanges] == [False, True, True]


CHANGES: dict[str, Callable[[Prompt], Prompt]] = {
    "model": lambda p: replace(p, model="gpt-other"),
    "instructions": lambda p: replace(p, instructions="Be verbose."),
    "tools": lambda p: replace(p, tools=(WEATHER_TOOL, {**WEATHER_TOOL, "name": "get_time"})),
    "tool_choice": lambda p: replace(p, overrides={"tool_choice": "required"}),
    "parallel_tool_calls": lambda p: replace(p, parallel_tool_calls=True),
    "reasoning": lambda p: replace(p, reasoning={"effort": "high", "summary": "auto"}),
    "store": lambda p: replace(p, store=True),
    "stream": lambda p: replace(p, overrides={"stream": False}),
    "include": lambda p: replace(p, include=("reasoning.encrypted_content",)),
    "service_tier": lambda p: replace(p, service_tier="priority"),
    "prompt_cache_key": lambda p: replace(p, prompt_cache_key="another-key"),
    "text": lambda p: replace(p, verbosity="low"),
}
IGNORED_CHANGES: dict[str, Callable[[Prompt], Prompt]] = {
    "client_metadata": lambda p: replace(p, client_metadata={"x-run": "2"}),
    "stream_options": lambda p: replace(p, stream_options={"include_obfuscation": False}),
}


def test_every_compared_and_ignored_field_has_a_change_in_these_tests() -> None:
    assert set(CHANGES) == set(COMPARED_FIELDS)
    assert set(IGNORED_CHANGES) <= set(IGNORED_FIELDS)


async def two_samples(serve: Serve, first: Prompt, change: Callable[[Prompt], Prompt]) -> Any:
    """Sample `first`, then the changed prompt with the answer and a new user message appended."""
    async with served(serve, Script().queue(reply("One."), reply("Two."))) as h:
        history: list[Item] = list(first.history)
        async with h.client.turn() as turn:
            await turn.sample(first, history=history)
            history.append(user_message("And again."))
            await turn.sample(change(first.with_history(history)), history=history)
        return h


@pytest.mark.parametrize("field", COMPARED_FIELDS)
async def test_a_changed_compared_field_falls_back_to_a_full_request(serve: Serve, field: str) -> None:
    h = await two_samples(serve, PROMPT.extended(user_message("Hello.")), CHANGES[field])
    first, second = h.trace.entries
    assert changed_properties(first.logical, second.logical) == [field]
    assert not second.incremental and second.decision == f"changed: {field}"
    assert not h.exchanges[1].incremental
    assert "previous_response_id" not in (h.exchanges[1].wire_request or {})


@pytest.mark.parametrize("field", sorted(IGNORED_CHANGES))
async def test_an_ignored_field_change_stays_incremental(serve: Serve, field: str) -> None:
    h = await two_samples(serve, PROMPT.extended(user_message("Hello.")), IGNORED_CHANGES[field])
    first, second = h.trace.entries
    assert first.logical.get(field) != second.logical.get(field)
    assert second.incremental
    assert h.exchanges[1].incremental
    assert wire_inputs(h.exchanges)[1] == [user_message("And again.")]


def _shorter(history: list[Item]) -> list[Item]:
    return history[1:]


def _edited(history: list[Item]) -> list[Item]:
    return [user_message("Hello, edited."), *history[1:]]


def _reordered(history: list[Item]) -> list[Item]:
    return [history[1], history[0], *history[2:]]


@pytest.mark.parametrize("rewrite", [_shorter, _edited, _reordered], ids=["shorter", "edited", "reordered"])
async def test_input_that_does_not_extend_the_baseline_falls_back_to_a_full_request(
    serve: Serve,
    rewrite: Callable[[list[Item]], list[Item]],
) -> None:
    async with served(serve, Script().queue(reply("One."), reply("Two."))) as h:
        history: list[Item] = [user_message("Hello.")]
        async with h.client.turn() as turn:
            await turn.sample(PROMPT.with_history(history), history=history)
            history[:] = rewrite(history)
            await turn.sample(PROMPT.with_history(history), history=history)
        second = h.trace.entries[1]
        assert not second.incremental
        assert not h.exchanges[1].incremental
        assert h.exchanges[1].wire_request is not None
        assert h.exchanges[1].wire_request["input"] == second.logical["input"]


async def test_http_always_sends_the_full_request(serve: Serve) -> None:
    async with served(serve, tool_then_answer(), transport="http") as h:
        await h.conversation().run_turn("Weather in Paris?", lambda call: TOOL_OUTPUT)
        assert [exchange.incremental for exchange in h.exchanges] == [False, False]
        assert len(wire_inputs(h.exchanges)[1]) == 3
