"""Lifecycles: a socket that outlives turns keeps its baseline, while an HTTP turn-state token lives one turn."""

from __future__ import annotations

from rrkit.protocol import TURN_STATE_HEADER
from rrkit.script import Script, accept_upgrade, function_call, reject, reply

from ..errortrap import Serve
from .client_support import served


async def test_incremental_requests_continue_across_turns_on_one_connection(serve: Serve) -> None:
    script = Script().queue(reply("One."), reply("Two."), reply("Three."))
    async with served(serve, script) as h:
        conversation = h.conversation()
        for question in ("First?", "Second?", "Third?"):
            await conversation.run_turn(question)
        assert len(h.server.connections) == 1
        assert {exchange.connection_id for exchange in h.exchanges} == {h.server.connections[0].id}
        assert [exchange.incremental for exchange in h.exchanges] == [False, True, True]
        assert [entry.turn for entry in h.trace.entries] == [1, 2, 3]


async def test_a_turn_state_on_the_101_is_not_sent_back_on_later_upgrades(serve: Serve) -> None:
    script = (
        Script()
        .add_handshake(accept_upgrade(turn_state="ts-1", repeat=True))
        .queue(
            reply(function_call("get_weather", {"city": "Paris"})),
            reply("Sunny.").drop_after(2),  # the follow-up's socket drops: reconnect within turn 1
            reply("Sunny."),
            reply("Bye.").drop_after(2),  # turn 2 drops too
            reply("Bye."),
        )
    )
    async with served(serve, script) as h:
        conversation = h.conversation()
        await conversation.run_turn("Weather?", lambda call: "sunny")
        await conversation.run_turn("Thanks.")
        handshakes = [connection.handshake_headers.get(TURN_STATE_HEADER) for connection in h.server.connections]
        assert handshakes == [None, None, None]  # Codex 0.169 never sends a 101's token back
        assert [exchange.connection_id for exchange in h.exchanges] == [0, 0, 1, 1, 2]


async def test_an_http_turn_state_is_sent_back_on_the_following_requests_of_the_same_turn_retries_included(
    serve: Serve,
) -> None:
    script = Script().queue(
        reply(function_call("get_weather", {"city": "Paris"}), turn_state="ts-A"),
        reject(500),  # the follow-up is retried
        reply("Sunny.", turn_state="ts-B"),  # a token is captured once per turn: ts-B is ignored
        reply("Bye.", turn_state="ts-C"),
        reply("Again."),
    )
    async with served(serve, script, transport="http") as h:
        conversation = h.conversation()
        await conversation.run_turn("Weather?", lambda call: "sunny")
        await conversation.run_turn("Thanks.")
        await conversation.run_turn("Once more.")
        sent = [exchange.request_headers.get(TURN_STATE_HEADER) for exchange in h.exchanges]
        assert sent == [None, "ts-A", "ts-A", None, None]
