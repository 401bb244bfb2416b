"""The idle timer of a relayed stream: an upstream silent past its timeout has its connection aborted, which ends
the pending read at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class Watchdog:
    """One idle timer per relayed stream, instead of a timeout scope per read: `waiting()` before each read and
    `arrived()` after it are attribute writes and a clock read; if a read waits `timeout` seconds, `expire` runs
    once (it aborts the upstream connection, so that the pending read fails at once) and `expired` is set."""

    __slots__ = ("_expire", "_handle", "_loop", "_since", "_timeout", "_waiting", "expired")

    def __init__(self, timeout: float, expire: Callable[[], object]) -> None:
        self._loop = asyncio.get_running_loop()
        self._timeout = timeout
        self._expire = expire
        self._since = self._loop.time()
        self._waiting = False
        self.expired = False
        self._handle: asyncio.TimerHandle | None = self._loop.call_at(self._since + timeout, self._check)

    def waiting(self) -> None:
        self._since = self._loop.time()
        self._waiting = True

    def arrived(self) -> None:
        self._waiting = False

    def _check(self) -> None:
        now = self._loop.time()
        if self._waiting and now - self._since >= self._timeout:
            self._handle = None
            self.expired = True
            with contextlib.suppress(Exception):
                self._expire()
            return
        start = self._since if self._waiting else now  # not waiting (the client is slow): nothing is late yet
        self._handle = self._loop.call_at(start + self._timeout, self._check)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def astop(self) -> None:
        self.stop()


class NoWatchdog:
    """`timeout=None`: the upstream may stay silent for ever."""

    expired = False

    def waiting(self) -> None:
        pass

    def arrived(self) -> None:
        pass

    def stop(self) -> None:
        pass

    async def astop(self) -> None:
        pass


def idle_timer(timeout: float | None, expire: Callable[[], object]) -> Watchdog | NoWatchdog:
    """The timer of one stream (`timeout=None`: none)."""
    return NoWatchdog() if timeout is None else Watchdog(timeout, expire)
