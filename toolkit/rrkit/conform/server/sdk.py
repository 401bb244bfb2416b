"""The official `openai` SDK's types as a check: whether an event or a body parses as the SDK's model for it
(what the SDK runs with strict response validation). Without the SDK installed there is nothing to check."""

from __future__ import annotations

import functools
import importlib
from typing import Any, Literal, get_args

import pydantic

from ...protocol.routes import route_of


@functools.cache
def event_models(websocket: bool = False) -> dict[str, type[pydantic.BaseModel]] | None:
    """The SDK's event models by event type (SSE's `ResponseStreamEvent`; `websocket`: `ResponsesServerEvent`, its
    steering answers and error frame included), or None without the SDK."""
    try:
        from openai.types.responses import ResponsesServerEvent, ResponseStreamEvent
    except ImportError:
        return None
    union = get_args(ResponsesServerEvent if websocket else ResponseStreamEvent)[0]  # Annotated[Union[...], ...]
    models = {}
    for model in get_args(union):
        for literal in get_args(model.model_fields["type"].annotation):
            models[str(literal)] = model
    return models


def sdk_version() -> str | None:
    try:
        import openai
    except ImportError:
        return None
    return str(openai.__version__)


def known_event_types() -> frozenset[str] | None:
    """Every event type the SDK defines (None without the SDK)."""
    models = event_models()
    return frozenset(models) if models is not None else None


def event_problems(event: dict[str, Any]) -> list[str] | None:
    """Why the SDK refuses `event` (`field: message`), [] when it parses; None when there is no SDK model for its
    type (no SDK installed, or a type the SDK does not define)."""
    models = event_models()
    model = models.get(str(event.get("type"))) if models is not None else None
    if model is None:
        return None
    return _problems(model, event)


def body_problems(body: Any, kind: Literal["response", "error"]) -> list[str] | None:
    """Why the SDK refuses a whole body as a `Response` (`kind="response"`) or an error object as its
    `ErrorObject` (`kind="error"`, the object under a refusal's `error`); None without the SDK."""
    try:
        from openai.types import ErrorObject
        from openai.types.responses import Response
    except ImportError:
        return None
    return _problems(Response if kind == "response" else ErrorObject, body)


_ROUTE_TYPES = {
    "responses.retrieve": "openai.types.responses:Response",
    "responses.cancel": "openai.types.responses:Response",
    "responses.input_tokens": "openai.types.responses:InputTokenCountResponse",
    "conversations.create": "openai.types.conversations:Conversation",
    "conversations.retrieve": "openai.types.conversations:Conversation",
    "conversations.update": "openai.types.conversations:Conversation",
    "conversations.delete": "openai.types.conversations:ConversationDeletedResource",
    "conversations.items.list": "openai.types.conversations:ConversationItemList",
    "conversations.items.create": "openai.types.conversations:ConversationItemList",
    "models.retrieve": "openai.types:Model",
}
"""The SDK type each route's answer parses as (compaction is left out: the SDK's CompactedResponse admits only
assistant messages, while the service returns the user messages too)."""


def route_body_problems(request: str, body: Any) -> list[str] | None:
    """Why the SDK refuses `body` as the answer to `request` (`GET /responses/resp_1`); None without the SDK or
    without a type for the route."""
    method, _, target = request.partition(" ")
    route = route_of(method, target.partition("?")[0]).name
    if route not in _ROUTE_TYPES:
        return None
    module, _, name = _ROUTE_TYPES[route].partition(":")
    try:
        model = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return _problems(model, body)


def _problems(model: type[pydantic.BaseModel], value: Any) -> list[str]:
    try:
        model.model_validate(value)
    except pydantic.ValidationError as error:
        return [
            f"{'.'.join(map(str, problem['loc'])) or '(the whole)'}: {problem['msg']}" for problem in error.errors()[:3]
        ]
    return []


__all__ = ["body_problems", "event_models", "event_problems", "known_event_types", "route_body_problems", "sdk_version"]
