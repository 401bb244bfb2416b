"""HTTP fallback: at once on 426, else after budget + 1 attempts; later turns stay on HTTP. Warmup: best effort."""

from __future__ import annotations

import pytest
from client_support import BUDGET, backoff, served

from rrkit.client import HandshakeRefused, RetryableStreamError, UpgradeRequired
from rrkit.protocol import OutcomeKind
from rrkit.script import Match, Script, failed, refuse_upgrade, reject, reply

WS_ONLY = Match(transport="ws")


async def test_426_falls_back_to_http_at_once_and_later_turns_stay_on_http() -> None:
    script = Script().add_handshake(refuse_upgrade(426)).queue(reply("One."), reply("Two."))
    async with served(script) as h:
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


async def test_an_exhausted_websocket_budget_falls_back_after_budget_plus_one_attempts_and_stays() -> None:
    script = Script().add(reply("Done over HTTP."), when=Match(transport="http"), repeat=True)
    script.add(failed("server_error"), when=WS_ONLY, repeat=True)
    async with served(script) as h:
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
        # the replay is the same logical request, over HTTP, in full
        assert h.trace.entries[BUDGET + 1].logical == h.trace.entries[0].logical


async def test_refused_upgrades_other_than_426_are_retried_then_fall_back() -> None:
    script = Script().add_handshake(refuse_upgrade(503, repeat=True)).queue(reply("One."), reply("Two."))
    async with served(script) as h:
        conversation = h.conversation()
        assert (await conversation.run_turn("First?")).text == "One."
        assert (await conversation.run_turn("Second?")).text == "Two."
        assert [connection.status for connection in h.server.connections] == [503] * (BUDGET + 1)
        assert [entry.error_type for entry in h.trace.entries][: BUDGET + 1] == [HandshakeRefused.__name__] * (
            BUDGET + 1
        )
        assert [exchange.transport for exchange in h.exchanges] == ["http", "http"]
        assert h.client.websockets_disabled


async def test_after_fallback_the_http_budget_is_fresh_and_its_exhaustion_fails_the_turn() -> None:
    script = Script(default=reject(500))
    async with served(script) as h:
        with pytest.raises(RetryableStreamError) as caught:
            await h.conversation().run_turn("Hello.")
        assert caught.value.status == 500
        assert [exchange.transport for exchange in h.exchanges] == ["ws"] * (BUDGET + 1) + ["http"] * (BUDGET + 1)


async def test_a_failed_warmup_never_fails_the_users_turn() -> None:
    script = Script().add(reject(500), when=Match(generate=False)).queue(reply("Hello."))
    async with served(script) as h:
        conversation = h.conversation()
        assert await conversation.warmup() is None
        result = await conversation.run_turn("Hi.")
        assert result.text == "Hello."
        warmup, real = h.exchanges
        assert warmup.warmup and warmup.outcome is not None and warmup.outcome.kind is OutcomeKind.REFUSED
        assert not real.incremental  # no baseline from a failed warmup
        assert h.sleep.delays == []


async def test_a_warmup_refused_with_426_falls_back_and_the_turn_runs_over_http() -> None:
    script = Script().add_handshake(refuse_upgrade(426)).queue(reply("Hello."))
    async with served(script) as h:
        conversation = h.conversation()
        assert await conversation.warmup() is None
        assert (await conversation.run_turn("Hi.")).text == "Hello."
        assert [exchange.transport for exchange in h.exchanges] == ["http"]
        assert h.client.websockets_disabled


async def test_a_warmup_that_times_out_is_abandoned_and_the_turn_proceeds() -> None:
    script = Script().add(reply().stall_after(0), when=Match(generate=False)).queue(reply("Hello."))
    async with served(script) as h:
        conversation = h.conversation()
        assert await conversation.warmup(timeout=0.2) is None
        assert (await conversation.run_turn("Hi.")).text == "Hello."
        assert h.trace.entries[0].warmup and h.trace.entries[0].error == "warmup timed out"
        assert not h.exchanges[1].incremental
