"""Broken streams (issue 61): by default the reference client does what Codex does (it keeps each
`output_item.done` and ends the turn at `response.completed`, whatever came before); `strict_streams=True`, stricter
than Codex, refuses a stream that breaks an answer rule as a drop and retries it."""

from __future__ import annotations

import pytest

from rrkit.client import ClientOptions, RetryPolicy, StreamDropped
from rrkit.protocol import Item
from rrkit.script import Script, reply

from ..errortrap import Serve
from ..realclients.differential_broken import BROKEN_STREAMS, TEXT, broken_reply
from .client_support import BASE_DELAY, BUDGET, IDLE, TRANSPORTS, backoff, served

WITH_A_CALL = ("completed-id-empty", "completed-id-other")
NOTHING_STREAMED = ("lone-completed", "completion-before-output")
"""Streams whose message no `output_item.done` gave: Codex's turn ends at response.completed with no text."""
MESSAGES = [name for name in BROKEN_STREAMS if name not in WITH_A_CALL]


def strict() -> ClientOptions:
    return ClientOptions(
        retry=RetryPolicy(max_retries=BUDGET, base_delay=BASE_DELAY), idle_timeout=IDLE, strict_streams=True
    )


def ran(call: Item) -> str:
    return "ok"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", MESSAGES)
async def test_by_default_a_broken_stream_is_the_turns_answer_in_one_attempt_as_codex_takes_it(
    serve: Serve, name: str, transport: str
) -> None:
    async with served(serve, Script().queue(broken_reply(name), reply("Unused.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == ("" if name in NOTHING_STREAMED else TEXT)
        assert [exchange.warmup for exchange in h.exchanges] == [False]
        assert h.sleep.delays == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_completed_id_that_is_empty_is_taken_and_leaves_no_baseline(serve: Serve, transport: str) -> None:
    script = Script().queue(broken_reply("completed-id-empty"), reply("Done."))
    async with served(serve, script, transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.", ran)).text == "Done."
        assert len(h.exchanges) == 2 and h.sleep.delays == []
        follow_up = h.trace.entries[1]
        assert not follow_up.incremental  # seed 000 section 5.10: an empty id is no baseline
        assert "previous_response_id" not in (h.exchanges[1].wire_request or {})
        if transport == "ws":
            assert follow_up.decision == "the previous response has no id"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", list(BROKEN_STREAMS))
async def test_strict_streams_refuses_each_broken_stream_as_a_drop_and_retries(
    serve: Serve, name: str, transport: str
) -> None:
    script = Script().queue(broken_reply(name), reply("Done."))
    async with served(serve, script, transport=transport, options=strict()) as h:
        assert (await h.conversation().run_turn("Hello.", ran)).text == "Done."
        first = h.trace.entries[0]
        assert first.error_type == StreamDropped.__name__ and "no answer" in (first.error or "")
        assert h.sleep.delays == [backoff(1)]
        assert len(h.exchanges) == 2 and not h.trace.entries[1].incremental  # a retry is a full request
