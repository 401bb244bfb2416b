"""Normalizing recordings for comparison: volatile ids aliased consistently, timestamps and token counts zeroed.

Snapshots and `rrkit diff` both compare through this, so two runs of the same conversation compare equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.ids import PREFIXES
from .format import Cassette, RecordedEvent
from .match import header_named

ID_KINDS = "(" + "|".join(sorted({prefix.rstrip("_") for prefix in PREFIXES.values()} | {"req", "conn"})) + ")"
"""The kinds of volatile id, `(apc|call|conn|...)`: every prefix rrkit issues, request and connection ids too."""
ID_PATTERN = re.compile(rf"^{ID_KINDS}_[A-Za-z0-9_-]{{6,}}$")
TIMESTAMP_KEYS = frozenset({"created_at", "completed_at", "recorded_at", "started_at"})
TOKEN_KEYS = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cached_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
    }
)
VOLATILE_HEADERS = frozenset(
    {"host", "date", "x-request-id", "content-length", "sec-websocket-key", "sec-websocket-accept", "user-agent"}
)
PER_RUN_HEADERS = frozenset({"host", "date", "x-request-id", "sec-websocket-key", "sec-websocket-accept"})
"""Headers whose values are new in every run whatever the session (a port, a clock, a nonce, a random id)."""


@dataclass
class Normalizer:
    """Stateful so that one id gets one alias everywhere it appears (requests, events, headers).

    Headers named by `drop_headers` (lower-case `fnmatch` patterns, such as a match preset's) are left out.
    """

    aliases: dict[str, str] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    drop_headers: tuple[str, ...] = ()
    mask_headers: tuple[str, ...] = ()  # `fnmatch` patterns of headers kept with their values masked

    def alias(self, value: str) -> str:
        if value not in self.aliases:
            prefix = value.split("_", 1)[0]
            self.counters[prefix] = self.counters.get(prefix, 0) + 1
            self.aliases[value] = f"{prefix}_{self.counters[prefix]}"
        return self.aliases[value]

    def json(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self.json(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, str) and ID_PATTERN.match(value):
            return self.alias(value)
        if key in TIMESTAMP_KEYS and isinstance(value, int | float | str):
            return 0
        if key in TOKEN_KEYS and isinstance(value, int):
            return 0
        return value

    def headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {
            k: ("*" if k.lower() in VOLATILE_HEADERS or header_named(k, self.mask_headers) else self.json(v))
            for k, v in sorted(headers.items())
            if not header_named(k, self.drop_headers)
        }

    def events(self, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.json(event) for event in events]


def normalize_cassette(
    cassette: Cassette, *, drop_headers: Iterable[str] = (), mask_headers: Iterable[str] = ()
) -> Cassette:
    """A copy with ids aliased, timestamps, timings and token counts zeroed, volatile headers and the
    `mask_headers` masked, and the `drop_headers` left out (lower-case `fnmatch` patterns, e.g.
    `MatchConfig.ignored_headers`)."""
    n = Normalizer(drop_headers=tuple(drop_headers), mask_headers=tuple(mask_headers))
    copy = cassette.model_copy(deep=True)
    copy.recorded_at = ""
    for connection in copy.connections:
        hs = connection.handshake
        hs.request_headers = n.headers(hs.request_headers)
        hs.response_headers = n.headers(hs.response_headers)
    for exchange in copy.exchanges:
        exchange.started_at = 0.0
        exchange.request_headers = n.headers(exchange.request_headers)
        exchange.response_headers = n.headers(exchange.response_headers)
        exchange.wire_request = n.json(exchange.wire_request)
        exchange.logical_request = n.json(exchange.logical_request)
        exchange.response_id = n.json(exchange.response_id)
        exchange.events = [RecordedEvent.of(0.0, n.json(e.event)) for e in exchange.events]
        if exchange.response_body is not None and exchange.response_body.json_value is not None:
            exchange.response_body.json_value = n.json(exchange.response_body.json_value)
    return copy


def _zero_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (0 if k in TIMESTAMP_KEYS and isinstance(v, int | float) else _zero_timestamps(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_zero_timestamps(v) for v in value]
    return value


def stabilize_cassette(cassette: Cassette, *, digits: int = 2) -> Cassette:
    """A copy fit to commit (golden cassettes): what changes in every run without meaning anything is fixed,
    so that recording the same session again gives a small diff.

    `recorded_at` is cleared, timings are rounded to `digits` decimals of a second, timestamps in events zeroed
    and per-run headers (host, date, x-request-id, WebSocket keys) masked with "*". Ids, token counts, events
    and outcomes stay as recorded (record with `IdGenerator.counting()` to make the ids repeatable too).
    """

    def headers(values: dict[str, str]) -> dict[str, str]:
        return {k: ("*" if k.lower() in PER_RUN_HEADERS else v) for k, v in values.items()}

    copy = cassette.model_copy(deep=True)
    copy.recorded_at = ""
    for connection in copy.connections:
        hs = connection.handshake
        hs.request_headers, hs.response_headers = headers(hs.request_headers), headers(hs.response_headers)
    for exchange in copy.exchanges:
        exchange.started_at = round(exchange.started_at, digits)
        exchange.request_headers = headers(exchange.request_headers)
        exchange.response_headers = headers(exchange.response_headers)
        exchange.events = [RecordedEvent.of(round(e.at, digits), _zero_timestamps(e.event)) for e in exchange.events]
        if exchange.response_body is not None and exchange.response_body.json_value is not None:
            exchange.response_body.json_value = _zero_timestamps(exchange.response_body.json_value)
    return copy
