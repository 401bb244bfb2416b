"""Termination checks and retries (docs/protocol.md: Failures and retries): each failure ends as Codex 0.169 ends it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rrkit.client import (
    ConnectionLimitReached,
    ContextWindowExceeded,
    IdleTimeout,
    InvalidRequest,
    ModelClientError,
    PolicyRefusal,
    PreviousResponseNotFound,
    QuotaExceeded,
    RateLimited,
    ResponseIncomplete,
    RetryableStreamError,
    RetryLimitReached,
    ServerOverloaded,
    StreamDropped,
    Unauthorized,
    UsageLimitReached,
    UsageNotIncluded,
)
from rrkit.protocol import FAILURE_CODES, OutcomeKind
from rrkit.protocol.errors import PREVIOUS_RESPONSE_NOT_FOUND, RECONNECT_CODES, WEBSOCKET_CONNECTION_LIMIT
from rrkit.script import Match, Script, error_event, failed, incomplete, load_script, reject, reply, text

from ..errortrap import Serve
from .client_support import (
    BUDGET,
    REQUEST_BUDGET,
    STALL_IDLE,
    TRANSPORTS,
    backoff,
    item_types,
    served,
    text_reply_with,
    wire_inputs,
)

NOT_RETRIED: dict[str, type[ModelClientError]] = {
    "context_length_exceeded": ContextWindowExceeded,
    "insufficient_quota": QuotaExceeded,
    "usage_not_included": UsageNotIncluded,
    "invalid_prompt": InvalidRequest,
    "cyber_policy": PolicyRefusal,
    "bio_policy": PolicyRefusal,
    "misalignment_policy_violation": PolicyRefusal,
    "server_is_overloaded": ServerOverloaded,
}
RETRIED_WITH_BACKOFF = ("slow_down", "server_error", "image_content_policy_violation", "some_policy", None)
"""Retried as Codex 0.169.0 retries them: its own, an image's (a policy's by name), a made-up one, none."""


def test_every_failure_code_the_catalogue_does_not_retry_fails_the_turn_with_its_own_error() -> None:
    assert {code for code, entry in FAILURE_CODES.items() if not entry.retryable} == set(NOT_RETRIED)


# -- response.failed ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("code", sorted(NOT_RETRIED))
async def test_non_retried_failure_codes_fail_the_turn_after_one_attempt(
    serve: Serve, code: str, transport: str
) -> None:
    async with served(serve, Script().queue(failed(code), reply("never sent")), transport=transport) as h:
        with pytest.raises(NOT_RETRIED[code]) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.code == code
        assert caught.value.outcome_kind is OutcomeKind.FAILED
        if code == "server_is_overloaded":
            assert str(caught.value).startswith("Selected model is at capacity")
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []
        assert h.trace.fallbacks == []


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("message", "delay"),
    [("Please try again in 2s.", 2.0), ("Please try again in 28ms.", 0.028), ("Try again in 1.5 seconds.", 1.5)],
    ids=["s", "ms", "seconds"],
)
async def test_rate_limit_exceeded_waits_the_delay_named_in_its_message(
    serve: Serve, message: str, delay: float, transport: str
) -> None:
    script = Script().queue(failed("rate_limit_exceeded", message), reply("Done."))
    async with served(serve, script, transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert len(h.exchanges) == 2
        assert h.sleep.delays == [pytest.approx(delay)]
        assert h.trace.entries[0].error_type == RateLimited.__name__


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_rate_limit_exceeded_naming_a_delay_in_another_unit_gets_backoff(serve: Serve, transport: str) -> None:
    script = Script().queue(failed("rate_limit_exceeded", "Please try again in 2 minutes."), reply("Done."))
    async with served(serve, script, transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_named_delay_is_read_only_for_rate_limit_exceeded(serve: Serve, transport: str) -> None:
    script = Script().queue(failed("server_error", "Please try again in 2s."), reply("Done."))
    async with served(serve, script, transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("code", RETRIED_WITH_BACKOFF, ids=lambda code: code or "no-code")
async def test_slow_down_and_other_failure_codes_are_retried_with_backoff(
    serve: Serve, code: str | None, transport: str
) -> None:
    async with served(serve, Script().queue(failed(code), failed(code), reply("Done.")), transport=transport) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert len(h.exchanges) == 3
        assert h.sleep.delays == [backoff(1), backoff(2)] == [0.25, 0.5]
        assert [entry.error_type for entry in h.trace.entries] == ["RetryableStreamError"] * 2 + [None]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_generic_stream_error_raises_once_the_retry_budget_is_spent_over_http(
    serve: Serve, transport: str
) -> None:
    script = Script(default=failed("server_error"))
    async with served(serve, script, transport=transport) as h:
        with pytest.raises(RetryableStreamError):
            await h.conversation().run_turn("Hello.")
        attempts = BUDGET + 1
        # over a socket the budget is spent twice: once on WebSocket, then again after the fallback to HTTP
        assert len(h.exchanges) == (2 * attempts if transport == "ws" else attempts)
        assert [exchange.transport for exchange in h.exchanges][-attempts:] == ["http"] * attempts
        assert h.sleep.delays == [backoff(n) for n in range(1, attempts)] * (2 if transport == "ws" else 1)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_response_incomplete_is_not_retried(serve: Serve, transport: str) -> None:
    async with served(
        serve, Script().queue(incomplete("max_output_tokens"), reply("never sent")), transport=transport
    ) as h:
        with pytest.raises(ResponseIncomplete) as caught:
            await h.conversation().run_turn("Hello.")
        assert str(caught.value).startswith("Incomplete response returned, reason: max_output_tokens")
        assert caught.value.outcome().kind is OutcomeKind.INCOMPLETE
        assert caught.value.reason == "max_output_tokens"
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
async def test_a_fail_step_without_a_message_sends_the_catalogues_message(
    serve: Serve, suffix: str, tmp_path: Path
) -> None:
    steps = [{"fail": {"code": "rate_limit_exceeded"}}, {"output": [{"text": "Done."}]}]
    path = tmp_path / f"script{suffix}"
    path.write_text(json.dumps({"responses": steps}))  # JSON is YAML too
    async with served(serve, load_script(path), transport="http") as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        failure = h.exchanges[0].events[-1].event
        assert failure["response"]["error"]["message"] == FAILURE_CODES["rate_limit_exceeded"].message
        assert h.sleep.delays == [1.5]  # the delay the catalogue's message names


# -- the flat error event and error frames without status --------------------------------------------------
@pytest.mark.parametrize("code", ["context_length_exceeded", "server_error", None])
async def test_a_flat_error_event_is_ignored_whatever_its_code(serve: Serve, code: str | None) -> None:
    flat = {"type": "error", "message": "Something broke.", "code": code, "param": None}
    async with served(serve, Script().queue(text_reply_with(flat)), transport="http") as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []


@pytest.mark.parametrize("code", ["context_length_exceeded", "server_is_overloaded", None])
async def test_an_error_frame_without_status_is_ignored_whatever_its_code(serve: Serve, code: str | None) -> None:
    no_status = {"type": "error", "error": {"type": "server_error", "code": code, "message": "no status"}}
    async with served(serve, Script().queue(text_reply_with(no_status))) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_flat_error_event_then_the_end_of_the_stream_is_an_ordinary_retryable_drop(
    serve: Serve, transport: str
) -> None:
    script = Script().queue(error_event("Something broke.", "context_length_exceeded"), reply("Done."))
    async with served(serve, script, transport=transport, idle=STALL_IDLE) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        # over HTTP the stream then ends; over a socket that stays open, the idle timeout ends it
        ended = StreamDropped if transport == "http" else IdleTimeout
        assert h.trace.entries[0].error_type == ended.__name__
        first = h.trace.entries[0].outcome  # the response did end with the error event, as the server saw
        assert first is not None and first.kind is OutcomeKind.ERRORED and first.code == "context_length_exceeded"
        assert h.exchanges[0].outcome is not None and h.exchanges[0].outcome.kind is OutcomeKind.ERRORED
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("code", sorted(RECONNECT_CODES))
async def test_a_statusless_frame_asking_for_a_new_socket_gets_one_and_the_full_request(
    serve: Serve, code: str
) -> None:
    frame = {"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": "again"}}
    second = Match(incremental=True)
    script = Script().queue(reply("One.")).add(text_reply_with(frame), when=second).add(reply("Two."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        await conversation.run_turn("First?")
        assert (await conversation.run_turn("Second?")).text == "Two."
        assert [exchange.connection_id for exchange in h.exchanges] == [0, 0, 1]
        assert [exchange.incremental for exchange in h.exchanges] == [False, True, False]
        assert h.sleep.delays == [backoff(1)]
        assert h.trace.fallbacks == []


# -- errors before the stream ------------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_429_without_retry_after_is_not_retried(serve: Serve, transport: str) -> None:
    script = Script().queue(reject(429, "rate_limit_exceeded", "Please try again in 1s."), reply("never sent"))
    async with served(serve, script, transport=transport) as h:
        with pytest.raises(RetryLimitReached) as caught:
            await h.conversation().run_turn("Hello.")
        assert str(caught.value).startswith("exceeded retry limit, last status: 429")
        assert len(h.exchanges) == 1
        assert h.sleep.delays == []
        assert h.trace.fallbacks == []


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("status", [429, 503])
async def test_429_or_503_with_retry_after_is_retried_after_exactly_its_seconds(
    serve: Serve, status: int, transport: str
) -> None:
    script = Script().queue(reject(status, None, "Slow down.", retry_after=7), reply("Done."))
    async with served(serve, script, transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert len(h.exchanges) == 2
        assert h.sleep.delays == [7.0]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_retry_after_ms_is_ignored(serve: Serve, transport: str) -> None:
    only_ms = {"retry-after-ms": "350"}
    script = Script().queue(reject(503, headers=only_ms), reply("Done."), reject(429, headers=only_ms))
    async with served(serve, script, transport=transport) as h:
        conversation = h.conversation()
        assert (await conversation.run_turn("Hello.")).text == "Done."
        assert h.sleep.delays == [backoff(1)]  # a 503 with it gets ordinary backoff
        with pytest.raises(RetryLimitReached):  # a 429 with it is a plain 429
            await conversation.run_turn("Again.")
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("status", [401, 403, 404])
async def test_401_403_and_404_are_retried_with_backoff(serve: Serve, status: int, transport: str) -> None:
    async with served(serve, Script().queue(reject(status), reject(status), reply("Done.")), transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert [exchange.response_status for exchange in h.exchanges][:2] == [status, status]
        assert h.sleep.delays == [backoff(1), backoff(2)]
        if status == 401:
            assert h.trace.entries[0].error_type == Unauthorized.__name__


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_http_5xx_is_retried_first_at_the_request_level_then_by_the_stream_budget(
    serve: Serve, status: int
) -> None:
    async with served(serve, Script(default=reject(status)), transport="http") as h:
        with pytest.raises(RetryableStreamError) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.status == status
        per_stream = REQUEST_BUDGET + 1
        assert len(h.exchanges) == (BUDGET + 1) * per_stream
        levels = [entry.retry_level for entry in h.trace.entries]
        assert levels == (["request"] * REQUEST_BUDGET + ["stream"]) * BUDGET + ["request"] * REQUEST_BUDGET + [None]
        # the request level restarts its backoff inside every stream attempt
        assert h.sleep.delays == [backoff(1), backoff(1), backoff(1), backoff(2), backoff(1)]


@pytest.mark.parametrize("status", [500, 503])
async def test_a_5xx_error_frame_is_retried_by_the_stream_budget_only(serve: Serve, status: int) -> None:
    async with served(serve, Script().queue(reject(status), reject(status), reply("Done."))) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert [entry.retry_level for entry in h.trace.entries] == ["stream", "stream", None]
        assert h.sleep.delays == [backoff(1), backoff(2)]
        refused = h.trace.entries[0].outcome
        assert refused is not None and refused.kind is OutcomeKind.REFUSED and refused.status == status


NOT_RETRIED_STATUSES: list[tuple[int, str | None, str | None, type[ModelClientError]]] = [
    (400, None, None, InvalidRequest),
    (400, "context_length_exceeded", None, ContextWindowExceeded),
    (429, None, "usage_limit_reached", UsageLimitReached),
    (429, "usage_not_included", None, UsageNotIncluded),
    (429, "insufficient_quota", None, QuotaExceeded),
    (503, "server_is_overloaded", None, ServerOverloaded),  # over HTTP after the request-level retries
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("status", "code", "type_", "error"), NOT_RETRIED_STATUSES)
async def test_400_server_is_overloaded_and_usage_errors_before_the_stream_are_not_retried(
    serve: Serve, status: int, code: str | None, type_: str | None, error: type[ModelClientError], transport: str
) -> None:
    script = Script(default=reject(status, code, type=type_, retry_after=1))
    async with served(serve, script, transport=transport) as h:
        with pytest.raises(error) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.status == status and caught.value.outcome_kind is OutcomeKind.REFUSED
        request_retries = REQUEST_BUDGET if status >= 500 and transport == "http" else 0
        assert len(h.exchanges) == 1 + request_retries
        assert h.sleep.delays == [1.0] * request_retries  # a request-level retry waits Retry-After when given


async def test_http_503_server_is_overloaded_spends_the_request_level_retries_then_fails_the_turn(serve: Serve) -> None:
    async with served(serve, Script(default=reject(503, "server_is_overloaded")), transport="http") as h:
        with pytest.raises(ServerOverloaded):
            await h.conversation().run_turn("Hello.")
        assert len(h.exchanges) == REQUEST_BUDGET + 1
        assert h.sleep.delays == [backoff(n) for n in range(1, REQUEST_BUDGET + 1)]
        assert [entry.retry_level for entry in h.trace.entries] == ["request"] * REQUEST_BUDGET + [None]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_slow_down_as_http_503_is_retried_with_backoff(serve: Serve, transport: str) -> None:
    async with served(serve, Script().queue(reject(503, "slow_down"), reply("Done.")), transport=transport) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert h.sleep.delays == [backoff(1)]


async def test_websocket_connection_limit_reached_reconnects_and_retries(serve: Serve) -> None:
    script = Script().queue(reject(400, WEBSOCKET_CONNECTION_LIMIT, "Too many connections."), reply("Done."))
    async with served(serve, script) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert h.trace.entries[0].error_type == ConnectionLimitReached.__name__
        assert [exchange.connection_id for exchange in h.exchanges] == [0, 1]
        assert not h.exchanges[1].incremental
        assert h.sleep.delays == [backoff(1)]
        assert h.trace.fallbacks == []


async def test_previous_response_not_found_opens_a_new_socket_and_resends_in_full_after_backoff(serve: Serve) -> None:
    unknown = reject(400, PREVIOUS_RESPONSE_NOT_FOUND, "Previous response not found.")
    script = Script().queue(reply("One.")).add(unknown, when=Match(incremental=True)).add(reply("Two."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        await conversation.run_turn("First?")
        assert (await conversation.run_turn("Second?")).text == "Two."
        assert h.trace.entries[1].error_type == PreviousResponseNotFound.__name__
        assert [exchange.connection_id for exchange in h.exchanges] == [0, 0, 1]
        assert [exchange.incremental for exchange in h.exchanges] == [False, True, False]
        assert h.sleep.delays == [backoff(1)]


# -- drops, stalls, cancellation ---------------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_mid_stream_drop_is_retried_with_done_items_kept_and_deltas_gone(serve: Serve, transport: str) -> None:
    # created, in_progress, the first message complete (7 events), the second added + its first delta: cut
    first_try = reply(text("Part one.", chunks=2), text("Part two, never finished.", chunks=4)).drop_after(12)
    seen: list[str] = []
    async with served(serve, Script().queue(first_try, reply("Part two.")), transport=transport) as h:
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
async def test_a_stall_past_the_idle_timeout_is_retried(serve: Serve, transport: str) -> None:
    script = Script().queue(reply("Never.").stall_after(3), reply("Done."))
    async with served(serve, script, transport=transport, idle=STALL_IDLE) as h:
        result = await h.conversation().run_turn("Hello.")
        assert result.text == "Done."
        assert h.trace.entries[0].error_type == IdleTimeout.__name__
        stalled = h.trace.entries[0].outcome
        assert stalled is not None and stalled.kind is OutcomeKind.STALLED and stalled.events_sent == 3
        assert len(h.exchanges) == 2
        assert h.sleep.delays == [backoff(1)]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_user_cancellation_ends_the_turn_and_is_never_retried(serve: Serve, transport: str) -> None:
    streaming = reply(text("Streaming...", chunks=4)).stall_after(5)  # stalls after the first delta
    async with served(serve, Script().queue(streaming), transport=transport, idle=60.0) as h:
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
