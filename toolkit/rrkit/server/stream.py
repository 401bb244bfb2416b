"""The one streaming engine: plays a response plan over a channel (SSE body or WebSocket), faults included."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

from ..protocol.exceptions import RRKitError
from ..protocol.outcome import Outcome, OutcomeKind, outcome_of_terminal
from ..protocol.plan import PlannedEvent, ResponsePlan, StreamCut, StreamFault
from ..protocol.vocabulary import CloseKind
from ..protocol.wire_events import WireRun, not_json, unparsable
from .capture import Exchange, SentEvents, begun_here

log = logging.getLogger("rrkit.server")

SERVER_ERROR_CODE = "server_error"
FAILED_MARK = "rrkit: "
"""How rrkit's own words for a failure of its own begin (a reply source that raised, a bug): a scripted
`server_error` is worded as the service words it."""


def own_failure(error: BaseException, what: str = "the server failed") -> str:
    return f"{FAILED_MARK}{what}: {type(error).__name__}: {error}"


def server_failed(outcome: Outcome | None) -> bool:
    """Whether an exchange ended so because the server itself failed on it (not a scripted failure)."""
    return outcome is not None and outcome.code == SERVER_ERROR_CODE and (outcome.message or "").startswith(FAILED_MARK)


INTERNAL_ERROR = 1011  # the WebSocket close code for "the server met an unexpected condition"


class ChannelGone(RRKitError):
    """The client went away while the server was sending."""


class Channel(Protocol):
    """One transport's way to deliver a response: the engine knows nothing else about it."""

    async def send(self, wires: Sequence[str | bytes]) -> None:
        """Send encoded events, in order, at once (SSE frames in one write); raise ChannelGone if the client is
        gone."""

    async def pause(self, seconds: float) -> bool:
        """Wait; True if the client went away (or the server is stopping) meanwhile."""

    async def stall(self) -> None:
        """Send nothing until the client gives up or the server stops."""

    async def cut(self, close: CloseKind, code: int, reason: str) -> None:
        """End the connection mid-stream: a bare TCP close, or (WebSocket) a close frame with `code`."""

    async def finish(self) -> None:
        """End the response normally."""


LEAVE_GRACE = 0.1
"""Seconds a request's work gets to end by itself once its client has gone, before it is cancelled."""

T = TypeVar("T")


class Gone(asyncio.Event):
    """Set once the client has left: an event whose setting also runs the callbacks given to `then`."""

    def __init__(self) -> None:
        super().__init__()
        self._then: list[Callable[[], object]] = []

    def set(self) -> None:
        if self.is_set():
            return
        super().set()
        callbacks, self._then = self._then, []
        for callback in callbacks:
            callback()

    def then(self, callback: Callable[[], object]) -> None:
        """Run `callback` when the event is set (at once if it is)."""
        if self.is_set():
            callback()
        else:
            self._then.append(callback)

    def forget(self, callback: Callable[[], object]) -> None:
        with contextlib.suppress(ValueError):
            self._then.remove(callback)


async def until_client_leaves(work: Coroutine[Any, Any, T], gone: Gone, grace: float = LEAVE_GRACE) -> T | None:
    """Run `work` to its end; if the client leaves and `work` does not end by itself within `grace` (it waits on
    a reply source, such as an upstream that has not answered yet), cancel it, which releases what it holds
    (the upstream request). None when it was cancelled that way. `work` runs in the calling task (no task of its
    own, no wait set up around it: a request's answer begins at once)."""
    task = asyncio.current_task()
    assert task is not None
    timer: asyncio.TimerHandle | None = None
    cut = False

    def cancel() -> None:
        nonlocal cut
        cut = True
        task.cancel()

    def leaving() -> None:
        nonlocal timer
        timer = asyncio.get_running_loop().call_later(grace, cancel)

    gone.then(leaving)
    result: T | None = None
    try:
        result = await work
    except asyncio.CancelledError:
        if not cut:
            raise
    except Exception as error:
        record_server_error(error)
        raise
    finally:
        gone.forget(leaving)
        if timer is not None:
            timer.cancel()
        others = task.uncancel() if cut else 0  # our cancel undone, however the work took it
    if others:  # the task itself is being cancelled too
        raise asyncio.CancelledError
    return None if cut else result


def server_error_outcome(error: BaseException, events_sent: int, *, streaming: bool) -> Outcome:
    """What an exchange the server failed on ended as: a 500 before its answer began, a cut stream once it had,
    with the error named (`rrkit show` prints it)."""
    message = own_failure(error)
    if streaming or events_sent:
        return Outcome(OutcomeKind.DROPPED, events_sent, code=SERVER_ERROR_CODE, message=message)
    return Outcome(OutcomeKind.REFUSED, 0, code=SERVER_ERROR_CODE, message=message, status=500)


def record_server_error(error: BaseException) -> None:
    """An error escaped a request's handler: the exchanges it began and left without an outcome get one that
    names it (rather than looking disconnected, or still streaming)."""
    for exchange in begun_here():
        if exchange.outcome is None:
            streaming = exchange.response_status == 200 and exchange.response_body is None
            exchange.outcome = server_error_outcome(error, len(exchange.events), streaming=streaming)


async def first_of(*events: asyncio.Event, timeout: float | None = None) -> bool:
    """Wait until any event is set (True) or the timeout passes (False)."""
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        return bool(done)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def play(plan: ResponsePlan, exchange: Exchange, channel: Channel) -> Outcome:
    """Send the plan's events in order, as they are made, applying its faults; record each event with its
    offset. The events of a run that are due at once (no pause, no fault between them) go out in one write.
    Whatever the plan's events hold (a live relay's upstream) is released however this ends."""
    try:
        return await _play(plan, exchange, channel)
    finally:
        if plan.release is not None:
            await plan.release()


class _Sender:
    """The events due now of one stream (their wires and types), sent in one write and recorded with their
    offset."""

    def __init__(self, exchange: Exchange, channel: Channel) -> None:
        self.exchange, self.channel = exchange, channel
        self.start = time.monotonic()
        self.sent = 0
        self.wires: list[str | bytes] = []
        self.types: list[str | None] = []

    @property
    def due(self) -> int:
        """The index the next event will have in the stream."""
        return self.sent + len(self.wires)

    def take(self, run: Sequence[PlannedEvent]) -> None:
        if isinstance(run, WireRun):  # a relay's: no event is made
            self.wires += run.wires
            self.types += run.types
        else:
            self.wires += [one.wire for one in run]
            self.types += [one.type for one in run]

    def add(self, planned: PlannedEvent) -> None:
        self.wires.append(planned.wire)
        self.types.append(planned.type)

    async def flush(self) -> None:
        if not self.wires:
            return
        wires, types = self.wires, self.types
        self.wires, self.types = [], []
        try:
            await self.channel.send(wires)
        except OSError as error:  # the transport is gone under the channel
            raise ChannelGone from error
        self.exchange.events.sent(time.monotonic() - self.start, wires, types)
        self.sent += len(wires)


async def _play(plan: ResponsePlan, exchange: Exchange, channel: Channel) -> Outcome:
    fault = plan.fault.resolved(exchange.id)  # chaos drawn for this exchange: a cut like any other
    marks = [at for at in (fault.not_json_at, fault.stall_after, fault.drop_after) if at is not None]
    sender = _Sender(exchange, channel)
    try:
        async with contextlib.aclosing(plan.events) as stream:
            async for run in stream:
                first = sender.due
                paced = not isinstance(run, WireRun) and any(one.delay for one in run)
                if not paced and not any(first <= at < first + len(run) for at in marks):
                    sender.take(run)  # nothing applies inside the run: the common case, checked once
                else:
                    ended = await _play_run(run, fault, sender)
                    if ended is not None:
                        return ended
                await sender.flush()
    except StreamCut as cut:  # raised between runs: nothing is pending
        outcome = _ending(exchange, Outcome(OutcomeKind.DROPPED, sender.sent))
        await channel.cut(cut.close, cut.code, cut.reason)
        return outcome
    except ChannelGone:
        return Outcome(OutcomeKind.DISCONNECTED, sender.sent)
    except Exception as error:  # the plan's events broke (a bug, a broken source): the client sees a cut stream
        log.error("rrkit: the server failed while streaming exchange %s", exchange.id, exc_info=error)
        with contextlib.suppress(ChannelGone, OSError, RuntimeError):
            await channel.cut("frame", INTERNAL_ERROR, "internal error")
        return server_error_outcome(error, sender.sent, streaming=True)
    return await _end(fault, exchange, channel, sender.sent)


async def _play_run(run: Sequence[PlannedEvent], fault: StreamFault, sender: _Sender) -> Outcome | None:
    """A run inside which a fault or a pause applies, event by event; the outcome if the stream ended in it."""
    cut_at = fault.drop_after if fault.drop_after is not None else -1
    stall_at = fault.stall_after if fault.stall_after is not None else -1
    channel = sender.channel
    for planned in run:
        index = sender.due
        if index == fault.not_json_at:
            planned = not_json(planned, "ws" if isinstance(planned.wire, str) else "http")
        if index in (stall_at, cut_at) or planned.delay:
            await sender.flush()
            if index == stall_at:
                outcome = _ending(sender.exchange, Outcome(OutcomeKind.STALLED, sender.sent))
                await channel.stall()
                return outcome
            if index == cut_at:
                _ending(sender.exchange, Outcome(OutcomeKind.DROPPED, sender.sent))
                at = time.monotonic() - sender.start
                cut = await _cut(channel, fault, planned, sender.exchange.events, at)
                return Outcome(OutcomeKind.DROPPED, sender.sent + cut)
            if await channel.pause(planned.delay):
                return Outcome(OutcomeKind.DISCONNECTED, sender.sent)
        sender.add(planned)
    return None


async def _cut(channel: Channel, fault: StreamFault, planned: PlannedEvent, sent: SentEvents, at: float) -> int:
    """The scripted cut before `planned`, and how many frames went out with it. With `cut_inside`, a start of it
    goes out first and the connection then closes bare: over SSE the first `cut_bytes` of its frame's bytes (half
    by default; no parser dispatches them), over WebSocket a frame of its JSON cut short (after `cut_bytes`
    characters, or after its type and sequence number; recorded in `sent`, as any frame sent)."""
    if not fault.cut_inside:
        await channel.cut(fault.close, fault.close_code, fault.close_reason)
        return 0
    frames = 0
    wire, given = planned.wire, fault.cut_bytes
    if isinstance(wire, str):
        cut = wire[: _within(given, wire)] if given is not None else None
        partial = not_json(planned, "ws") if cut is None else unparsable(cut, planned.type or "", "ws")
        await channel.send([partial.wire])
        sent.sent(at, [partial.wire], [partial.type])
        frames = 1
    else:
        await channel.send([wire[: _within(given, wire) if given is not None else max(1, len(wire) // 2)]])
    await channel.cut("tcp", fault.close_code, fault.close_reason)
    return frames


def _within(given: int, wire: str | bytes) -> int:
    """A cut's length inside a frame: at least one, and all but its last byte (or character) at most."""
    return max(1, min(given, len(wire) - 1))


async def _end(fault: StreamFault, exchange: Exchange, channel: Channel, sent: int) -> Outcome:
    """Every event was sent: a scripted fault at (or past) the end still applies (chaos's does not); else the
    response ends normally."""
    if fault.past_end and fault.stall_after is not None and fault.stall_after >= sent:
        outcome = _ending(exchange, Outcome(OutcomeKind.STALLED, sent))
        await channel.stall()
        return outcome
    if fault.past_end and fault.drop_after is not None and fault.drop_after >= sent:
        outcome = _ending(exchange, Outcome(OutcomeKind.DROPPED, sent))
        await channel.cut(fault.close, fault.close_code, fault.close_reason)
        return outcome
    try:
        await channel.finish()
    except ChannelGone:
        return Outcome(OutcomeKind.DISCONNECTED, sent)
    # Verbatim events may end without a terminal event: to the client that is a cut stream.
    return _stated_outcome(exchange.events) or Outcome(OutcomeKind.DROPPED, sent)


def _ending(exchange: Exchange, outcome: Outcome) -> Outcome:
    """Note how the server ends the exchange before it awaits the end: the client may leave (and its answer be
    cancelled, `until_client_leaves`) before the cut or the stall returns."""
    exchange.ending = outcome
    return outcome


def _stated_outcome(events: SentEvents) -> Outcome | None:
    """The outcome the stream's terminal event states."""
    count = len(events)
    ending = events.last_ending()
    return None if ending is None else outcome_of_terminal(ending.event, count)
