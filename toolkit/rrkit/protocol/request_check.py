"""Checking a request body: accepted at a glance where its fields plainly have the types the API takes, without
pydantic; the models (`request_model`, loaded on first need) judge and word every other body; the input items
are checked by their types (`input_check`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .exceptions import BadRequest
from .input_check import check_input_items
from .request import RESPONSE_CREATE, json_type


def check_request(body: object, *, frame: bool = False, lenient: bool = False) -> dict[str, Any]:
    """The body (or `response.create` frame) if its fields have the types the API requires, else BadRequest.

    Strict (the default) takes JSON types as they are: `stream` and the other flags are booleans, `temperature`
    a number in 0..2, `top_p` in 0..1, `max_output_tokens` a positive integer, `model` a string. `lenient` takes
    what pydantic's lax mode coerces (`"yes"`, `1` as true; `"0.5"` as 0.5; `2.0` as 2) and returns the body with
    those fields coerced, so that the answer follows what the client meant; ranges and finiteness hold in both."""
    what = "response.create frame" if frame else "request body"
    if not isinstance(body, dict):
        raise BadRequest(f"The {what} must be a JSON object, got {json_type(body)}.")
    if "model" not in body and "prompt" not in body:  # a stored prompt may name the model
        raise BadRequest.missing("model")
    items = body.get("input")
    if type(items) is list:
        check_input_items(items)
    if not lenient and _plainly_valid(body, frame):
        return body
    from .request_model import validated  # pydantic: loaded by the first body the check above cannot vouch for

    return validated(body, frame=frame, lenient=lenient)


def _plainly_valid(body: dict[str, Any], frame: bool) -> bool:
    """Whether every field the models check has a value they take in strict mode (None for every optional one),
    seen at a glance: True only where the models would agree (property-tested); False leaves it to them. The body
    is as JSON gives it: every object's keys are strings (not looked at: on a long input that would cost more
    than the models' own check)."""
    if frame and body.get("type") != RESPONSE_CREATE:
        return False
    return all(check(body.get(name)) for name, check in _PLAIN.items())


def _text(value: object) -> bool:
    return value is None or type(value) is str


def _flag(value: object) -> bool:
    return value is None or value is True or value is False


def _object(value: object) -> bool:
    return value is None or type(value) is dict


def _objects(value: object) -> bool:
    return value is None or (type(value) is list and all(type(item) is dict for item in value))


def _texts(value: object) -> bool:
    return value is None or (type(value) is list and all(type(item) is str for item in value))


def _number_to(high: float) -> Callable[[object], bool]:
    # a NaN or an infinity fails the range: left to the models, which name it
    return lambda value: value is None or (type(value) in (int, float) and 0 <= value <= high)  # type: ignore[operator]


def _positive_integer(value: object) -> bool:
    return value is None or (type(value) is int and value > 0)


_PLAIN: dict[str, Callable[[object], bool]] = {
    "model": _text,
    "instructions": _text,
    "input": lambda value: type(value) is str or _objects(value),
    "tools": _objects,
    "tool_choice": lambda value: type(value) is str or _object(value),
    "parallel_tool_calls": _flag,
    "reasoning": _object,
    "store": _flag,
    "stream": _flag,
    "include": _texts,
    "service_tier": _text,
    "prompt_cache_key": _text,
    "text": _object,
    "client_metadata": _object,
    "stream_options": _object,
    "previous_response_id": _text,
    "generate": _flag,
    "temperature": _number_to(2),
    "top_p": _number_to(1),
    "max_output_tokens": _positive_integer,
}
"""For each field of the request models, what is plainly a value they take (a test keeps the names in step)."""
