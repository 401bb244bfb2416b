"""Request bodies: the HTTP POST body and the WebSocket `response.create` frame, unknown fields kept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Item = dict[str, Any]
"""An input or output item, kept exactly as sent (items carry fields the API adds at any time)."""

RESPONSE_CREATE = "response.create"


class ResponsesRequest(BaseModel):
    """The body of `POST /responses`; every field the protocol names, plus any other field kept."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    instructions: str | None = None
    input: list[Item] | str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    reasoning: dict[str, Any] | None = None
    store: bool | None = None
    stream: bool | None = None
    include: list[str] | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = None
    text: dict[str, Any] | None = None
    client_metadata: dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None
    previous_response_id: str | None = None
    generate: bool | None = None


class ResponseCreateFrame(ResponsesRequest):
    """A WebSocket client frame `{"type": "response.create", ...}`."""

    type: Literal["response.create"]


# The incremental rule (PROTOCOL.md section 6) over an explicit, exhaustive field list:
# tests fail if ResponsesRequest gains a field that is in neither tuple.
COMPARED_FIELDS: tuple[str, ...] = (
    "model",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "store",
    "stream",
    "include",
    "service_tier",
    "prompt_cache_key",
    "text",
)
IGNORED_FIELDS: tuple[str, ...] = ("client_metadata", "stream_options", "generate", "previous_response_id")
INPUT_FIELD = "input"
WIRE_ONLY_FIELDS: tuple[str, ...] = ("type", "previous_response_id", "generate")
"""Fields that steer one wire request and are never part of the logical request."""


def input_items(body: dict[str, Any]) -> list[Item]:
    """The input of a body as a list of items (the SDK may send a plain string)."""
    value = body.get(INPUT_FIELD)
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value)


def is_warmup(body: Mapping[str, Any]) -> bool:
    return body.get("generate") is False
