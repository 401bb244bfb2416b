"""The `Response` object as the service returns it: every field it always carries, each the request's value echoed
or the service's default (the OpenAPI description's `Response`, the OpenResponses `ResponseResource`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from .request import Item

DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "background": False,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "safety_identifier": None,
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "top_logprobs": 0,
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "truncation": "disabled",
    }
)
"""What the service answers for a field the request left out (or sent as null): the defaults its reference states."""

TEXT_DEFAULT: Mapping[str, Any] = MappingProxyType({"format": {"type": "text"}, "verbosity": "medium"})
REASONING_DEFAULT: Mapping[str, Any] = MappingProxyType({"effort": None, "summary": None})
FUNCTION_TOOL_DEFAULTS: Mapping[str, Any] = MappingProxyType({"description": None, "parameters": None, "strict": True})
"""An echoed function tool's fields the request may leave out (the Responses API's function tools are strict unless
the request says otherwise)."""

SERVICE_TIER_CHOSEN = "default"
"""The tier a response reports when the request asked the service to choose (`auto`)."""
PROMPT_CACHE_DEFAULT: Mapping[str, Any] = MappingProxyType({"ttl": "30m", "mode": "implicit"})
OPTIONAL_ECHOES = ("user", "prompt", "prompt_cache_retention")
"""Fields echoed only when the request sets them (the service leaves them out, or null, otherwise). Not `moderation`:
the response's holds the moderation's results, not the request's settings."""


def echoed_tools(tools: object) -> list[Any]:
    """The request's tools as the response lists them: a function tool with every field of its type."""
    if not isinstance(tools, list):
        return []
    return [
        {**FUNCTION_TOOL_DEFAULTS, **tool} if isinstance(tool, Mapping) and tool.get("type") == "function" else tool
        for tool in tools
    ]


def conversation_id(value: object) -> str | None:
    """The id a create's `conversation` names: the string itself, or its object's `id`."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("id"), str):
        return str(value["id"])
    return None


def echoed_request(wire: Mapping[str, Any], logical: Mapping[str, Any]) -> dict[str, Any]:
    """What a response echoes: the logical request, and the `previous_response_id` the wire request named (the
    logical request holds what it stands for instead)."""
    previous = wire.get("previous_response_id")
    return {**logical, "previous_response_id": previous} if previous else dict(logical)


def _merged(given: object, default: Mapping[str, Any]) -> dict[str, Any]:
    return {**default, **given} if isinstance(given, Mapping) else dict(default)


def _echoed(request: Mapping[str, Any], name: str) -> Any:
    value = request.get(name)
    return DEFAULTS[name] if value is None else value


def response_object(
    request: Mapping[str, Any],
    *,
    response_id: str,
    created_at: int,
    model: str,
    status: str,
    output: Sequence[Item] = (),
    completed_at: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The response to `request` (the logical request, with the wire's `previous_response_id`) as it stands at
    `status`; `extra` sets what the status adds (`usage`, `error`, `incomplete_details`, `end_turn`, ...)."""
    tool_choice = request.get("tool_choice")
    tier = _echoed(request, "service_tier")
    metadata = request.get("metadata")
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": _echoed(request, "background"),
        "completed_at": completed_at if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": _echoed(request, "max_output_tokens"),
        "max_tool_calls": _echoed(request, "max_tool_calls"),
        "model": model,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "previous_response_id": _echoed(request, "previous_response_id"),
        "prompt_cache_key": _echoed(request, "prompt_cache_key"),
        "reasoning": _merged(request.get("reasoning"), REASONING_DEFAULT),
        "safety_identifier": _echoed(request, "safety_identifier"),
        "service_tier": SERVICE_TIER_CHOSEN if tier == "auto" else tier,
        "store": _echoed(request, "store"),
        "temperature": _echoed(request, "temperature"),
        "text": _merged(request.get("text"), TEXT_DEFAULT),
        "tool_choice": tool_choice if tool_choice is not None else "auto",
        "tools": echoed_tools(request.get("tools")),
        "top_logprobs": _echoed(request, "top_logprobs"),
        "top_p": _echoed(request, "top_p"),
        "presence_penalty": _echoed(request, "presence_penalty"),
        "frequency_penalty": _echoed(request, "frequency_penalty"),
        "truncation": _echoed(request, "truncation"),
        "usage": None,
        "metadata": dict(metadata) if isinstance(metadata, Mapping) else {},
    }
    response |= {name: request[name] for name in OPTIONAL_ECHOES if request.get(name) is not None}
    if isinstance(request.get("prompt_cache_options"), Mapping):
        response["prompt_cache_options"] = _merged(request["prompt_cache_options"], PROMPT_CACHE_DEFAULT)
    conversation = conversation_id(request.get("conversation"))
    if conversation is not None:
        response["conversation"] = {"id": conversation}
    return response | extra
