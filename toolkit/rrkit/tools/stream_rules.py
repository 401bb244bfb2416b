"""Which order rules a recorded stream breaks: a stream seen from its start by every rule (`protocol.order`), a
resumed one (`GET /responses/{id}?stream=true&starting_after=N`) by those its tail can be held to, numbered on
from N + 1: `rrkit show` and `rrkit validate` judge both alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..cassette.format import RecordedExchange
from ..protocol.order import Violation, check_order
from ..protocol.routes import resumed_after


def resumed_at(exchange: RecordedExchange) -> int | None:
    """The sequence number a resumed stream starts at (its query's `starting_after` + 1), or None for a stream
    seen from its start: a create's, or a retrieve's without `starting_after`."""
    after = None if exchange.is_create else resumed_after(exchange.query or "")
    return after + 1 if after is not None and after >= 0 else None


def check_stream(exchange: RecordedExchange, events: Sequence[dict[str, Any]], *, complete: bool) -> list[Violation]:
    """Every rule the exchange's events break (`protocol.order.check_order`), a resumed stream numbered from where
    it resumed. `complete=False` checks a cut stream (no terminal event needed)."""
    start = resumed_at(exchange)
    return check_order(events, complete=complete, starting_after=None if start is None else start - 1)
