"""The retry policy (Codex 0.169's, docs/protocol.md: Failures and retries) and the injectable clock, sleep,
randomness and ids."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from ..protocol.vocabulary import Transport
from .errors import ModelClientError, UpgradeRequired

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]
Random = Callable[[], float]
"""A number in [0, 1): 0.5 means no jitter."""
NewId = Callable[[], str]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times one stream is retried, and the backoff used when the server names no delay.

    `max_retries` is Codex's `stream_max_retries` (default 5: six attempts per transport);
    `request_max_retries` (default 4) is the inner, request-level budget of an HTTP 5xx.
    """

    max_retries: int = 5
    request_max_retries: int = 4
    base_delay: float = 0.2
    max_delay: float = math.inf
    jitter: float = 0.1
    """Backoff is scaled by a factor in [1 - jitter, 1 + jitter)."""

    def backoff(self, retry: int, rng: Random) -> float:
        """The delay before retry number `retry` (1-based): base x 2^(retry-1), jittered, capped."""
        nominal = min(self.max_delay, self.base_delay * 2.0 ** max(0, retry - 1))
        return float(nominal * (1.0 + self.jitter * (2.0 * rng() - 1.0)))


@dataclass
class ClientOptions:
    """Timeouts, retry policy and the injectable clock, sleep, randomness and ids of a ModelClient."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    idle_timeout: float = 300.0
    connect_timeout: float = 10.0
    """HTTP connect timeout."""
    websocket_connect_timeout: float = 15.0
    """WebSocket connect (and handshake) timeout: Codex 0.169's default."""
    warmup_timeout: float = 5.0
    sleep: Sleep = asyncio.sleep
    clock: Clock = time.monotonic
    rng: Random = field(default_factory=lambda: random.Random().random)
    new_id: NewId | None = None
    """Turn ids; None: a UUID derived from the thread id and the turn's number, so a session with a fixed id
    sends the same requests in every run (and recordings repeat)."""
    strict_streams: bool = False
    """Stricter than Codex: a stream that breaks an answer rule (`rrkit.protocol.ANSWER_RULES`: an event lost or
    out of order by its number, another response's id, a completion before its output, ...) is refused as a drop
    and retried. False (the default) is Codex's behaviour: the turn keeps each `output_item.done` and ends at
    `response.completed`, whatever came before it."""

    @classmethod
    def quick(cls) -> ClientOptions:
        """Short retry delays and timeouts, for runs against a local server (`rrkit demo`, `rrkit replay`): seconds,
        whatever the scripts ask for. Delays are recorded at their nominal value (a 1 s Retry-After) but waited at
        most 20 ms."""
        return cls(
            retry=RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05),
            idle_timeout=0.75,
            connect_timeout=2.0,
            websocket_connect_timeout=2.0,
            warmup_timeout=1.0,
            sleep=RecordingSleep(cap=0.02),
        )


class RetryStep(StrEnum):
    RETRY = "retry"
    FALL_BACK = "fall back"
    FAIL = "fail"


Level = Literal["request", "stream"]


@dataclass(frozen=True, slots=True)
class Next:
    """What to do after a failed attempt: retry (after `delay`, at `level`), fall back to HTTP, or fail."""

    step: RetryStep
    delay: float = 0.0
    level: Level | None = None


def request_level(error: ModelClientError, transport: Transport) -> bool:
    """An HTTP 5xx before the stream: retried first by the request-level budget (Codex's transport layer),
    whatever its body says; only then does the stream level classify it (`server_is_overloaded`: fatal)."""
    return transport == "http" and error.status is not None and error.status >= 500


@dataclass
class RetryBudget:
    """The counters of one sampling: request-level retries of the current stream attempt, stream retries of
    the current transport. Both restart when the session falls back to HTTP."""

    policy: RetryPolicy
    rng: Random
    stream_retries: int = 0
    request_retries: int = 0

    def after(self, error: ModelClientError, transport: Transport, *, can_fall_back: bool) -> Next:
        if isinstance(error, UpgradeRequired):  # 426: at once, without spending the budget
            return self._fall_back()
        if request_level(error, transport) and self.request_retries < self.policy.request_max_retries:
            self.request_retries += 1
            return Next(RetryStep.RETRY, self._delay(error, self.request_retries), "request")
        self.request_retries = 0
        if not error.retryable:
            return Next(RetryStep.FAIL)
        if self.stream_retries >= self.policy.max_retries:
            return self._fall_back() if transport == "ws" and can_fall_back else Next(RetryStep.FAIL)
        self.stream_retries += 1
        return Next(RetryStep.RETRY, self._delay(error, self.stream_retries), "stream")

    def _delay(self, error: ModelClientError, retry: int) -> float:
        return error.delay if error.delay is not None else self.policy.backoff(retry, self.rng)

    def _fall_back(self) -> Next:
        self.stream_retries = self.request_retries = 0
        return Next(RetryStep.FALL_BACK)


class RecordingSleep:
    """A sleep that records each delay and returns at once (optionally really sleeping at most `cap`)."""

    def __init__(self, cap: float = 0.0) -> None:
        self.delays: list[float] = []
        self.cap = cap

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(min(seconds, self.cap))
