"""One generated case (a seed, a transport, the operators applied), the stream it comes to, and that stream as a
script the fake server plays: what each case runs and what a finding is written as."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..protocol import event_names as ev
from ..protocol.outcome import OutcomeKind
from ..protocol.vocabulary import Transport
from .operators import Op, apply
from .seeds import Seed
from .stream import Expected, Stream, Verdict

if TYPE_CHECKING:
    from ..script.models import Script


@dataclass(frozen=True)
class Case:
    seed: str
    transport: Transport
    ops: tuple[Op, ...]

    def stream(self, seeds: Mapping[str, Seed]) -> Stream:
        return apply(Stream(seeds[self.seed].events), self.ops, self.transport)

    def __str__(self) -> str:
        return f"{self.seed} [{self.transport}] " + " + ".join(str(op) for op in self.ops)


def served_outcome(stream: Stream) -> OutcomeKind:
    """How the server's side of the exchange ends: refused, cut, stalled, or as its last terminal event says."""
    delivery = stream.delivery
    if delivery.status is not None:
        return OutcomeKind.REFUSED
    if delivery.stall_after is not None:
        return OutcomeKind.STALLED
    if delivery.cut_after is not None:
        return OutcomeKind.DROPPED
    terminals = [event["type"] for event in stream.events if event.get("type") in ev.TERMINAL_TYPES]
    if not terminals:
        return OutcomeKind.DROPPED
    return {ev.COMPLETED: OutcomeKind.COMPLETED, ev.FAILED: OutcomeKind.FAILED}.get(
        terminals[-1], OutcomeKind.INCOMPLETE
    )


def script_of(stream: Stream, transport: Transport, expected: Expected, *, name: str = "explored") -> Script:
    """A script answering every request with `stream` (its events verbatim, their pauses as their times, its
    delivery as the reply's fault), expecting what the oracle says a correct client makes of it."""
    from ..script.models import Expect, Fault, Reject, Script, Step, TimedEvent

    delivery = stream.delivery
    expect = Expect(
        outcome=served_outcome(stream),
        transport=transport,
        answer=None if expected.verdict is Verdict.EITHER else expected.verdict is Verdict.ANSWER,
        text=expected.text,
    )
    if delivery.status is not None:
        step = Step(reject=Reject(status=delivery.status), repeat=True)
        return Script(name=name, responses=[step], expect=expect)
    pauses, at, timed = dict(delivery.pauses), 0.0, []
    for index, event in enumerate(stream.events):
        at += pauses.get(index, 0.0)
        timed.append(TimedEvent(at=round(at, 3), event=event))
    fault = Fault(
        chunk_bytes=delivery.chunk_bytes,
        line_ending=delivery.line_ending,
        drop_after=delivery.cut_after,
        cut_inside=delivery.cut_inside,
        cut_bytes=delivery.cut_bytes,
        stall_after=delivery.stall_after,
        not_json_at=delivery.not_json_at,
    )
    return Script(name=name, responses=[Step(events=timed, fault=fault, repeat=True)], expect=expect)
