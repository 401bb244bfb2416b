"""Header names and values the protocol gives a meaning to, written once for the client and the server."""

import json
from collections.abc import Mapping

TURN_STATE_HEADER = "x-codex-turn-state"
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
        metadata = json.loads(raw) if raw else None
    except ValueError:
        return False
    return isinstance(metadata, dict) and metadata.get("request_kind") == PREWARM_KIND
