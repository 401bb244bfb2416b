"""An exchange as `rrkit diff` compares it: the signature exchanges are aligned by, its headers and body as
compared, its events as a stream, and the line that stands for what only one side has."""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

import orjson

from ..cassette.format import Cassette, RecordedBody, RecordedConnection, RecordedExchange
from ..cassette.normalize import VOLATILE_HEADERS
from ..protocol import events as ev
from ..protocol.headers import (
    CLIENT_REQUEST_ID_HEADER,
    SESSION_ID_HEADER,
    THREAD_ID_HEADER,
    TURN_METADATA_HEADER,
    WINDOW_ID_HEADER,
)
from ..protocol.jsondiff import align, pairs_of
from ..protocol.jsondiff_text import shown
from ..protocol.request import input_items
from .diff_report import View
from .diff_values import VOLATILE_KEYS, Comparer

NEGOTIATION_HEADERS = ("accept", "accept-encoding", "connection", "keep-alive", "te")
"""What an HTTP library negotiates for itself (how the body may be encoded, whether the connection stays
open): the client's library, not the client's protocol behaviour."""
VOLATILE_HEADER_PATTERNS: tuple[str, ...] = (
    *sorted(VOLATILE_HEADERS),
    *NEGOTIATION_HEADERS,
    "sec-websocket-*",
    "x-stainless-*",
)
"""Headers not compared unless strict: per run (host, date, request id, WebSocket keys, length, user agent),
negotiated by the HTTP library (`NEGOTIATION_HEADERS`), or per machine and SDK release (`x-stainless-*`)."""
SESSION_HEADERS = frozenset(
    {SESSION_ID_HEADER, THREAD_ID_HEADER, CLIENT_REQUEST_ID_HEADER, WINDOW_ID_HEADER, TURN_METADATA_HEADER}
)
"""Codex's per-session identity headers: whether a request carries them is compared, not their values (ids new
in every session, unless strict)."""


def exchange_signature(exchange: RecordedExchange, comparer: Comparer, view: View) -> tuple[str, bytes, str]:
    """What exchanges are aligned by: transport, a digest of the compared request (on another route than the create:
    its method, route, path, query and body), how it ended."""
    request: Any = exchange.wire_request if view == "wire" else exchange.logical_request
    if not exchange.is_create:
        request = route_request(exchange)
    if isinstance(request, dict):
        if not comparer.strict:
            request = {key: value for key, value in request.items() if key not in VOLATILE_KEYS}
        for path in comparer.ignore:
            request = path.drop(request)
    digest = hashlib.blake2b(comparer.signature(request), digest_size=16).digest()
    return exchange.transport, digest, exchange.outcome.kind.value if exchange.outcome else ""


def aligned_exchanges(
    a: Sequence[tuple[str, bytes, str]], b: Sequence[tuple[str, bytes, str]]
) -> list[tuple[int | None, int | None]]:
    """Exchange positions aligned on their signatures; where a stretch differs, aligned again on the request alone
    (a warmup only one side sent, an exchange that ended otherwise or went over another transport)."""
    positions: list[tuple[int | None, int | None]] = []
    for code in align(a, b):
        tag, i1, i2, j1, j2 = code
        if tag != "replace":
            positions += pairs_of([code])
            continue
        coarse = align([signature[1] for signature in a[i1:i2]], [signature[1] for signature in b[j1:j2]])
        positions += [(None if i is None else i + i1, None if j is None else j + j1) for i, j in pairs_of(coarse)]
    return positions


def route_request(exchange: RecordedExchange) -> dict[str, Any]:
    """A request on another route than the create as aligned: its path in segments and its query in pairs (each id
    masked on its own)."""
    return {
        "method": exchange.method,
        "route": exchange.route,
        "path": exchange.path.strip("/").split("/"),
        "query": [list(pair) for pair in parse_qsl(exchange.query or "", keep_blank_values=True)],
        "body": exchange.wire_request if exchange.wire_request is not None else exchange.raw_body,
    }


def describe_exchange(exchange: RecordedExchange) -> str:
    """One line for an exchange only one side has."""
    parts = [f"{exchange.transport} exchange {exchange.id}"]
    if exchange.connection is not None:
        parts[0] += f" on connection {exchange.connection}"
    if not exchange.is_create:
        parts.append(f"{exchange.request_line} ({exchange.route})")
    elif exchange.wire_request is not None:
        parts.append("incremental" if exchange.incremental else "full")
    parts.append(f"{len(exchange.events)} events")
    if exchange.outcome is not None:
        parts.append(exchange.outcome.kind.value)
    return ", ".join(parts)


def wire_form(exchange: RecordedExchange) -> str:
    wire = exchange.wire_request or {}
    count = len(input_items(dict(wire)))
    items = f"{count} input item{'' if count == 1 else 's'}"
    if exchange.incremental:
        return f"incremental: previous_response_id {wire['previous_response_id']}, {items}"
    return f"full: {items}"


def header_map(headers: Mapping[str, str], strict: bool) -> dict[str, str]:
    lowered = {name.lower(): value for name, value in headers.items()}
    if strict:
        return lowered
    return {
        name: "*" if name in SESSION_HEADERS else value
        for name, value in lowered.items()
        if not any(fnmatch.fnmatchcase(name, pattern) for pattern in VOLATILE_HEADER_PATTERNS)
    }


def body_value(body: RecordedBody | None) -> Any:
    if body is None:
        return None
    data: dict[str, Any] = {"content_type": body.content_type}
    for name, value in (("json", body.json_value), ("text", body.text), ("base64", body.base64)):
        if value is not None:
            data[name] = value
    return data


class EventStream:
    """An exchange's events as compared: compact JSON and type, SSE keep-alive comments left out unless strict."""

    __slots__ = ("ats", "indices", "raws", "said", "types")

    def __init__(self, exchange: RecordedExchange, strict: bool) -> None:
        self.said: list[bytes] = []  # what each event says (`Comparer.signature_of_text`), when aligned on it
        self.indices: list[int] = []
        self.raws: list[str] = []
        self.types: list[str] = []
        self.ats: list[float] = []
        for index, recorded in enumerate(exchange.events):
            raw = recorded.raw
            kind = _type_of(raw)
            if kind == ev.SSE_COMMENT and not strict:
                continue
            self.indices.append(index)
            self.raws.append(raw)
            self.types.append(kind)
            self.ats.append(recorded.at)


_TYPE_HEAD = '{"type":"'


def _type_of(raw: str) -> str:
    # Events are kept as compact JSON, nearly always with `type` first: read it without parsing the event.
    if raw.startswith(_TYPE_HEAD):
        end = raw.find('"', len(_TYPE_HEAD))
        if end > 0 and "\\" not in raw[len(_TYPE_HEAD) : end]:
            return raw[len(_TYPE_HEAD) : end]
    return str(orjson.loads(raw).get("type"))


def unused_connections(cassette: Cassette) -> list[RecordedConnection]:
    used = {exchange.connection for exchange in cassette.exchanges}
    return [connection for connection in cassette.connections if connection.id not in used]


def describe_connection(connection: RecordedConnection) -> str:
    text = f"connection {connection.id}: handshake {connection.handshake.status}"
    if connection.closed_by is not None:
        text += f", closed by {connection.closed_by}" + (f" ({connection.close_code})" if connection.close_code else "")
    return text


_TELLING_KEYS = ("type", "delta", "text", "arguments", "input", "refusal", "code", "message", "item", "part")


def event_shown(raw: str) -> str:
    """An event only one side sent, bounded: what it says first (type, delta, text, ...), its bookkeeping last."""
    event: dict[str, Any] = orjson.loads(raw)
    telling = {key: event[key] for key in _TELLING_KEYS if key in event}
    return shown({**telling, **event}, limit=120)
