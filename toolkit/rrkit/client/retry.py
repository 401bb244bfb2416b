"""Retry policy and the injectable clock, sleep and randomness (tests and the demo never really wait)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]
Random = Callable[[], float]
"""A number in [0, 1): 0.5 means no jitter."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times one stream is retried, and the backoff used when the server names no delay."""

    max_retries: int = 4
    base_delay: float = 0.2
    max_delay: float = 10.0
    jitter: float = 0.1
    """Backoff is scaled by a factor in [1 - jitter, 1 + jitter)."""

    def backoff(self, retry: int, rng: Random) -> float:
        """The delay before retry number `retry` (1-based): exponential, jittered, capped."""
        nominal = min(self.max_delay, self.base_delay * 2.0 ** max(0, retry - 1))
        return float(nominal * (1.0 + self.jitter * (2.0 * rng() - 1.0)))


@dataclass
class ClientOptions:
    """Timeouts, retry policy and the injectable clock, sleep and randomness of a ModelClient."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    idle_timeout: float = 300.0
    connect_timeout: float = 10.0
    warmup_timeout: float = 5.0
    sleep: Sleep = asyncio.sleep
    clock: Clock = time.monotonic
    rng: Random = field(default_factory=lambda: random.Random().random)


class RecordingSleep:
    """A sleep that records each delay and returns at once (optionally really sleeping at most `cap`)."""

    def __init__(self, cap: float = 0.0) -> None:
        self.delays: list[float] = []
        self.cap = cap

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(min(seconds, self.cap))
