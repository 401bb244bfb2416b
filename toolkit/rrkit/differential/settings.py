"""The retry budgets and timeouts both clients are configured with, so that their runs are comparable."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Budgets:
    """Codex's provider settings `request_max_retries`, `stream_max_retries` (None: left out, each client's
    default) and `stream_idle_timeout_ms`, kept short so that a stall costs a second, not five minutes; the
    reference client gets the same."""

    request_max_retries: int | None = 4
    stream_max_retries: int | None = 5
    idle_timeout: float = 1.0


DEFAULT_BUDGETS = Budgets()
