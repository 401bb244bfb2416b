"""HTTP fallback: at once on 426, else after budget + 1 attempts; later turns stay on HTTP. Warmup: best effort."""

from __future__ import annotations

import logging

import pytest

from rrkit.client import (
    ClientOptions,
    ConnectFailed,
    HandshakeRefused,
    RetryableStreamError,
    RetryPolicy,
    UpgradeRequired,
)
from rrkit.protocol import OutcomeKind
from rrkit.script import Match, Script, accept_upgrade, failed, refuse_upgrade, reject, reply

from ..errortrap import Serve
from .client_support import BUDGET, REQUEST_BUDGET, backoff, served

WS_ONLY = Match(transport="ws")


async def test_426_falls_back_to_http_at_once_without_spending_the_budget_and_later_turns_stay_on_http(
    serve: Serve,
) -> None:
    script = Script().add_handshake(refuse_upgrade(426)).queue(reply("One."), reply("Two."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        assert (await conversation.run_turn("First?")).text == "One."
        assert (await conversation.run_turn("Second?")).text == "Two."
        assert [connection.status for connection in h.server.connections] == [426]
        assert [exchange.transport for exchange in h.exchanges] == ["http", "http"]
        assert h.client.websockets_disabled
        assert len(h.trace.fallbacks) == 1 and h.trace.fallbacks[0].turn == 1
        refused = h.trace.entries[0]
        assert not refused.sent and refused.error_type == UpgradeRequired.__name__
        assert refused.outcome is not None and refused.outcome.status == 426
        assert h.sleep.delays == []  # no retry budget spent, no waiting


async def test_a_spent_websocket_budget_falls_back_to_http_at_once_with_a_warning_and_stays(
    serve: Serve,
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script().add(reply("Done over HTTP."), when=Match(transport="http"), repeat=True)
    script.add(failed("server_error"), when=WS_ONLY, repeat=True)
    async with served(serve, script) as h:
        caplog.set_level(logging.WARNING, logger="rrkit.client")
        conversation = h.conversation()
        assert (await conversation.run_turn("First?")).text == "Done over HTTP."
        assert (await conversation.run_turn("Second?")).text == "Done over HTTP."
        transports = [exchange.transport for exchange in h.exchanges]
        assert transports == ["ws"] * (BUDGET + 1) + ["http", "http"]
        # each WebSocket retry reconnected: the socket and its baseline are dropped after a stream error
        assert len(h.server.connections) == BUDGET + 1
        assert h.sleep.delays == [backoff(n) for n in range(1, BUDGET + 1)]  # no wait before the HTTP replay
        assert len(h.trace.fallbacks) == 1
        assert "budget" in h.trace.fallbacks[0].reason
        assert any("falling back to HTTP" in record.getMessage() for record in caplog.records)
        # the replay is the same logical request, over HTTP, in full
        assert h.trace.entries[BUDGET + 1].logical == h.trace.entries[0].logical


async def test_refused_upgrades_other_than_426_are_retried_then_fall_back(serve: Serve) -> None:
    script = Script().add_handshake(refuse_upgrade(503, repeat=True)).queue(reply("One."), reply("Two."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        assert (await conversation.run_turn("First?")).text == "One."
        assert (await conversation.run_turn("Second?")).text == "Two."
        assert [connection.status for connection in h.server.connections] == [503] * (BUDGET + 1)
        assert [entry.error_type for entry in h.trace.entries][: BUDGET + 1] == [HandshakeRefused.__name__] * (
            BUDGET + 1
        )
        assert [exchange.transport for exchange in h.exchanges] == ["http", "http"]
        assert h.client.websockets_disabled


@pytest.mark.parametrize(
    ("headers", "delay"), [({"retry-after": "3"}, 3.0), ({"retry-after-ms": "3000"}, backoff(1))], ids=["s", "ms"]
)
async def test_a_503_upgrade_refusal_is_retried_after_its_retry_after_seconds_ignoring_retry_after_ms(
    serve: Serve, headers: dict[str, str], delay: float
) -> None:
    script = Script().add_handshake(refuse_upgrade(503, headers=headers)).queue(reply("Done."))
    async with served(serve, script) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert [connection.status for connection in h.server.connections] == [503, 101]
        assert h.sleep.delays == [delay]


async def test_after_fallback_the_http_leg_has_a_full_budget_of_its_own_and_its_exhaustion_fails_the_turn(
    serve: Serve,
) -> None:
    script = Script(default=failed("server_error"))
    async with served(serve, script) as h:
        with pytest.raises(RetryableStreamError):
            await h.conversation().run_turn("Hello.")
        assert [exchange.transport for exchange in h.exchanges] == ["ws"] * (BUDGET + 1) + ["http"] * (BUDGET + 1)
        assert h.sleep.delays == [backoff(n) for n in range(1, BUDGET + 1)] * 2


async def test_after_fallback_an_http_5xx_gets_both_budgets_of_its_own(serve: Serve) -> None:
    async with served(serve, Script(default=reject(500))) as h:
        with pytest.raises(RetryableStreamError) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.status == 500
        http = (BUDGET + 1) * (REQUEST_BUDGET + 1)
        assert [exchange.transport for exchange in h.exchanges] == ["ws"] * (BUDGET + 1) + ["http"] * http


def test_the_budgets_default_to_5_stream_retries_and_4_request_retries_and_websockets_connect_within_15s() -> None:
    policy, options = RetryPolicy(), ClientOptions()
    assert (policy.max_retries, policy.request_max_retries) == (5, 4)
    assert options.websocket_connect_timeout == 15.0


async def test_the_default_stream_budget_gives_six_attempts_with_backoff_of_200ms_doubling(serve: Serve) -> None:
    async with served(serve, Script(default=failed("server_error")), transport="http", options=ClientOptions()) as h:
        with pytest.raises(RetryableStreamError):
            await h.conversation().run_turn("Hello.")
        assert len(h.exchanges) == 6
        assert h.sleep.delays == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2])


@pytest.mark.parametrize(("rng", "factor"), [(0.0, 0.9), (0.999999, 1.1)])
def test_backoff_is_200ms_times_2_to_the_n_minus_1_with_10_percent_jitter(rng: float, factor: float) -> None:
    assert [RetryPolicy().backoff(n, lambda: rng) for n in (1, 2, 3)] == pytest.approx(
        [0.2 * factor, 0.4 * factor, 0.8 * factor], rel=1e-5
    )


async def test_a_websocket_handshake_slower_than_the_connect_timeout_is_retried(serve: Serve) -> None:
    script = Script().add_handshake(accept_upgrade(delay=2.0)).queue(reply("Done."))
    options = ClientOptions(retry=RetryPolicy(max_retries=BUDGET, base_delay=0.25), websocket_connect_timeout=0.3)
    async with served(serve, script, options=options) as h:
        assert (await h.conversation().run_turn("Hello.")).text == "Done."
        assert h.trace.entries[0].error_type == ConnectFailed.__name__
        assert [entry.transport for entry in h.trace.entries] == ["ws", "ws"]
        assert h.sleep.delays == [backoff(1)]


async def test_a_failed_warmup_never_fails_the_users_turn(serve: Serve) -> None:
    script = Script().add(reject(500), when=Match(generate=False)).queue(reply("Hello."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        assert await conversation.warmup() is None
        result = await conversation.run_turn("Hi.")
        assert result.text == "Hello."
        warmup, real = h.exchanges
        assert warmup.warmup and warmup.outcome is not None and warmup.outcome.kind is OutcomeKind.REFUSED
        assert not real.incremental  # no baseline from a failed warmup
        assert h.sleep.delays == []


async def test_a_warmup_refused_with_426_falls_back_and_the_turn_runs_over_http(serve: Serve) -> None:
    script = Script().add_handshake(refuse_upgrade(426)).queue(reply("Hello."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        assert await conversation.warmup() is None
        assert (await conversation.run_turn("Hi.")).text == "Hello."
        assert [exchange.transport for exchange in h.exchanges] == ["http"]
        assert h.client.websockets_disabled


async def test_a_warmup_that_times_out_is_abandoned_and_the_turn_proceeds(serve: Serve) -> None:
    script = Script().add(reply().stall_after(0), when=Match(generate=False)).queue(reply("Hello."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        assert await conversation.warmup(timeout=0.2) is None
        assert (await conversation.run_turn("Hi.")).text == "Hello."
        assert h.trace.entries[0].warmup and h.trace.entries[0].error == "warmup timed out"
        assert not h.exchanges[1].incremental


async def test_the_prewarms_upgrade_is_bounded_by_the_connect_timeout_not_the_warmup_timeout(serve: Serve) -> None:
    # Codex 0.169.0 waits the WebSocket connect timeout on the prewarm's upgrade; the warmup's own (shorter)
    # timeout bounds only the answer to `generate: false`.
    script = Script().add_handshake(accept_upgrade(delay=1.0)).queue(reply("Hello."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        assert await conversation.warmup(timeout=0.5) is not None  # the answer takes milliseconds, the upgrade 1 s
        assert (await conversation.run_turn("Hi.")).text == "Hello."
        warmup, real = h.exchanges
        assert warmup.warmup and real.incremental
