"""Three references others wrote, as checks a test can hold a served body or event to: the OpenAPI description
(rrkit.references, the vendored excerpt), the OpenResponses models (`openresponses-types`) and the newest official
SDK's types, strictly. Each says what it finds as `path: problem` lines; what lies outside a reference's scope is
left out by the rules below, each with its reason."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, Literal, get_args

import openresponses_types.types as ort
import pydantic
from openai import pagination
from openai._models import validate_type  # what the SDK runs when `_strict_response_validation=True`
from openai.types import Model, ModelDeleted
from openai.types.conversations import Conversation, ConversationDeletedResource, ConversationItem
from openai.types.responses import (
    InputTokenCountResponse,
    Response,
    ResponseError,
    ResponseItem,
)

from rrkit.conform.server.sdk import event_models
from rrkit.references import BodyKind, check_body, check_event

Transport = Literal["http", "ws"]

SIDE_CHANNEL = frozenset({"response.metadata", "codex.response.metadata", "codex.rate_limits"})
"""Frames the service sends beside a response's events (PROTOCOL.md section 5): no reference types them."""

OPENRESPONSES_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning", "compaction"})
"""The output item types OpenResponses defines: hosted tools and the client calls beyond functions are outside it."""
OPENRESPONSES_TOOLS = frozenset({"function"})
"""The tool types OpenResponses defines (its `Tool` is a function tool)."""

Problems = list[str]


def openapi_event(event: Mapping[str, Any]) -> Problems:
    """The OpenAPI description's reading of an event: its `must` violations (a client with a strict schema breaks)."""
    return [str(v) for v in check_event(event) if v.severity == "must"]


def openapi_body(kind: BodyKind, body: Any) -> Problems:
    return [str(v) for v in check_body(kind, body) if v.severity == "must"]


# -- OpenResponses -------------------------------------------------------------------------------------------------


@functools.cache
def _openresponses_events() -> dict[str, type[pydantic.BaseModel]]:
    """OpenResponses' streaming event models by type, WebSocket's error frame included."""
    found: dict[str, type[pydantic.BaseModel]] = {}
    for name in dir(ort):
        model = getattr(ort, name)
        is_event = name.endswith("StreamingEvent") or name == "WebSocketErrorEvent"
        if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel) and is_event):
            continue
        for member in _literals(model.model_fields["type"].annotation):
            found[f"{member}:ws" if name == "WebSocketErrorEvent" else member] = model
    return found


def _literals(annotation: Any) -> list[str]:
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(member.value) for member in annotation]
    args = get_args(annotation)
    return [str(arg) for arg in args] if args else []


def in_openresponses_scope(response: Mapping[str, Any]) -> dict[str, Any]:
    """The response as OpenResponses can read it: only the output items and tools it defines."""
    return {
        **response,
        "output": [item for item in response.get("output") or [] if item.get("type") in OPENRESPONSES_ITEMS],
        "tools": [tool for tool in response.get("tools") or [] if tool.get("type") in OPENRESPONSES_TOOLS],
    }


OPENRESPONSES_FLAT_ERROR = "error"
"""The SSE `error` event: OpenResponses nests its fields in an `error` object, while the service documents them flat
(`{type: error, code, message, param, sequence_number}`: the OpenAPI description and the SDK's `ResponseErrorEvent`).
The service's documented shape wins; OpenResponses reads the WebSocket error frame, which does nest them."""


def openresponses_event(event: Mapping[str, Any], transport: Transport) -> Problems | None:
    """OpenResponses' reading of an event; None where it defines no such event (or no such item)."""
    kind = str(event.get("type"))
    if kind == OPENRESPONSES_FLAT_ERROR and transport == "http":
        return None
    model = _openresponses_events().get(f"{kind}:ws" if kind == "error" and transport == "ws" else kind)
    if model is None:
        return None
    item = event.get("item")
    if isinstance(item, Mapping) and item.get("type") not in OPENRESPONSES_ITEMS:
        return None
    if isinstance(event.get("response"), Mapping):
        event = {**event, "response": in_openresponses_scope(event["response"])}
    return _pydantic(lambda: model.model_validate(event, strict=False))


def openresponses_response(response: Mapping[str, Any]) -> Problems:
    return _pydantic(lambda: ort.ResponseResource.model_validate(in_openresponses_scope(response)))


# -- the official SDK, strict ----------------------------------------------------------------------------------------

_SDK_BODIES: dict[BodyKind, Any] = {
    "response": Response,
    "item_list": pagination.SyncCursorPage[ResponseItem],
    "input_tokens": InputTokenCountResponse,
    "conversation": Conversation,
    "deleted_conversation": ConversationDeletedResource,
    "conversation_item": ConversationItem,
    "conversation_item_list": pagination.SyncConversationCursorPage[ConversationItem],
    "model": Model,
    "model_list": pagination.SyncPage[Model],
    "deleted_model": ModelDeleted,
}
"""The SDK type each kind of body parses as. `compaction` is left out: the SDK's `CompactedResponse` admits only
assistant messages in its output, while its own docstring and the spec's example put the user messages first (the
service's documented behaviour wins); `error` bodies are read by the SDK as plain JSON."""


SDK_FAILURE_CODES = frozenset(_literals(ResponseError.model_fields["code"].annotation))
"""The failure codes the SDK's `ResponseError` admits. The service sends others (`context_length_exceeded`,
`insufficient_quota`, `server_is_overloaded`: PROTOCOL.md section 7) and clients act on them, so a failure's code is
read here as one the SDK knows, every other field of the event still held to the SDK's type."""


def sdk_event(event: Mapping[str, Any], transport: Transport) -> Problems | None:
    """The SDK's strict reading of an event, by its type; None for a side-channel frame the SDK does not type."""
    if event.get("type") in SIDE_CHANNEL:
        return None
    model = (event_models(websocket=transport == "ws") or {}).get(str(event.get("type")))
    if model is None:
        return [f"type: {event.get('type')!r} is no event type of the SDK"]
    error = (event.get("response") or {}).get("error") if event.get("type") == "response.failed" else None
    if isinstance(error, Mapping) and error.get("code") not in SDK_FAILURE_CODES:
        event = {**event, "response": {**event["response"], "error": {**error, "code": "server_error"}}}
    return _strict(model, event)


def sdk_body(kind: BodyKind, body: Any) -> Problems | None:
    model = _SDK_BODIES.get(kind)
    return None if model is None else _strict(model, body)


def _strict(model: Any, value: Any) -> Problems:
    """What `validate_type` (the SDK's strict validation) and pydantic strict mode refuse in `value`."""
    problems = _pydantic(lambda: validate_type(type_=model, value=value))
    return problems or _pydantic(lambda: pydantic.TypeAdapter(model).validate_python(value, strict=True))


def _pydantic(validate: Callable[[], object]) -> Problems:
    try:
        validate()
    except pydantic.ValidationError as error:
        return [
            f"{'.'.join(map(str, problem['loc'])) or '(the whole)'}: {problem['msg']}" for problem in error.errors()
        ]
    return []
