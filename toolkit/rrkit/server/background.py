"""Background responses (`background: true`): made by a task of their own whatever the client does, every event
kept with its sequence number, so that any stream of the response (the create's, a resumed one) follows the same
events from any point."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from ..protocol.events import CREATED, IN_PROGRESS, ITEM_DONE, QUEUED, TERMINAL_TYPES, Event
from ..protocol.plan import EventRuns, PlannedEvent, ResponsePlan
from ..protocol.resources import ACTIVE_STATUSES, ENDED_STATUSES
from ..protocol.wire_events import WireRun, event_of_wire, planned
from .stream import first_of

log = logging.getLogger("rrkit.server")

STATUS_OF_EVENT = {QUEUED: "queued", CREATED: "queued", IN_PROGRESS: "in_progress"}
GROWTH_STEP = 64 * 1024
"""Bytes of events a run makes between two counts of it in the store's memory budget (`on_grow`)."""


class BackgroundRun:
    """One background response: its status, its last stated response object, its events so far.

    The task that makes the events (`start`) paces them as the plan says; it waits, before going past
    `response.created`, until the response has been polled `queued_polls` times and `queued_seconds` have
    passed. `polled()` counts a poll and tells the status a poll sees: `in_progress` is shown for at least
    `in_progress_polls` polls, even once the events are all made."""

    def __init__(
        self,
        response: dict[str, Any],
        *,
        queued_polls: int = 0,
        queued_seconds: float = 0.0,
        in_progress_polls: int = 0,
        on_end: Callable[[BackgroundRun], None] | None = None,
        on_grow: Callable[[BackgroundRun], None] | None = None,
    ) -> None:
        self.response = {**response, "status": "queued", "background": True}
        # each event as its SSE wire, its type and its sequence number (no event object is kept: a resume sends
        # the wires as they are)
        self.wires: list[str | bytes] = []
        self.types: list[str | None] = []
        self.sequence: list[int] = []
        self.wire_bytes = 0  # the bytes of `wires`, counted as they come
        self._counted = 0  # `wire_bytes` when `on_grow` was last called
        self.queued_polls, self.queued_seconds, self.in_progress_polls = queued_polls, queued_seconds, in_progress_polls
        self.polls = 0
        self._in_progress_seen = 0
        self._born = time.monotonic()
        self._grew = asyncio.Event()  # set (and replaced) each time an event is added or the status ends
        self._polled = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._on_end, self._on_grow = on_end, on_grow

    @property
    def status(self) -> str:
        return str(self.response.get("status"))

    @property
    def ended(self) -> bool:
        return self.status in ENDED_STATUSES

    def start(self, plan: ResponsePlan, stopping: asyncio.Event | None) -> None:
        self._task = asyncio.get_running_loop().create_task(self._make(plan, stopping or asyncio.Event()))

    async def _make(self, plan: ResponsePlan, stopping: asyncio.Event) -> None:
        try:
            async with contextlib.aclosing(plan.events) as runs:
                async for run in runs:
                    for one in run:
                        if one.delay and await first_of(stopping, timeout=one.delay):
                            return
                        self._add(one)
                        if one.type == CREATED:
                            await self._wait_queued(stopping)
        except Exception as error:  # a broken plan: the response fails, the server goes on
            log.error("rrkit: background response %s failed: %s", self.response.get("id"), error, exc_info=error)
            self._end({**self.response, "status": "failed", "error": {"code": "server_error", "message": str(error)}})
        finally:
            if plan.release is not None:
                await plan.release()
            if not self.ended:  # the plan ended without a terminal event: the response is stated as failed
                message = "The response ended without a terminal event."
                self._end({**self.response, "status": "failed", "error": {"code": "server_error", "message": message}})

    async def _wait_queued(self, stopping: asyncio.Event) -> None:
        while self.polls < self.queued_polls and not stopping.is_set():
            self._polled = asyncio.Event()
            await first_of(self._polled, stopping)
        left = self.queued_seconds - (time.monotonic() - self._born)
        if left > 0:
            await first_of(stopping, timeout=left)

    def _add(self, one: PlannedEvent) -> None:
        event = one.event
        stated = event.get("response")
        if isinstance(stated, dict):
            status = "queued" if event.get("type") == CREATED else stated.get("status")
            stated = {**stated, "background": True, "status": status}
            event = {**event, "response": stated}
            one = planned(event, "http")
        number = event.get("sequence_number")
        self.wire_bytes += len(one.wire)
        if self._on_grow is not None and self.wire_bytes - self._counted >= GROWTH_STEP:
            self._counted = self.wire_bytes
            self._on_grow(self)
        self.wires.append(one.wire)
        self.types.append(one.type)
        self.sequence.append(number if isinstance(number, int) and not isinstance(number, bool) else -1)
        kind = event.get("type")
        if kind in TERMINAL_TYPES and isinstance(stated, dict):
            self._end(stated)
            return
        if kind in STATUS_OF_EVENT and isinstance(stated, dict):
            self.response = {**stated, "status": STATUS_OF_EVENT[str(kind)]}
        self._wake()

    def _end(self, response: dict[str, Any]) -> None:
        if self.ended:
            return
        self.response = {**response, "background": True}
        self._wake()
        if self._on_end is not None:
            self._on_end(self)

    def _wake(self) -> None:
        grew, self._grew = self._grew, asyncio.Event()
        grew.set()

    def polled(self) -> dict[str, Any]:
        """The response object a poll sees (counting the poll)."""
        self.polls += 1
        self._polled.set()
        if self.status in ACTIVE_STATUSES:
            return dict(self.response)
        if self._in_progress_seen < self.in_progress_polls and self.status != "cancelled":
            self._in_progress_seen += 1
            return {**self.response, "status": "in_progress", "output": [], "usage": None, "completed_at": None}
        return dict(self.response)

    def cancel(self) -> dict[str, Any]:
        """Stop making events; the response is `cancelled` (a stream following it ends)."""
        if self._task is not None:
            self._task.cancel()
        self._end({**self.response, "status": "cancelled"})
        return dict(self.response)

    def done_events(self) -> list[Event]:
        """The `response.output_item.done` events made so far (only those are parsed)."""
        return [event_of_wire(wire) for wire, kind in zip(self.wires, self.types, strict=True) if kind == ITEM_DONE]

    async def follow(self, starting_after: int | None = None) -> EventRuns:
        """The events after sequence number `starting_after` (all of them when None), as they are made, until the
        response ends: the wires as they were kept, no event made again."""
        position = 0
        if starting_after is not None:
            while position < len(self.wires) and self.sequence[position] <= starting_after:
                position += 1
        while True:
            grew = self._grew
            if position < len(self.wires):
                run = WireRun()
                for index in range(position, len(self.wires)):
                    run.append(self.wires[index], self.types[index] or "")
                position = len(self.wires)
                yield run
                continue
            if self.ended:
                return
            await grew.wait()

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
