"""The reference client on the resource beyond the create (docs/protocol.md, "Every route"): it resumes a
background response's broken stream from the last sequence number it received, never posting the request again,
each event taken once; it compacts the history as the Codex CLI does (a `compaction_trigger` create); it cancels
only a background response that still runs (tests/conform/test_conform_actions.py cancels one); in a server
conversation each request names it and sends only what it does not hold yet."""

from __future__ import annotations

import pytest

from rrkit.client import CompactionFailed, Conversation, InvalidRequest, Prompt, StreamDropped
from rrkit.protocol import routes
from rrkit.script import Match, Script, compaction, function_call, reply, text

from ..errortrap import Serve
from .client_support import served

WORDS = "one two three four five six"
BACKGROUND = Prompt(model="gpt-test", instructions="Be brief.", overrides={"background": True})


async def test_a_background_stream_cut_mid_way_is_resumed_after_the_last_sequence_number(serve: Serve) -> None:
    script = Script().queue(reply(text(WORDS, chunks=6)).drop_after(5))
    async with served(serve, script, transport="http") as harness:
        deltas: list[str] = []
        turn = await harness.conversation(BACKGROUND).run_turn("count", on_delta=lambda d: deltas.append(d.delta))  # type: ignore[union-attr]
        assert turn.text == WORDS and "".join(deltas) == WORDS
        create, resume = harness.exchanges
        assert (create.route, create.outcome and create.outcome.kind.value) == (routes.CREATE, "dropped")
        assert (resume.method, resume.route, resume.query) == ("GET", routes.RETRIEVE, "stream=true&starting_after=4")
        (entry,) = harness.trace.sent
        assert entry.resumed_after == [4]
        numbers = [received.event["sequence_number"] for received in entry.events]
        assert numbers == list(range(len(numbers)))  # every event once, in order


async def test_a_foreground_stream_cut_is_posted_again_not_resumed(serve: Serve) -> None:
    script = Script().queue(reply(text(WORDS, chunks=6)).drop_after(5), reply(text(WORDS)))
    async with served(serve, script, transport="http") as harness:
        turn = await harness.conversation(Prompt(model="gpt-test")).run_turn("count")
        assert turn.text == WORDS
        assert [exchange.route for exchange in harness.exchanges] == [routes.CREATE, routes.CREATE]


async def test_with_no_retry_left_a_broken_background_stream_gives_up_without_a_resume(serve: Serve) -> None:
    script = Script().queue(reply(text(WORDS, chunks=6)).drop_after(5))
    async with served(serve, script, transport="http", budget=0) as harness:
        with pytest.raises(StreamDropped):
            await harness.conversation(BACKGROUND).run_turn("count")
        assert [exchange.route for exchange in harness.exchanges] == [routes.CREATE]


async def test_a_remote_compaction_keeps_the_context_and_user_messages_then_the_compaction_item(serve: Serve) -> None:
    script = Script().add(reply(compaction("summary")), when=Match(last_input_type="compaction_trigger"), repeat=True)
    script = script.add(reply(text("Let me check."), function_call("lookup", {"q": "x"}, call_id="c1")), times=1)
    script = script.add(reply(text("Done.")), repeat=True)
    async with served(serve, script, transport="http") as harness:
        conversation = harness.conversation(Prompt(model="gpt-test", instructions="Be brief."))
        await conversation.run_turn("look it up", tool_handler=lambda call: "found")
        item = await conversation.compact()
        assert (item["type"], item["encrypted_content"]) == ("compaction", "summary")
        assert [(entry.get("type"), entry.get("role")) for entry in conversation.history] == [
            ("message", "user"),
            ("compaction", None),
        ]
        await conversation.run_turn("and now?")
        *_, trigger, after = harness.exchanges
        assert (trigger.wire_request or {})["input"][-1] == {"type": "compaction_trigger"}
        assert [entry.get("type") for entry in (after.wire_request or {})["input"]] == [
            "message",
            "compaction",
            "message",
        ]


async def test_a_compaction_answered_with_anything_but_one_compaction_item_fails_and_keeps_the_history(
    serve: Serve,
) -> None:
    async with served(serve, Script().add(reply(text("No.")), repeat=True), transport="http") as harness:
        conversation = harness.conversation(Prompt(model="gpt-test"))
        await conversation.run_turn("hi")
        before = list(conversation.history)
        with pytest.raises(CompactionFailed, match="exactly one compaction item"):
            await conversation.compact()
        assert conversation.history == before


async def test_cancel_is_refused_for_a_background_response_that_ended_and_for_a_foreground_one(serve: Serve) -> None:
    async with served(serve, Script().add(reply(text(WORDS)), repeat=True), transport="http") as harness:
        await harness.conversation(BACKGROUND).run_turn("count")
        await harness.conversation(Prompt(model="gpt-test", store=True)).run_turn("count")
        ended, foreground = (entry.response_id for entry in harness.trace.sent)
        assert ended is not None and foreground is not None
        with pytest.raises(InvalidRequest, match="Cannot cancel a response with status 'completed'"):
            await harness.client.cancel(ended)
        with pytest.raises(InvalidRequest, match="background=true"):
            await harness.client.cancel(foreground)


async def test_in_a_server_conversation_each_request_sends_only_what_it_does_not_hold(serve: Serve) -> None:
    script = Script().add(reply(function_call("lookup", {"q": "x"}, call_id="c1")), times=1)
    script = script.add(reply(text("Done.")), repeat=True)
    async with served(serve, script, transport="http") as harness:
        kept = await harness.client.create_conversation()
        conversation = Conversation(harness.client, Prompt(model="gpt-test"), conversation_id=kept)
        await conversation.run_turn("look it up", tool_handler=lambda call: "found")
        await conversation.run_turn("thanks")
        sent = [exchange.wire_request for exchange in harness.exchanges if exchange.route == routes.CREATE]
        assert [request and request.get("conversation") for request in sent] == [kept] * 3
        assert [[item.get("type") for item in request["input"]] for request in sent if request] == [
            ["message"],
            ["function_call_output"],
            ["message"],
        ]
        assert not any(request and request.get("previous_response_id") for request in sent)
        assert [item.get("type") for item in conversation.history] == [
            "message",
            "function_call",
            "function_call_output",
            "message",
            "message",
            "message",
        ]
