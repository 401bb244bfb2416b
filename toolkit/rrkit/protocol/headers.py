"""Header names and values the protocol gives a meaning to, written once for the client and the server."""

TURN_STATE_HEADER = "x-codex-turn-state"
"""Sticky-routing token: issued on an HTTP response or a 101, sent back within the same turn only."""

OPENAI_BETA_HEADER = "openai-beta"
RESPONSES_WEBSOCKETS_BETA = "responses_websockets=2026-02-06"
"""The `OpenAI-Beta` value Codex sends on the WebSocket upgrade."""
