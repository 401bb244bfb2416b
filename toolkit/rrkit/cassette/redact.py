"""Redaction of secrets on both sides of an exchange: headers, handshakes, credentials in request bodies
(rrkit.protocol.secrets) and JSON paths, replaced by a marker."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..protocol.jsonpath import JsonPath
from ..protocol.secrets import (
    MIN_SECRET,
    SECRET_HEADERS,
    URL_MARKER,
    mask_request,
    query_secrets,
    redact_query,
    scrub_key_like,
)
from .format import Cassette, RecordedEvent, RecordedEvents, Redaction

MARKER = URL_MARKER
DEFAULT_HEADERS = SECRET_HEADERS


@dataclass(frozen=True)
class Redactor:
    """The redaction policy: header names and JSON paths whose values are replaced by a marker, and secrets
    known beforehand (those of an upstream's URL). Every copy of what it redacts is scrubbed too; each
    `apply` is a pass of its own, so a policy can serve any number of cassettes.

    Paths are dotted with `*` for any key or list item, rooted at a request or event:
    `metadata.user`, `input.*.content`, `response.instructions`. With `bodies` (the default) the credentials a
    request body carries are redacted too: fields named like one or like a redacted header, an MCP tool's
    `authorization` and `headers`, values that look like keys (rrkit.protocol.secrets.mask_request).
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    paths: tuple[str, ...] = ()
    marker: str = MARKER
    known_secrets: tuple[str, ...] = ()
    bodies: bool = True

    def __post_init__(self) -> None:
        for path in self.paths:
            JsonPath.parse(path, "redact path")  # a bad one fails here, before anything is recorded

    @classmethod
    def with_extra(cls, headers: Iterable[str] = (), paths: Iterable[str] = ()) -> Redactor:
        return cls(tuple(dict.fromkeys([*DEFAULT_HEADERS, *(h.lower() for h in headers)])), tuple(paths))

    def knowing(self, secrets: Iterable[str]) -> Redactor:
        """This policy, also scrubbing these values wherever they appear (say, the secrets of an upstream URL)."""
        return replace(self, known_secrets=(*self.known_secrets, *secrets))

    def apply(self, cassette: Cassette) -> Cassette:
        """Redact a whole cassette in place (and return it); idempotent."""
        return _Pass(self).apply(cassette)


class _Pass:
    """One redaction of one cassette: the policy, and the secrets seen so far in it."""

    def __init__(self, policy: Redactor) -> None:
        self.headers, self.paths, self.marker = policy.headers, policy.paths, policy.marker
        self.bodies = policy.bodies
        self._paths = [JsonPath.parse(path, "redact path") for path in policy.paths]
        self.secrets: set[str] = set()
        for secret in policy.known_secrets:
            self._remember(secret)

    def redact_headers(self, headers: dict[str, str]) -> dict[str, str]:
        result = {}
        for name, value in headers.items():
            if name.lower() in self.headers and value != self.marker:
                self._remember(value)
                result[name] = self.marker
            else:
                result[name] = value
        return result

    def redact_query(self, query: str | None) -> str | None:
        if not query:
            return query
        for secret in query_secrets(query, self.headers):
            self._remember(secret)
        return redact_query(query, self.headers, self.marker)

    def _remember(self, value: str) -> None:
        for part in [value, *re.split(r"[\s;,=]+", value)]:
            if len(part) >= MIN_SECRET and part.lower() not in ("bearer", "basic"):
                self.secrets.add(part)

    def redact_json(self, value: Any) -> Any:
        for path in self._paths:
            value = path.rewrite(value, self._redacted)
        return value

    def redact_request(self, value: Any) -> Any:
        value = self.redact_json(value)
        if self.bodies and value is not None:
            value = mask_request(value, self.marker, self.headers, found=self._remember)
        return value

    def _redacted(self, value: Any) -> str:
        if isinstance(value, str):
            self._remember(value)
        elif value is not None:
            self._remember(json.dumps(value))
        return self.marker

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
        _rewrite(cassette, self.redact_headers, self.redact_request, redact_event, query=self.redact_query)
        if self.secrets:
            _rewrite(cassette, self.scrub_json, self.scrub_json, self._scrub_event, self.scrub, touches=self._may_hold)
        if self.bodies:  # what is kept as text (a body that is no JSON object, an answer's text): key-like runs
            _rewrite(cassette, None, None, None, functools.partial(scrub_key_like, marker=self.marker))
        cassette.redaction = Redaction(marker=self.marker, headers=list(self.headers), paths=list(self.paths))
        return cassette

    def _redact_event(self, recorded: RecordedEvent) -> RecordedEvent:
        return RecordedEvent.of(recorded.at, self.redact_json(recorded.event))

    def _may_hold(self, events: Sequence[RecordedEvent]) -> bool:
        """Whether any of these events may hold a secret: held compactly, their text is searched at once (100,000
        events are not made one by one to find none)."""
        return not isinstance(events, RecordedEvents) or any(events.holds(secret) for secret in self.secrets)

    def _scrub_event(self, recorded: RecordedEvent) -> RecordedEvent:
        if not any(secret in recorded.raw for secret in self.secrets):
            return recorded
        return RecordedEvent.of(recorded.at, self.scrub_json(recorded.event))


def _rewrite(
    cassette: Cassette,
    headers: Callable[[dict[str, str]], dict[str, str]] | None,
    body: Callable[[Any], Any] | None,
    event: Callable[[RecordedEvent], RecordedEvent] | None,
    text: Callable[[str], str] | None = None,
    query: Callable[[str | None], str | None] | None = None,
    touches: Callable[[Sequence[RecordedEvent]], bool] | None = None,
) -> None:
    """Pass every header map, query string, request body, raw body, answer body and event of a cassette through
    these, in place (`text` rewrites the plain texts, `query` the query strings: both also when given alone); what
    is given as None is left as it is, and so are the events of an exchange `touches` says `event` leaves alone."""
    for connection in cassette.connections:
        handshake = connection.handshake
        if headers is not None:
            handshake.request_headers = headers(handshake.request_headers)
            handshake.response_headers = headers(handshake.response_headers)
        handshake.query = _text_of(handshake.query, query, text)
    for exchange in cassette.exchanges:
        if headers is not None:
            exchange.request_headers = headers(exchange.request_headers)
            exchange.response_headers = headers(exchange.response_headers)
        exchange.query = _text_of(exchange.query, query, text)
        if text is not None:  # a path names ids, not secrets, but a known secret is scrubbed wherever it is
            exchange.path = text(exchange.path)
        if body is not None:
            exchange.wire_request = body(exchange.wire_request)
            exchange.logical_request = body(exchange.logical_request)
        if text is not None and exchange.raw_body is not None:
            exchange.raw_body = text(exchange.raw_body)
        answer = exchange.response_body
        if body is not None and answer is not None and answer.json_value is not None:  # it echoes the request's tools
            answer.json_value = body(answer.json_value)
        if text is not None and answer is not None and answer.text is not None:
            answer.text = text(answer.text)
        outcome = exchange.outcome
        if text is not None and outcome is not None and outcome.message:  # an error's words may quote the request
            exchange.outcome = replace(outcome, message=text(outcome.message))
        if event is not None and (touches is None or touches(exchange.events)):
            exchange.events = [event(recorded) for recorded in exchange.events]


def _text_of(
    value: str | None, query: Callable[[str | None], str | None] | None, text: Callable[[str], str] | None
) -> str | None:
    if query is not None:
        value = query(value)
    return text(value) if text is not None and value else value
