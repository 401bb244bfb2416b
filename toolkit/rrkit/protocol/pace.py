"""Streaming physics: the time to the first token, tokens per second and jitter, as the delay before each event of
a stream, drawn from a seed so that the same pace times a stream the same way on every run."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .events import estimate_tokens

E = TypeVar("E", bound=Mapping[str, Any])


@dataclass(frozen=True, slots=True)
class Pace:
    """`ttft` seconds before the first delta event (text, arguments, reasoning, ...: whatever carries a `delta`),
    then each later delta after as long as its tokens take at `tokens_per_second` (None: at once); every delay
    stretched or shrunk by up to `jitter` (0-1) of itself. Events that carry no delta go out at once."""

    ttft: float = 0.0
    tokens_per_second: float | None = None
    jitter: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.ttft < 0:
            raise ValueError(f"pace ttft is seconds, at least 0: got {self.ttft!r}")
        if self.tokens_per_second is not None and self.tokens_per_second <= 0:
            raise ValueError(f"pace tokens_per_second must be above 0: got {self.tokens_per_second!r}")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"pace jitter is a fraction of each delay, from 0 to 1: got {self.jitter!r}")

    def paced(self, events: Iterable[E]) -> Iterator[tuple[E, float]]:
        """Each of `events` with the delay before it, in order, made as they are asked for."""
        draws = random.Random(f"rrkit-pace:{self.seed}")  # a string seed: the same on every platform and run
        first = True
        for event in events:
            delta = event.get("delta")
            if not isinstance(delta, str):
                yield event, 0.0
                continue
            if first:
                base, first = self.ttft, False
            elif self.tokens_per_second is None:
                base = 0.0
            else:
                base = estimate_tokens(delta) / self.tokens_per_second
            yield event, base * (1.0 + self.jitter * draws.uniform(-1.0, 1.0)) if self.jitter else base
