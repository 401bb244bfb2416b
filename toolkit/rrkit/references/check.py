"""Bodies and streamed events held to the OpenAPI description, field by field: each violation names its field as a
user reads it (`response.usage.total_tokens: expected integer, got "3"`) and says how much it matters.

Severity: `must` when a client with a strict schema (zod, pydantic strict, a generated SDK) breaks on it: a required
field missing, a value of the wrong JSON type (null where null is not allowed included), a value outside an enum or
const, an item or event `type` no branch of its union takes. `should` for the rest (a field the schema does not
have, a number out of range, a string too long or of the wrong pattern, a value beyond an enum the service itself
goes beyond: `artefacts`): clients read past those.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from jsonschema import ValidationError  # type: ignore[import-untyped]

from ..protocol import events as ev
from .kinds import BODY_SCHEMAS, ROUTE_KINDS, BodyKind
from .schemas import event_schemas, validator_for


class Strictness(StrEnum):
    """How much a violation matters (the same words as `rrkit.report.Severity`)."""

    MUST = "must"
    SHOULD = "should"


STRICT = frozenset({"required", "type", "enum", "const"})
"""The keywords whose violation breaks a client with a strict schema."""
OPEN_ENUM = "x-rrkit-open-enum"
"""Marks an enum the service goes beyond (a value outside it is a `should`)."""


MAX_LISTED = 40
"""The values of an enum a violation lists at most (an output item's 28 types fit)."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One field a body or event breaks its schema at."""

    path: str  # the field as a user reads it: `response.output[0].content[0].annotations`; "" for the whole
    problem: str  # `missing`, `expected integer, got "3"`
    severity: Strictness

    def __str__(self) -> str:
        return f"{self.path or '(the whole)'}: {self.problem}"


def check_event(event: Mapping[str, Any]) -> list[Violation]:
    """What a streamed event (an SSE event's data, a WebSocket frame) breaks of its schema; [] for a type the spec
    has none for (a side channel, steering, an extension). A WebSocket `error` frame's `error` object is held to
    the error schema (artefact `websocket_error_frame`)."""
    kind = event.get("type")
    if kind == ev.ERROR and isinstance(event.get("error"), dict):
        return _violations("Error", event["error"], ("error",))
    name = event_schemas().get(kind) if isinstance(kind, str) else None
    return _violations(name, event, ()) if name is not None else []


def check_body(kind: BodyKind, body: Any, *, at: Sequence[str | int] = ()) -> list[Violation]:
    """What a body of `kind` (a route's 2xx object, or `error`: the object under an error body's `error`) breaks
    of its schema; `at` is where the body sits in what was sent (`["error"]`), for the paths."""
    return check_schema(BODY_SCHEMAS[kind], body, at=at)


def check_schema(schema: str, value: Any, *, at: Sequence[str | int] = ()) -> list[Violation]:
    """What `value` breaks of the excerpt's component schema named `schema` (`Tool`, `CreateResponse`, ...)."""
    return _violations(schema, value, at)


def route_kind(route: str) -> BodyKind | None:
    """The kind of a route's 2xx JSON body (`rrkit.protocol.routes` names); None for a route without one."""
    return ROUTE_KINDS.get(route)


def _violations(schema: str, value: Any, prefix: Sequence[str | int]) -> list[Violation]:
    found: dict[tuple[str, str], Violation] = {}
    for error in validator_for(schema).iter_errors(value):
        for violation in _described(error, prefix):
            found.setdefault((violation.path, violation.problem), violation)
    return sorted(found.values(), key=lambda violation: violation.path)


def _described(error: ValidationError, prefix: Sequence[str | int]) -> Iterable[Violation]:
    path = [*prefix, *error.absolute_path]
    keyword = str(error.validator)
    strict = keyword in STRICT and not (keyword == "enum" and _open_enum(error))
    severity = Strictness.MUST if strict else Strictness.SHOULD
    instance = error.instance
    if keyword == "required" and isinstance(instance, Mapping):
        return [
            Violation(field_path([*path, name]), "missing", severity)
            for name in error.validator_value
            if name not in instance
        ]
    if keyword == "required":  # a union's `type` missing (schemas._union)
        return [Violation(field_path(path), "missing", severity)]
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        return [
            Violation(field_path([*path, name]), "a field the schema does not have", severity)
            for name in instance
            if name not in known
        ]
    return [Violation(field_path(path), _problem(keyword, error), severity)]


def _open_enum(error: ValidationError) -> bool:
    """An enum the service is known to go beyond (artefact `response_error_codes`)."""
    return isinstance(error.schema, Mapping) and error.schema.get(OPEN_ENUM) is True


def _problem(keyword: str, error: ValidationError) -> str:
    expected = error.validator_value
    got = f"got {shown(error.instance)}"
    if keyword == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"expected {' or '.join(str(kind) for kind in kinds)}, {got}"
    if keyword == "enum":
        values = list(expected)
        listed = ", ".join(shown(value) for value in values[:MAX_LISTED]) + (
            ", ..." if len(values) > MAX_LISTED else ""
        )
        return f"expected one of {listed}; {got}"
    if keyword == "const":
        return f"expected {shown(expected)}, {got}"
    return str(error.message)


def shown(value: Any) -> str:
    """A value as JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def field_path(parts: Iterable[str | int]) -> str:
    """`["response", "output", 0, "content"]` -> `response.output[0].content`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
