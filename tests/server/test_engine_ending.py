"""An outcome the server decides (a cut, a stall) is recorded before any grace can cancel it: when the client
leaves because the server cut or stalled its stream, and the answer is cancelled before the cut returns (a busy
server), the exchange still ends `dropped` or `stalled`, never `disconnected` (the client left)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from rrkit.protocol.outcome import OutcomeKind
from rrkit.protocol.plan import ResponsePlan, StreamFault, events_of
from rrkit.protocol.vocabulary import CloseKind
from rrkit.protocol.wire_events import planned
from rrkit.server.capture import Capture
from rrkit.server.stream import Gone, play, until_client_leaves

pytestmark = pytest.mark.hostile

SLOW = 30.0
"""Seconds the channel's cut or stall takes: far beyond the grace, so the answer is always cancelled first."""


class SlowToEnd:
    """A channel whose client leaves the moment the server cuts or stalls it, and whose cut or stall then takes
    long to return: the grace ends first."""

    def __init__(self, gone: Gone) -> None:
        self.gone = gone

    async def send(self, wires: Sequence[str | bytes]) -> None:
        return None

    async def pause(self, seconds: float) -> bool:
        return False

    async def _leave_and_wait(self) -> None:
        self.gone.set()
        await asyncio.sleep(SLOW)

    async def stall(self) -> None:
        await self._leave_and_wait()

    async def cut(self, close: CloseKind, code: int, reason: str) -> None:
        await self._leave_and_wait()

    async def finish(self) -> None:
        return None


@pytest.mark.parametrize(
    ("fault", "kind"),
    [(StreamFault(drop_after=2), OutcomeKind.DROPPED), (StreamFault(stall_after=2), OutcomeKind.STALLED)],
    ids=["cut", "stall"],
)
def test_a_cut_or_stall_the_client_leaves_during_keeps_the_server_s_outcome(
    fault: StreamFault, kind: OutcomeKind
) -> None:
    exchange = Capture().new_exchange("http", {}, None)
    events = [planned({"type": "response.output_text.delta", "delta": "x"}, "http") for _ in range(4)]

    async def answer() -> None:
        gone = Gone()
        plan = ResponsePlan(events_of(iter(events)), fault=fault)
        played = await until_client_leaves(play(plan, exchange, SlowToEnd(gone)), gone, grace=0.01)
        assert played is None  # cancelled by the grace, as a busy server's answer is
        exchange.outcome = exchange.left()  # what the transports do when the answer was cancelled

    asyncio.run(asyncio.wait_for(answer(), SLOW / 2))
    assert exchange.outcome is not None
    assert (exchange.outcome.kind, exchange.outcome.events_sent) == (kind, 2)


def test_an_answer_cancelled_with_no_ending_of_the_server_s_is_the_client_leaving() -> None:
    exchange = Capture().new_exchange("http", {}, None)
    assert exchange.left().kind is OutcomeKind.DISCONNECTED
