"""What a client session accumulates over its turns: its fallback to HTTP (with the reason), trace and usage."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from .trace import Fallback, Trace

log = logging.getLogger("rrkit.client")


@dataclass
class SessionState:
    """Shared by every turn of one ModelClient; a fallback, once taken, holds for the rest of the session."""

    supports_websockets: bool
    fallback: Fallback | None = None
    trace: Trace = field(default_factory=Trace)
    usage: list[dict[str, Any]] = field(default_factory=list)

    @property
    def use_websockets(self) -> bool:
        return self.supports_websockets and self.fallback is None

    def fall_back(self, turn: int, reason: str) -> bool:
        """Disable WebSockets for the session; False if they already were."""
        if self.fallback is not None:
            return False
        self.fallback = Fallback(turn, reason)
        self.trace.fallbacks.append(self.fallback)
        log.warning("falling back to HTTP for the rest of the session: %s", reason)
        return True
