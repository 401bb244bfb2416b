"""Header names and values the protocol gives a meaning to, written once for the client and the server."""

import json
import re
from collections.abc import Mapping

from .jsontext import parse_json

TURN_STATE_HEADER = "x-codex-turn-state"
SESSION_HEADER = "x-rrkit-session"  # rrkit's own: the isolated session of a shared server a request is for
"""Sticky-routing token: issued on an HTTP response or a 101, sent back within the same turn only."""

OPENAI_BETA_HEADER = "openai-beta"
RESPONSES_WEBSOCKETS_BETA = "responses_websockets=2026-02-06"
"""The `OpenAI-Beta` value Codex sends on the WebSocket upgrade."""

SESSION_ID_HEADER = "session-id"
THREAD_ID_HEADER = "thread-id"
CLIENT_REQUEST_ID_HEADER = "x-client-request-id"
WINDOW_ID_HEADER = "x-codex-window-id"
TURN_METADATA_HEADER = "x-codex-turn-metadata"
"""A JSON object `{turn_id, request_kind}`; Codex 0.169 copies it into the body's `client_metadata` too."""
PREWARM_KIND = "prewarm"
TURN_KIND = "turn"

HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"})
"""Headers of one connection (RFC 9110 section 7.6.1) and its framing: each side's connection sets its own."""
SERVER_FRAMED = HOP_BY_HOP | {"content-type", "content-encoding", "date", "server"}
"""Response headers every server writes for itself (the connection, the framing, the body's type and encoding,
its clock and its name): never relayed nor replayed; every other response header is."""

MAX_HEADER_LINE = 8 * 1024
"""The longest header line a server of rrkit reads (name, `: `, value and CRLF), over HTTP and on a WebSocket
upgrade alike (the bound websockets puts on an upgrade's lines): past it, 431 and the connection closed."""
MAX_HEADER_FIELDS = 128
"""The most header lines of one request (websockets' bound on an upgrade's)."""
MAX_REQUEST_HEAD = 64 * 1024
"""The most bytes of a request's head (its request line and headers) read before it is complete."""


_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")


def is_header_value(value: str) -> bool:
    """May `value` (a model name, anything a request carried) be sent as an HTTP header value? RFC 9110's
    field-value, ASCII only: visible characters, spaces and tabs inside, none at either end; no CR, LF or NUL."""
    return _HEADER_VALUE.fullmatch(value) is not None


def is_transport_header(name: str, framed: frozenset[str] = SERVER_FRAMED) -> bool:
    """Whether a header (its name in lower case) belongs to the connection or the WebSocket handshake itself."""
    return name in framed or name.startswith("sec-websocket-")


def replayable_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The recorded response headers a replay sends again, names in lower case: every one but those the replaying
    server writes for itself and the turn state (sent apart); a value no header may carry (`is_header_value`: a
    hand-edited cassette) is left out rather than refused."""
    kept = {}
    for name, value in headers.items():
        key = name.lower()
        if not is_transport_header(key) and key != TURN_STATE_HEADER and is_header_value(value):
            kept[key] = value
    return kept


def media_type(content_type: str) -> str:
    """A Content-Type's media type, lower case, without its parameters: `text/event-stream; charset=utf-8` ->
    `text/event-stream`."""
    return content_type.split(";")[0].strip().lower()


def identity_headers(session_id: str, thread_id: str) -> dict[str, str]:
    """What every HTTP request and WebSocket upgrade of Codex 0.169 carries besides auth and turn metadata."""
    return {
        SESSION_ID_HEADER: session_id,
        THREAD_ID_HEADER: thread_id,
        CLIENT_REQUEST_ID_HEADER: thread_id,
        WINDOW_ID_HEADER: f"{thread_id}:0",
    }


def turn_metadata(turn_id: str, request_kind: str) -> str:
    """The `x-codex-turn-metadata` value: `request_kind` prewarm (with an empty `turn_id`) or turn."""
    return json.dumps({"turn_id": turn_id, "request_kind": request_kind}, separators=(",", ":"))


def is_prewarm(headers: Mapping[str, str]) -> bool:
    """Whether request headers say they belong to a prewarm (`x-codex-turn-metadata` request_kind)."""
    raw = {name.lower(): value for name, value in headers.items()}.get(TURN_METADATA_HEADER)
    try:
        metadata = parse_json(raw, what="header") if raw else None
    except ValueError:  # UnsafeJSON too: nested too deep, ...
        return False
    return isinstance(metadata, dict) and metadata.get("request_kind") == PREWARM_KIND
