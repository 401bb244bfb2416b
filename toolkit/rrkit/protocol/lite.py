"""Responses Lite (docs/protocol.md: Responses Lite): the same prompt with instructions and tools moved into the
input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .request import INPUT_FIELD, Item, input_items

ADDITIONAL_TOOLS = "additional_tools"
LITE_HEADER = "x-openai-internal-codex-responses-lite"
"""`true` on a Lite request over HTTP (Codex 0.169.0 and 0.171.0, observed)."""
LITE_METADATA = "ws_request_header_" + LITE_HEADER.replace("-", "_")
"""The same, as a WebSocket request's `client_metadata` key (a frame has no headers of its own)."""
ALL_TURNS = "all_turns"
"""Lite's `reasoning.context`: the reasoning context set explicitly for all turns (the standard encoding leaves
it to the service)."""


def developer_message(text: str) -> Item:
    return {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]}


def to_lite(request: Mapping[str, Any]) -> dict[str, Any]:
    """Encode a standard request as Responses Lite, as Codex 0.169.0 and 0.171.0 send it (observed): the
    `additional_tools` item first, then the instructions as a developer message, then the input;
    `parallel_tool_calls` off and `reasoning.context` `all_turns`.

    The `additional_tools` item is always there, empty when there are no tools, so a Lite request is
    recognisable as such and decodes back to the same content.
    """
    lite = {key: value for key, value in request.items() if key not in ("instructions", "tools")}
    prefix: list[Item] = [{"type": ADDITIONAL_TOOLS, "role": "developer", "tools": list(request.get("tools") or [])}]
    if request.get("instructions"):
        prefix.append(developer_message(str(request["instructions"])))
    lite[INPUT_FIELD] = [*prefix, *input_items(dict(request))]
    lite["parallel_tool_calls"] = False
    reasoning = request.get("reasoning")
    lite["reasoning"] = {**(reasoning if isinstance(reasoning, Mapping) else {}), "context": ALL_TURNS}
    return lite


def without_lite_settings(request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` without what Lite sets on purpose beyond moving instructions and tools (`parallel_tool_calls`,
    `reasoning.context`): real differences to the model, left out where only the content is compared."""
    plain = {key: value for key, value in request.items() if key != "parallel_tool_calls"}
    reasoning = plain.get("reasoning")
    if reasoning is None:  # null: the service's default, as when it is left out
        plain.pop("reasoning", None)
    elif isinstance(reasoning, Mapping) and "context" in reasoning:
        rest = {key: value for key, value in reasoning.items() if key != "context"}
        if rest:
            plain["reasoning"] = rest
        else:
            del plain["reasoning"]
    return plain


def is_lite(request: Mapping[str, Any]) -> bool:
    return any(item.get("type") == ADDITIONAL_TOOLS for item in input_items(dict(request))[:2])


def from_lite(request: Mapping[str, Any]) -> dict[str, Any]:
    """Decode a Lite request to the standard encoding: the `additional_tools` item back into `tools`. The
    instructions message stays in the input (a standard request may carry its instructions there too: Codex
    0.169.0 does); `instructions_in_input` puts a standard request's in the same place, so both compare.

    `parallel_tool_calls` and `reasoning.context` stay as sent: Lite sets them, real differences to the model
    (`without_lite_settings` leaves them out).
    """
    if not is_lite(request):
        return dict(request)
    standard = dict(request)
    items = input_items(dict(request))
    # is_lite found the additional_tools item at index 0 (as Codex sends it) or 1 (after the instructions, as
    # rrkit sent it before Codex was observed)
    position = 0 if items[0].get("type") == ADDITIONAL_TOOLS else 1
    standard["tools"] = list(items[position].get("tools") or [])
    del items[position]
    standard[INPUT_FIELD] = items
    return standard


def instructions_in_input(request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` with its top-level `instructions` as a leading developer message instead: where Lite, and
    Codex's standard requests, carry them."""
    moved = dict(request)
    instructions = moved.pop("instructions", None)
    if instructions:
        moved[INPUT_FIELD] = [developer_message(str(instructions)), *input_items(dict(request))]
    return moved
