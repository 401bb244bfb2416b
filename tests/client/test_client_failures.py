"""Termination checks and retries (PROTOCOL.md section 7): each failure ends as the table says."""

from __future__ import annotations

import asyncio

import pytest
from client_support import BUDGET, TRANSPORTS, backoff, item_types, served, wire_inputs

from rrkit.client import (
    ConnectionLimitReached,
    ContextWindowExceeded,
    IdleTimeout,
    InvalidRequest,
    ModelClientError,
    PolicyRefusal,
    QuotaExceeded,
    RateLimited,
    ResponseIncomplete,
    RetryableStreamError,
    ServerOverloaded,
    StreamDropped,
    Unauthorized,
    UsageLimitReached,
    UsageNotIncluded,
)
from rrkit.protocol import FAILURE_CODES, WEBSOCKET_CONNECTION_LIMIT, OutcomeKind, ResponseEvents, parse_retry_delay
from rrkit.script import Reply, Script, error_event, failed, incomplete, reject, reply, text
from rrkit.script.models import TimedEvent

NOT_RETRIED: dict[str, type[ModelClientError]] = {
    "context_length_exceeded": ContextWindowExceeded,
    "insufficient_quota": QuotaExceeded,
    "usage_not_included": UsageNotIncluded,
    "invalid_prompt": InvalidRequest,
    "cyber_policy": PolicyRefusal,
    "bio_policy": PolicyRefusal,  # any other *_policy code
    "server_is_overloaded": ServerOverloaded,
    "slow_down": ServerOverloaded,
}


def test_every_failure_code_of_the_table_is_covered() -> None:
    assert set(FAILURE_CODES) <= {*NOT_RETRIED, "rate_limit_exceeded"}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("code", sorted(NOT_RETRIED))
async def test_response_failed_with_a_non_retryable_code_raises_its_typed_error_after_one_attempt(
    code: str, transport: str
) -> None:
    async with served(Script().queue(failed(code), reply("never sent")), transport=transport) as h:
        with pytest.raises(NOT_RETRIED[code]) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.code == code
        assert caught.value.outcome_kind is OutcomeKind.FAILED
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []
        assert h.trace.fallbacks == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_response_failed_rate_limited_is_retried_after_the_delay_in_its_message(transport: str) -> None:
    message = FAILURE_CODES["rate_limit_exceeded"].message
    async with served(Script().queue(failed("rate_limit_exceeded"), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert len(h.exchanges) == 2
        assert h.sleep.delays == [parse_retry_delay(message)] == [1.5]
        assert h.trace.entries[0].error_type == RateLimited.__name__


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("code", [None, "server_error"], ids=["no-code", "unknown-code"])
async def test_response_failed_with_another_code_is_a_generic_stream_error_retried_with_backoff(
    code: str | None, transport: str
) -> None:
    async with served(Script().queue(failed(code), failed(code), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert len(h.exchanges) == 3
        assert h.sleep.delays == [backoff(1), backoff(2)] == [0.25, 0.5]
        assert [entry.error_type for entry in h.trace.entries] == ["RetryableStreamError"] * 2 + [None]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_generic_stream_error_raises_once_the_retry_budget_is_spent_over_http(transport: str) -> None:
    script = Script(default=failed("server_error"))
    async with served(script, transport=transport) as h:
        with pytest.raises(RetryableStreamError):
            await h.conversation().run_turn("Hello.")
        attempts = BUDGET + 1
        # over a socket the budget is spent twice: once on WebSocket, then again after the fallback to HTTP
        assert len(h.exchanges) == (2 * attempts if transport == "ws" else attempts)
        assert [exchange.transport for exchange in h.exchanges][-attempts:] == ["http"] * attempts
        assert h.sleep.delays == [backoff(n) for n in range(1, attempts)] * (2 if transport == "ws" else 1)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_response_incomplete_is_a_stream_error_and_is_retried(transport: str) -> None:
    async with served(Script().queue(incomplete("max_output_tokens"), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert [entry.outcome.kind for entry in h.trace.entries if entry.outcome] == [
            OutcomeKind.INCOMPLETE,
            OutcomeKind.COMPLETED,
        ]
        assert h.trace.entries[0].error_type == ResponseIncomplete.__name__
        assert h.trace.entries[0].outcome is not None and h.trace.entries[0].outcome.reason == "max_output_tokens"
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_flat_error_event_is_a_stream_error_and_is_retried(transport: str) -> None:
    async with served(Script().queue(error_event("Something broke."), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        first = h.trace.entries[0].outcome
        assert first is not None and first.kind is OutcomeKind.ERRORED
        assert len(h.exchanges) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_mid_stream_drop_is_retried_with_done_items_kept_and_deltas_gone(transport: str) -> None:
    # created, in_progress, the first message complete (7 events), the second added + its first delta: cut
    first_try = reply(text("Part one.", chunks=2), text("Part two, never finished.", chunks=4)).drop_after(12)
    seen: list[str] = []
    async with served(Script().queue(first_try, reply("Part two.")), transport=transport) as h:
        result = await h.conversation().run_turn("Tell me.", on_delta=lambda delta: seen.append(delta.delta))
        assert result.text == "Part two."
        first, retry = h.exchanges
        assert first.outcome is not None and first.outcome.kind is OutcomeKind.DROPPED
        assert h.trace.entries[0].error_type == StreamDropped.__name__
        done_before_drop = [sent.event["item"] for sent in first.events if sent.event["type"].endswith("item.done")]
        assert len(done_before_drop) == 1
        # the retry is a full request: the user message and the one completed item, nothing of the cut one
        assert not retry.incremental
        assert wire_inputs(h.exchanges)[1] == [*wire_inputs(h.exchanges)[0], *done_before_drop]
        assert "never finished" not in str(retry.wire_request)
        assert "Part tw" in seen  # the delta did reach the display, and nothing else
        assert item_types(h.client.trace.entries[1].logical["input"]) == ["message", "message"]
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_stall_past_the_idle_timeout_is_retried(transport: str) -> None:
    async with served(Script().queue(reply("Never.").stall_after(3), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert h.trace.entries[0].error_type == IdleTimeout.__name__
        stalled = h.trace.entries[0].outcome
        assert stalled is not None and stalled.kind is OutcomeKind.STALLED and stalled.events_sent == 3
        assert len(h.exchanges) == 2
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_5xx_before_the_stream_is_retried_with_backoff(status: int, transport: str) -> None:
    async with served(Script().queue(reject(status), reject(status), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert [exchange.response_status for exchange in h.exchanges][:2] == [status, status]
        assert h.sleep.delays == [backoff(1), backoff(2)]
        refused = h.trace.entries[0].outcome
        assert refused is not None and refused.kind is OutcomeKind.REFUSED and refused.status == status


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("headers", "delay"), [({"retry-after": "7"}, 7.0), ({"retry-after-ms": "350"}, 0.35)], ids=["seconds", "ms"]
)
async def test_a_429_is_retried_after_the_servers_retry_after(
    headers: dict[str, str], delay: float, transport: str
) -> None:
    script = Script().queue(reject(429, "rate_limit_exceeded", "Slow down.", headers=headers), reply("Done."))
    async with served(script, transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert len(h.exchanges) == 2
        assert h.sleep.delays == [delay]
        assert h.trace.entries[0].error_type == RateLimited.__name__


NOT_RETRIED_STATUSES: list[tuple[int, str | None, str | None, type[ModelClientError]]] = [
    (400, None, None, InvalidRequest),
    (400, "context_length_exceeded", None, ContextWindowExceeded),
    (401, None, None, Unauthorized),
    (429, None, "usage_limit_reached", UsageLimitReached),
    (429, "usage_not_included", None, UsageNotIncluded),
    (429, "insufficient_quota", None, QuotaExceeded),
    (503, "server_is_overloaded", None, ServerOverloaded),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("status", "code", "type_", "error"), NOT_RETRIED_STATUSES)
async def test_a_non_retryable_status_or_error_frame_raises_its_typed_error_at_once(
    status: int, code: str | None, type_: str | None, error: type[ModelClientError], transport: str
) -> None:
    script = Script().queue(reject(status, code, type=type_), reply("never sent"))
    async with served(script, transport=transport) as h:
        with pytest.raises(error) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.status == status and caught.value.outcome_kind is OutcomeKind.REFUSED
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []


async def test_websocket_connection_limit_reached_reconnects_and_retries() -> None:
    script = Script().queue(reject(400, WEBSOCKET_CONNECTION_LIMIT, "Too many connections."), reply("Done."))
    async with served(script) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert h.trace.entries[0].error_type == ConnectionLimitReached.__name__
        assert [exchange.connection_id for exchange in h.exchanges] == [0, 1]
        assert not h.exchanges[1].incremental
        assert h.sleep.delays == [backoff(1)]
        assert h.trace.fallbacks == []


async def test_an_error_frame_without_status_is_ignored_as_codex_does() -> None:
    builder = ResponseEvents({"model": "gpt-test"})
    builder.start()
    builder.message("Done.")
    builder.completed()
    no_status = {"type": "error", "error": {"type": "server_error", "code": None, "message": "no status"}}
    events = [*builder.events[:2], no_status, *builder.events[2:]]
    verbatim = Reply(events=[TimedEvent(event=event) for event in events])
    async with served(Script().queue(verbatim)) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert len(h.exchanges) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_user_cancellation_ends_the_turn_and_is_never_retried(transport: str) -> None:
    streaming = reply(text("Streaming...", chunks=4)).stall_after(5)  # stalls after the first delta
    async with served(Script().queue(streaming), transport=transport, idle=60.0) as h:
        first_delta = asyncio.Event()
        turn = asyncio.create_task(h.conversation().run_turn("Hello.", on_delta=lambda delta: first_delta.set()))
        delta_seen = asyncio.create_task(first_delta.wait())
        await asyncio.wait([turn, delta_seen], return_when=asyncio.FIRST_COMPLETED)
        assert first_delta.is_set() and not turn.done()
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []
        cancelled = h.trace.entries[0].outcome
        assert cancelled is not None and cancelled.kind is OutcomeKind.DISCONNECTED
