"""Which order rules a recorded stream breaks: a stream seen from its start by every rule (`protocol.order`), a
resumed one (`GET /responses/{id}?stream=true&starting_after=N`) by those its tail can be held to, numbered on
from N + 1: `rrkit show` and `rrkit validate` judge both alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl

from ..cassette.format import RecordedExchange
from ..protocol.order import Violation, check_order


def resumed_at(exchange: RecordedExchange) -> int | None:
    """The sequence number a resumed stream starts at (its query's `starting_after` + 1), or None for a stream
    seen from its start: a create's, or a retrieve's without `starting_after`."""
    if exchange.is_create:
        return None
    after = dict(parse_qsl(exchange.query or "")).get("starting_after", "")
    try:
        start = int(after) + 1
    except ValueError:
        return None
    return start if start > 0 else None


def check_stream(exchange: RecordedExchange, events: Sequence[dict[str, Any]], *, complete: bool) -> list[Violation]:
    """Every rule the exchange's events break (`protocol.order.check_order`), a resumed stream numbered from where
    it resumed. `complete=False` checks a cut stream (no terminal event needed)."""
    start = resumed_at(exchange)
    return check_order(events, complete=complete, starting_after=None if start is None else start - 1)
