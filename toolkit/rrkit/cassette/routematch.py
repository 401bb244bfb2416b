"""Matching a request on any route but the create (a retrieve, a cancel, a conversation, a path outside the table)
against recorded exchanges: by its method, its path (the response ids a replay issued read as the recorded ones),
its query string and its body."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from ..protocol.routes import COMPACT, INPUT_TOKENS
from ..protocol.secrets import mask_request, redact_query, scrub_key_like
from ..script.select import RequestView
from .format import RecordedExchange, Redaction, loads_exact
from .match import SECRET_MARK, MatchConfig, MatchResult, canonical, digest, json_diff, shown

CREATE_SHAPED = frozenset({INPUT_TOKENS, COMPACT})
"""Routes whose body is a create's (model, input, tools, ...): matched through the `MatchConfig` as a create is.
Any other body (a conversation's metadata, its items) is matched whole, credentials masked."""
MATCHERS = ("method", "path", "query", "body")


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """What a request on a route is matched by: its method, its path as segments, its query's (name, value) pairs
    in order of name, and its body's view (`None`: no body; a dict: a JSON object; a str: any other body). Its
    route's name (which the method and path say) only ranks the closest ones of a request nothing matches."""

    method: str
    path: tuple[str, ...]
    query: tuple[tuple[str, str], ...]
    body: dict[str, Any] | str | None
    route: str = ""

    def key(self) -> bytes:
        return digest([self.method, list(self.path), [list(pair) for pair in self.query], self.body])

    def compare(self, incoming: RouteRequest, *, explain: bool = True) -> MatchResult:
        """Which of the four matchers pass (this one recorded); with `explain`, a line or a diff of each failed."""
        result = MatchResult()
        for name in MATCHERS:
            mine, theirs = getattr(self, name), getattr(incoming, name)
            if canonical(mine) == canonical(theirs):
                result.passed.append(name)
                continue
            result.failed.append(name)
            if not explain:
                continue
            if name == "body":
                result.diffs[name] = json_diff(mine, theirs, "body")
            elif name == "query":
                result.diffs[name] = json_diff(dict(mine), dict(theirs), "query")
            else:
                joined = ("/" + "/".join(mine), "/" + "/".join(theirs)) if name == "path" else (mine, theirs)
                result.diffs[name] = [f"{name}: recorded {shown(joined[0])}, got {shown(joined[1])}"]
        return result


def recorded_request(exchange: RecordedExchange, config: MatchConfig) -> RouteRequest:
    """A recorded exchange's request, as matching sees it."""
    body: dict[str, Any] | str | None = exchange.raw_body or None
    if exchange.wire_request is not None:
        body = _json_view(exchange.route, exchange.wire_request, config)
    method, path, query = exchange.method.upper(), _segments(exchange.path), _pairs(exchange.query or "")
    return RouteRequest(method, path, query, body, exchange.route)


def incoming_request(
    request: RequestView, config: MatchConfig, redaction: Redaction | None, recorded_id: Callable[[str], str]
) -> RouteRequest:
    """A live request as matching sees it: redacted as the recording was (its query string, a body that is no JSON
    object), each response id this replay issued (in the path, in the query) read as the recorded one."""
    query = request.query
    if redaction is not None and query:
        query = redact_query(query, redaction.headers, redaction.marker)
    pairs = tuple(sorted((name, recorded_id(value)) for name, value in _pairs(query)))
    segments = tuple(recorded_id(segment) for segment in _segments(request.path))
    body = _incoming_body(request, config, redaction, recorded_id)
    return RouteRequest(request.method.upper(), segments, pairs, body, request.route.name)


def _incoming_body(
    request: RequestView, config: MatchConfig, redaction: Redaction | None, recorded_id: Callable[[str], str]
) -> dict[str, Any] | str | None:
    value: Any = request.wire
    raw = request.body or b""
    if not value and raw:
        try:
            value = loads_exact(raw)
        except ValueError:
            value = None
    if isinstance(value, dict) and (value or raw):
        return _json_view(request.route.name, _renamed(value, recorded_id), config)
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    return scrub_key_like(text, redaction.marker) if redaction is not None else text


def _json_view(route: str, body: Mapping[str, Any], config: MatchConfig) -> dict[str, Any]:
    if route in CREATE_SHAPED:
        return config.view(body)
    masked: dict[str, Any] = mask_request(dict(body), SECRET_MARK)
    return masked


def _renamed(value: Any, recorded_id: Callable[[str], str]) -> Any:
    """A body with each string that is an id this replay issued read as the recorded one."""
    if isinstance(value, str):
        return recorded_id(value)
    if isinstance(value, dict):
        return {key: _renamed(item, recorded_id) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, recorded_id) for item in value]
    return value


def _segments(path: str) -> tuple[str, ...]:
    return tuple(path.strip("/").split("/"))


def _pairs(query: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(parse_qsl(query, keep_blank_values=True)))
