"""Request bodies: the HTTP POST body and the WebSocket `response.create` frame, unknown fields kept (checked by
`request_check`, the models in `request_model`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

Item = dict[str, Any]
"""An input or output item, kept exactly as sent (items carry fields the API adds at any time)."""

RESPONSE_CREATE = "response.create"


# The incremental rule (docs/protocol.md: When a request may be incremental) over an explicit, exhaustive field list:
# tests fail if ResponsesRequest (request_model.py) gains a field that is in neither tuple.
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
WIRE_ONLY_FIELDS: tuple[str, ...] = ("type", "previous_response_id", "generate", "stream_id")
"""Fields that steer one wire request and are never part of the logical request (`stream_id`: the WebSocket lane
it goes on)."""


TYPED_FIELDS: tuple[str, ...] = (
    "model",
    "stream",
    "store",
    "parallel_tool_calls",
    "generate",
    "temperature",
    "top_p",
    "max_output_tokens",  # the last three are request_model.SamplingFields (a test keeps them in step)
)
"""What a lenient check may coerce (`"yes"` to true, `"0.5"` to 0.5): fields with a scalar type."""


_JSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "a boolean"),  # before int: a bool is an int to isinstance
    (int, "an integer"),
    (float, "a decimal"),
    (str, "a string"),
    (list, "an array"),
    (dict, "an object"),
)


def json_type(value: object) -> str:
    """How the API names the JSON type of a value in its messages."""
    return next((name for kind, name in _JSON_TYPE_NAMES if isinstance(value, kind)), type(value).__name__)


def input_items(body: dict[str, Any]) -> list[Item]:
    """The input of a body as a list of items (the SDK may send a plain string)."""
    value = body.get(INPUT_FIELD)
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value)


def message_text(item: Mapping[str, Any]) -> str:
    """The text of a message item: its content when a string, else its parts' text (or refusal) joined."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(part.get("text") or part.get("refusal") or "") for part in content if isinstance(part, dict))


def item_key(item: Mapping[str, Any]) -> str:
    """What makes two input items the same item, whatever form each was sent in (with or without its `id` and
    `status`, its content a string or parts): a message is its role and text, a call or its output its type and
    `call_id`, anything else itself without `id` and `status`."""
    kind = item.get("type", "message")
    if kind == "message":
        return json.dumps([kind, item.get("role"), message_text(item)])
    if item.get("call_id") is not None:
        return json.dumps([kind, item.get("call_id")])
    rest = {key: value for key, value in item.items() if key not in ("id", "status")}
    return json.dumps(rest, sort_keys=True, default=str)


COMPACTION_ITEM = "compaction"
"""The item a compaction answers with: its `encrypted_content` stands for the history it replaced, sent back as it
came."""
COMPACTION_TRIGGER = "compaction_trigger"
"""The input item that asks the response for a compaction of what comes before it (observed, Codex 0.169.0 and
0.171.0 with a provider whose `capabilities.remote_compaction = "v2"`: a create whose input ends with it, and whose
output must be exactly one `compaction` item)."""


def is_compaction_request(body: Mapping[str, Any]) -> bool:
    """Whether the request's last input item is a `compaction_trigger`."""
    value = body.get(INPUT_FIELD)
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[-1], Mapping)
        and (value[-1].get("type") == COMPACTION_TRIGGER)
    )


RETAINED_ROLES = frozenset({"developer", "system", "user"})
"""The messages a remote compaction keeps (observed, Codex 0.169.0 and 0.171.0): the context and the user's words;
the model's output (assistant messages, reasoning, tool calls and their outputs) gives way to the compaction."""


def compaction_trigger() -> Item:
    return {"type": COMPACTION_TRIGGER}


def retained_by_compaction(item: Mapping[str, Any]) -> bool:
    """Whether a compaction keeps `item` as it is (a developer, system or user message); every other item of the
    history before it gives way to the compaction item."""
    return item.get("type", "message") == "message" and item.get("role") in RETAINED_ROLES


def compacted_history(history: Sequence[Item], compaction: Item) -> list[Item]:
    """The history after a remote compaction, as Codex rebuilds it: its developer, system and user messages in
    order, then the one `compaction` item the compaction answered with."""
    return [*(item for item in history if retained_by_compaction(item)), dict(compaction)]


def is_warmup(body: Mapping[str, Any]) -> bool:
    """A request that generates nothing: `generate: false`, or `prompt_cache_options.prewarm: true` (which sets
    `generate` to false, as the SDK documents it)."""
    if body.get("generate") is False:
        return True
    options = body.get("prompt_cache_options")
    return isinstance(options, Mapping) and options.get("prewarm") is True
