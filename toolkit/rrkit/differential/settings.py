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

    @property
    def max_retries(self) -> int:
        """The larger retry count (Codex's defaults, 4 and 5, where one is left out)."""
        return max(self.request_max_retries or 4, self.stream_max_retries or 5)


DEFAULT_BUDGETS = Budgets()
