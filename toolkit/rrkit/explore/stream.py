"""A stream as explored (its events, and how they are delivered) and the oracle: what a correct client makes of it
(its answer, no answer, or either), read off the protocol's order rules; sans-I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ..protocol import event_names as ev
from ..protocol.order import answer_breaks, answer_output, check_order
from ..protocol.vocabulary import LineEnding

Event = dict[str, Any]


@dataclass(frozen=True)
class Delivery:
    """How the events go out: in pieces of `chunk_bytes` (HTTP), lines ending `line_ending` (HTTP), a pause of
    `pauses[i]` seconds before event i, and at most one break: cut after `cut_after` events (inside the next one
    with `cut_inside`, after its first `cut_bytes` bytes), silent after `stall_after`, event `not_json_at` sent as
    data that is not JSON; or, instead of a stream, an error answer with HTTP status `status`."""

    chunk_bytes: int | None = None
    line_ending: LineEnding = "lf"
    pauses: tuple[tuple[int, float], ...] = ()
    cut_after: int | None = None
    cut_inside: bool = False
    cut_bytes: int | None = None  # with cut_inside: the bytes of the event that go out (None: half)
    stall_after: int | None = None
    not_json_at: int | None = None
    status: int | None = None

    @property
    def ended_at(self) -> int | None:
        """The index of the first event the client does not get, the stream cut or stalled before it (None: it
        gets every one)."""
        marks = [at for at in (self.cut_after, self.stall_after) if at is not None]
        return min(marks) if marks else None

    @property
    def breaks(self) -> bool:
        """A break of the delivery given already (one per stream)."""
        return self.ended_at is not None or self.not_json_at is not None or self.status is not None


@dataclass(frozen=True)
class Stream:
    """The events a reply sends (JSON objects, in order) and their delivery."""

    events: tuple[Event, ...]
    delivery: Delivery = field(default_factory=Delivery)


class Verdict(StrEnum):
    """What a correct client makes of a stream."""

    ANSWER = "answer"  # a whole, valid answer: the client takes it (its text is the terminal response's)
    NO_ANSWER = "no answer"  # cut, broken, refused or failed: the client reports an error, never an answer
    EITHER = "either"  # a stream a client may take or refuse (its shape is off, its answer intact): not judged


@dataclass(frozen=True)
class Expected:
    verdict: Verdict
    why: str  # the reason, a rule's name or the delivery's break: what a finding is grouped by
    text: str | None = None  # an answer's text (the terminal response's output text)


def first_terminal(events: Sequence[Mapping[str, Any]]) -> int | None:
    return next((index for index, event in enumerate(events) if event.get("type") in ev.TERMINAL_TYPES), None)


def output_text(output: Sequence[Any]) -> str:
    """The text of an output's messages, in order: what a client shows as its answer."""
    texts = []
    for item in output:
        if isinstance(item, Mapping) and item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, Mapping) and part.get("type") == "output_text":
                    texts.append(str(part.get("text", "")))
    return "".join(texts)


def expected(stream: Stream) -> Expected:
    """The oracle: what a correct client makes of `stream`. It reads up to the first terminal event it gets (where
    a client stops); without one it has no answer; with one, a rule of `ANSWER_RULES` broken before it leaves no
    answer it can trust, any other rule broken leaves it free (either), a completed response is the answer (its
    output, or, where it states none, its done items: `answer_output`)."""
    delivery = stream.delivery
    if delivery.status is not None:
        return Expected(Verdict.NO_ANSWER, f"HTTP {delivery.status}")
    garbled = delivery.not_json_at
    if garbled is not None and garbled <= (first_terminal(stream.events) or len(stream.events)):
        return _without_garbled(stream, garbled)
    got = stream.events if delivery.ended_at is None else stream.events[: delivery.ended_at]
    end = first_terminal(got)
    if end is None:
        return Expected(Verdict.NO_ANSWER, _no_end(stream))
    prefix = list(got[: end + 1])
    untrusted = answer_breaks(prefix)
    if untrusted is not None:
        return Expected(Verdict.NO_ANSWER, untrusted.rule.name.lower())
    broken = [violation.rule for violation in check_order(prefix)]
    terminal = prefix[-1]
    if broken:
        return Expected(Verdict.EITHER, broken[0].name.lower())
    if terminal["type"] != ev.COMPLETED:
        verdict = Verdict.NO_ANSWER if terminal["type"] == ev.FAILED else Verdict.EITHER
        return Expected(verdict, terminal["type"])
    return Expected(Verdict.ANSWER, "valid", output_text(answer_output(prefix)))


def _without_garbled(stream: Stream, garbled: int) -> Expected:
    """An event sent as data that is not JSON, before the client has its terminal event: a client may give up on
    the stream, or skip the event (as Codex does) and read on; what it reads on to is no answer if that is, else
    it is free (either)."""
    events = stream.events[:garbled] + stream.events[garbled + 1 :]
    rest = expected(Stream(events, replace(stream.delivery, not_json_at=None)))
    return Expected(Verdict.EITHER, "not_json") if rest.verdict is Verdict.ANSWER else rest


def _no_end(stream: Stream) -> str:
    delivery = stream.delivery
    if delivery.ended_at is None:
        return "terminal_required"
    return "stall" if delivery.ended_at == delivery.stall_after else "cut"
