"""Steering from the reference client (issue 48): `turn.steer(...)` sends a `response.steer` frame for the response
under way; accepted, the response stops `steered` at an item boundary and the client reads on into the successor
the server creates, whose creation commits the input to the history; the next request continues from the
successor incrementally, and the server rebuilds exactly the history the client holds."""

from __future__ import annotations

import asyncio

import pytest

from rrkit.client import Conversation, Delta, SteerNotPossible, TurnResult
from rrkit.protocol.steer import STEER
from rrkit.script import Script, SteerStep, reply, text

from ..errortrap import Serve
from .client_support import item_types, served, wire_inputs

LONG_REPLY = reply(*(text(f"Part {n}. ", chunks=2) for n in range(20))).delayed(each=0.05)
"""Twenty output items, 3 s in all: a steer sent on the first delta lands many item boundaries before the end."""


STUB = {"type": "function_call_output", "call_id": "call_7", "name": "shell"}
STEPS = {
    "accepted": SteerStep(),
    "failed": SteerStep(answer="failed", code="invalid_input"),
    "pending": SteerStep(answer="pending", required_input=[STUB]),
}


def steering_script(answer: str = "accepted") -> Script:
    step = STEPS[answer]
    return Script(steer=[step]).queue(LONG_REPLY, reply(text("Brief answer.")), reply(text("You're welcome.")))


async def steered_turn(conversation: Conversation, steering: str) -> TurnResult:
    """One turn that asks for a long answer and steers it with `steering` on its first delta."""
    sent: list[asyncio.Task[None]] = []

    def on_delta(delta: Delta) -> None:
        if not sent and conversation.turn is not None:
            sent.append(asyncio.ensure_future(conversation.turn.steer(steering)))

    result = await conversation.run_turn("Write at length.", on_delta=on_delta)
    await sent[0]
    return result


async def test_an_accepted_steer_ends_in_the_successor_with_the_input_committed_and_the_next_request_incremental(
    serve: Serve,
) -> None:
    async with served(serve, steering_script()) as h:
        conversation = h.conversation()
        result = await steered_turn(conversation, "Stop, and answer briefly.")
        assert result.text == "Brief answer."
        kinds = item_types(conversation.history)
        assert kinds[0] == "message" and kinds[-2:] == ["message", "message"] and 2 < len(kinds) < 22
        assert conversation.history[-2]["role"] == "user"
        assert conversation.history[-2]["content"][0]["text"] == "Stop, and answer briefly."
        steered, steer, successor = h.exchanges[-3:]
        assert steered.outcome is not None and steered.outcome.reason == "steered"
        assert steer.raw_body is not None and STEER in steer.raw_body
        assert successor.successor_of == steered.response_id
        await conversation.run_turn("Thanks.")
        assert h.exchanges[-1].wire_request is not None
        assert h.exchanges[-1].wire_request["previous_response_id"] == successor.response_id
        assert wire_inputs(h.exchanges)[-1] == [conversation.history[-2]]  # only the new input: incremental
    # leaving `served` held the client's trace to the server's capture: every request's logical view agrees


async def test_a_failed_steer_is_kept_with_its_input_and_stops_nothing(serve: Serve) -> None:
    async with served(serve, steering_script("failed")) as h:
        conversation = h.conversation()
        result = await steered_turn(conversation, "Stop.")
        assert result.text == "Part 19. " and len(result.items) == 20
        assert conversation.turn is not None
        [failed] = conversation.turn.steer_failures
        assert failed["error"]["code"] == "invalid_input" and failed["steer"]["input"] == "Stop."


async def test_a_pending_steer_is_kept_and_the_response_ends_as_it_completes(serve: Serve) -> None:
    """Pending (accepted, then waiting for tool results it names): no successor follows, the sampling ends with
    the response's own completion, and the input stays queued on the server for the next request."""
    async with served(serve, steering_script("pending")) as h:
        conversation = h.conversation()
        result = await steered_turn(conversation, "Stop.")
        assert result.text == "Part 19. " and len(result.items) == 20
        assert conversation.turn is not None
        [pending] = conversation.turn.steer_pending
        assert pending["required_input"] == [STUB]
        assert all(exchange.successor_of is None for exchange in h.exchanges)


async def test_steering_without_a_response_streaming_over_a_socket_is_refused_by_the_client(serve: Serve) -> None:
    async with served(serve, Script(default=reply(text("hi"))), transport="http") as h:
        conversation = h.conversation()
        await conversation.run_turn("hi")
        assert conversation.turn is not None
        with pytest.raises(SteerNotPossible, match="steering needs a response under way over a WebSocket"):
            await conversation.turn.steer("more")
