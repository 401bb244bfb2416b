"""The items a request's `input` may hold, by type, with the fields each one needs: checked as the API checks
them, an unknown type, a missing field or a wrong-typed one answered with a 400 naming `input[N].field`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .exceptions import INVALID_VALUE, BadRequest
from .request import json_type

MESSAGE = "message"
ITEM_REFERENCE = "item_reference"
ITEM_NOT_FOUND = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` "
    "set to true, or remove this item from your input."
)
"""The service's 400 for an item reference (or an item sent back by id) it holds nothing for (`param: input`, no
code; quoted in router-for-me/CLIProxyAPI#2381)."""

INPUT_ITEMS: dict[str, tuple[str, ...]] = {
    MESSAGE: ("role", "content"),
    "function_call": ("call_id", "name", "arguments"),
    "function_call_output": ("output",),
    "custom_tool_call": ("call_id", "name", "input"),
    "custom_tool_call_output": ("call_id", "output"),
    "reasoning": ("summary",),
    "compaction": ("encrypted_content",),
    "compaction_trigger": (),
    "file_search_call": ("queries",),
    "web_search_call": ("action",),
    "computer_call": ("call_id", "pending_safety_checks"),
    "computer_call_output": ("call_id", "output"),
    "tool_search_call": ("arguments",),
    "tool_search_output": ("tools",),
    "additional_tools": ("role", "tools"),
    "configuration_update": (),
    "image_generation_call": ("result",),
    "code_interpreter_call": ("code", "container_id", "outputs"),
    "local_shell_call": ("call_id", "action"),
    "local_shell_call_output": ("output",),
    "shell_call": ("call_id", "action"),
    "shell_call_output": ("call_id", "output"),
    "apply_patch_call": ("call_id", "operation"),
    "apply_patch_call_output": ("call_id",),
    "mcp_list_tools": ("server_label", "tools"),
    "mcp_approval_request": ("server_label", "name", "arguments"),
    "mcp_approval_response": ("approval_request_id", "approve"),
    "mcp_call": ("server_label", "name", "arguments"),
    "program": ("call_id", "code", "fingerprint"),
    "program_output": ("call_id", "result"),
    ITEM_REFERENCE: ("id",),
}
"""Every input item type of the official SDK's `ResponseInputItemParam` (openai 3.63) and the fields it requires,
but `id` and `status`: an item a client sends back from an earlier answer may leave them out (Codex sends its
history without them, with `store: false`), and the service takes it (a test holds the table to the SDK's)."""


STRING = "a string"
PARTS_OR_STRING = "one of an array of objects or string"
STRING_OR_PARTS = "one of a string or array of objects"
FIELD_TYPES: dict[str, dict[str, str]] = {
    MESSAGE: {"role": STRING, "content": PARTS_OR_STRING},
    "function_call": {"call_id": STRING, "name": STRING, "arguments": STRING},
    "function_call_output": {"call_id": STRING, "output": STRING_OR_PARTS},
    "custom_tool_call": {"call_id": STRING, "name": STRING, "input": STRING},
    "custom_tool_call_output": {"call_id": STRING, "output": STRING_OR_PARTS},
}
"""The types of the fields of the items clients send most, where present (null is a wrong type: `Invalid type for
'input[4].content': expected one of an array of objects or string, but got null instead.`, and for an output
`expected one of a string or array of objects`, as the service words them). A list is of content parts."""

PART_TYPES: dict[str, dict[str, str]] = {
    "input_text": {"text": STRING},
    "output_text": {"text": STRING},
    "refusal": {"refusal": STRING},
    "input_image": {"image_url": STRING, "file_id": STRING, "detail": STRING},
    "input_file": {"file_id": STRING, "file_data": STRING, "file_url": STRING, "filename": STRING},
}
"""The types of a content part's fields (`input[0].content[0].text`: `expected a string`, as the service words
it); the text of a text part is required, an image's or a file's fields may be null."""
_REQUIRED_IN_PART = frozenset({"text", "refusal"})
_NONE: dict[str, str] = {}


def check_input_items(items: list[Any], field: str = "input") -> None:
    """BadRequest for the first item of `input` (or of another `field` holding input items: a conversation's
    `items`) that is not an object, has no type the API knows, lacks a field its type requires (`param` names it:
    `input[2].call_id`), or has a field of the wrong type (`FIELD_TYPES`, `PART_TYPES`: `input[0].content[0].text`).
    An item without `type` is a message if it has a `role` (the short form), else a reference to a stored item if
    it has an `id`."""
    for index, item in enumerate(items):
        place = f"{field}[{index}]"
        if not isinstance(item, dict):
            raise BadRequest.wrong_type(f"'{place}'", "an input item", json_type(item), place)
        kind = item.get("type", MESSAGE if "role" in item else ITEM_REFERENCE if "id" in item else None)
        if kind is None:
            raise BadRequest.missing(f"{place}.type")
        required = INPUT_ITEMS.get(kind) if isinstance(kind, str) else None
        if required is None:
            known = ", ".join(f"'{name}'" for name in INPUT_ITEMS)
            message = f"Invalid value: {kind!r}. Supported values are: {known}."
            raise BadRequest(message, param=f"{place}.type", code=INVALID_VALUE)
        for name in required:
            if name not in item:
                raise BadRequest.missing(f"{place}.{name}")
        for name, expected in FIELD_TYPES.get(kind, _NONE).items():
            value = item.get(name, "")
            if type(value) is not str:
                _check_field(value, expected, f"{place}.{name}")


INPUT_ONLY = frozenset({"compaction_trigger"})
"""Input item types that ask for something (a compaction) rather than state an item: no conversation keeps them."""


def check_storable(items: list[Any], field: str) -> None:
    """BadRequest for the first item no conversation keeps (`INPUT_ONLY`), naming its `type`."""
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") in INPUT_ONLY:
            message = f"Invalid value: {item['type']!r}. It asks for a compaction and is not an item to keep."
            raise BadRequest(message, param=f"{field}[{index}].type", code=INVALID_VALUE)


def _check_field(value: object, expected: str, place: str) -> None:
    """A field that is not a string: a list of content parts where it may be one, else a wrong type."""
    if expected == STRING or type(value) is not list:
        raise BadRequest.wrong_type(f"'{place}'", expected, json_type(value), place)
    for index, part in enumerate(value):
        if type(part) is not dict:
            where = f"{place}[{index}]"
            raise BadRequest.wrong_type(f"'{where}'", "an object", json_type(part), where)
        for name, kind in PART_TYPES.get(part.get("type"), _NONE).items():  # type: ignore[arg-type]
            text = part.get(name)
            if type(text) is not str and (text is not None or (name in _REQUIRED_IN_PART and name in part)):
                where = f"{place}[{index}].{name}"
                raise BadRequest.wrong_type(f"'{where}'", kind, json_type(text), where)


def is_reference(item: object) -> bool:
    """An `item_reference` (or the short form: an object with only an `id`)."""
    if not isinstance(item, dict):
        return False
    return item.get("type") == ITEM_REFERENCE or ("type" not in item and "role" not in item and "id" in item)


def resolve_references(items: list[Any], find: Callable[[str], dict[str, Any] | None]) -> list[Any]:
    """`items` with each reference replaced by the stored item it names (`find`); BadRequest, the service's
    words, for one no store holds."""
    if not any(is_reference(item) for item in items):
        return items
    resolved = []
    for item in items:
        if is_reference(item):
            found = find(str(item["id"]))
            if found is None:
                raise BadRequest(ITEM_NOT_FOUND.format(id=item["id"]), param="input")
            item = found
        resolved.append(item)
    return resolved
