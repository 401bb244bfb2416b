"""Responses Lite (docs/protocol.md: Responses Lite): the same prompt with instructions and tools moved into the
input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .request import INPUT_FIELD, Item, input_items

ADDITIONAL_TOOLS = "additional_tools"


def developer_message(text: str) -> Item:
    return {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]}


def to_lite(request: Mapping[str, Any]) -> dict[str, Any]:
    """Encode a standard request as Responses Lite.

    The `additional_tools` item is always there, empty when there are no tools, so a Lite request is
    recognisable as such and decodes back to the same content.
    """
    lite = {key: value for key, value in request.items() if key not in ("instructions", "tools")}
    prefix: list[Item] = []
    if request.get("instructions"):
        prefix.append(developer_message(str(request["instructions"])))
    prefix.append({"type": ADDITIONAL_TOOLS, "role": "developer", "tools": list(request.get("tools") or [])})
    lite[INPUT_FIELD] = [*prefix, *input_items(dict(request))]
    lite["parallel_tool_calls"] = False
    return lite


def is_lite(request: Mapping[str, Any]) -> bool:
    return any(item.get("type") == ADDITIONAL_TOOLS for item in input_items(dict(request))[:2])


def _developer_text(item: Item) -> str | None:
    if item.get("type", "message") != "message" or item.get("role") != "developer":
        return None
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "input_text":
        return str(content[0].get("text", ""))
    return None


def from_lite(request: Mapping[str, Any]) -> dict[str, Any]:
    """Decode a Lite request to the standard encoding, so both compare as the same logical content.

    `parallel_tool_calls` stays as sent: Lite forces it off, and that is a real difference to the model.
    """
    if not is_lite(request):
        return dict(request)
    standard = dict(request)
    items = input_items(dict(request))
    # is_lite found the additional_tools item at index 0 or 1; take it from there, whatever precedes it.
    position = 0 if items[0].get("type") == ADDITIONAL_TOOLS else 1
    standard["tools"] = list(items[position].get("tools") or [])
    if position == 1 and "instructions" not in request and (text := _developer_text(items[0])) is not None:
        standard["instructions"] = text
        del items[:2]
    else:
        del items[position]
    standard[INPUT_FIELD] = items
    return standard
