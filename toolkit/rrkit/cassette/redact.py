"""Redaction of secrets on both sides of an exchange: headers, handshakes and JSON paths, replaced by a marker."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .format import Cassette, RecordedEvent, Redaction

MARKER = "[REDACTED]"
DEFAULT_HEADERS = ("authorization", "api-key", "openai-organization", "openai-project", "cookie", "set-cookie")
_MIN_SECRET = 8  # shorter values are too likely to occur by chance to be scrubbed everywhere


@dataclass
class Redactor:
    """Replaces header values and JSON paths with a marker, then scrubs every copy of those secrets.

    Paths are dotted with `*` for any key or list item, rooted at a request or event:
    `metadata.user`, `input.*.content`, `response.instructions`.
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    paths: tuple[str, ...] = ()
    marker: str = MARKER
    secrets: set[str] = field(default_factory=set)

    @classmethod
    def with_extra(cls, headers: Iterable[str] = (), paths: Iterable[str] = ()) -> Redactor:
        return cls(tuple(dict.fromkeys([*DEFAULT_HEADERS, *(h.lower() for h in headers)])), tuple(paths))

    def redact_headers(self, headers: dict[str, str]) -> dict[str, str]:
        result = {}
        for name, value in headers.items():
            if name.lower() in self.headers and value != self.marker:
                self._remember(value)
                result[name] = self.marker
            else:
                result[name] = value
        return result

    def _remember(self, value: str) -> None:
        for part in [value, *re.split(r"[\s;,=]+", value)]:
            if len(part) >= _MIN_SECRET and part.lower() not in ("bearer", "basic"):
                self.secrets.add(part)

    def redact_json(self, value: Any) -> Any:
        for path in self.paths:
            value = self._redact_path(value, path.split("."))
        return value

    def _redact_path(self, value: Any, parts: list[str]) -> Any:
        if not parts:
            if isinstance(value, str):
                self._remember(value)
            elif value is not None:
                self._remember(json.dumps(value))
            return self.marker
        head, rest = parts[0], parts[1:]
        if isinstance(value, dict):
            return {k: (self._redact_path(v, rest) if head in ("*", k) else v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redact_path(v, rest) if head in ("*", str(i)) else v for i, v in enumerate(value)]
        return value

    def scrub(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, self.marker)
        return text

    def scrub_json(self, value: Any) -> Any:
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(k): self.scrub_json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub_json(v) for v in value]
        return value

    def apply(self, cassette: Cassette) -> Cassette:
        """Redact a whole cassette in place (and return it); idempotent."""
        redact_event = self._redact_event if self.paths else None
        _rewrite(cassette, self.redact_headers, self.redact_json, redact_event)
        if self.secrets:
            _rewrite(cassette, self.scrub_json, self.scrub_json, self._scrub_event, self.scrub)
        cassette.redaction = Redaction(marker=self.marker, headers=list(self.headers), paths=list(self.paths))
        return cassette

    def _redact_event(self, recorded: RecordedEvent) -> RecordedEvent:
        return RecordedEvent.of(recorded.at, self.redact_json(recorded.event))

    def _scrub_event(self, recorded: RecordedEvent) -> RecordedEvent:
        if not any(secret in recorded.raw for secret in self.secrets):
            return recorded
        return RecordedEvent.of(recorded.at, self.scrub_json(recorded.event))


def _rewrite(
    cassette: Cassette,
    headers: Callable[[dict[str, str]], dict[str, str]],
    body: Callable[[Any], Any],
    event: Callable[[RecordedEvent], RecordedEvent] | None,
    text: Callable[[str], str] | None = None,
) -> None:
    """Pass every header map, request body, raw body and event of a cassette through these, in place."""
    for connection in cassette.connections:
        handshake = connection.handshake
        handshake.request_headers = headers(handshake.request_headers)
        handshake.response_headers = headers(handshake.response_headers)
    for exchange in cassette.exchanges:
        exchange.request_headers = headers(exchange.request_headers)
        exchange.response_headers = headers(exchange.response_headers)
        exchange.wire_request = body(exchange.wire_request)
        exchange.logical_request = body(exchange.logical_request)
        if text is not None and exchange.raw_body is not None:
            exchange.raw_body = text(exchange.raw_body)
        if event is not None:
            exchange.events = [event(recorded) for recorded in exchange.events]
