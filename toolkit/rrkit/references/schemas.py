"""The vendored OpenAPI excerpt (`openapi.json`, an OpenAPI 3.1 document) loaded once, and JSON Schema 2020-12
validators over its schemas that tell a union's branches apart by `type` (the spec's discriminator)."""

from __future__ import annotations

import functools
import json
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators  # type: ignore[import-untyped]
from jsonschema.protocols import Validator  # type: ignore[import-untyped]
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from .kinds import EVENT_UNION

EXCERPT = Path(__file__).with_name("openapi.json")
URI = "urn:rrkit:openai-openapi"
SCHEMAS = "#/components/schemas/"
BRANCHES = "x-rrkit-{}"
"""A union's branches by the `type` they take (`x-rrkit-oneOf`: {"message": [0], ...}), written beside the union
as the excerpt is loaded."""


def openapi() -> dict[str, Any]:
    """The excerpt as its own copy, an OpenAPI 3.1 document: the paths of the routes rrkit serves and the schemas
    of their bodies and events (what Schemathesis loads)."""
    loaded: dict[str, Any] = json.loads(EXCERPT.read_text(encoding="utf-8"))
    return loaded


@functools.cache
def document() -> dict[str, Any]:
    """The excerpt, its schemas' unions annotated with their branches by `type` (one walk, at first use)."""
    loaded = openapi()
    _annotate(loaded["components"]["schemas"], loaded["components"]["schemas"])
    return loaded


def _annotate(node: Any, defs: dict[str, Any]) -> None:
    if isinstance(node, list):
        for value in node:
            _annotate(value, defs)
        return
    if not isinstance(node, dict):
        return
    for union in ("anyOf", "oneOf"):
        if union in node:
            table = _branches(node[union], defs)
            if table:
                node[BRANCHES.format(union)] = table
    for key, value in node.items():
        if key not in ("enum", "const"):
            _annotate(value, defs)


def _branches(branches: list[Any], defs: dict[str, Any]) -> dict[str, list[int]] | None:
    """Each `type` value -> the branches that take it; None unless every branch is an object naming its type."""
    table: dict[str, list[int]] = {}
    for index, branch in enumerate(branches):
        values = type_values(branch, defs)
        if not values:
            return None
        for value in values:
            table.setdefault(value, []).append(index)
    return table


def type_values(schema: Any, defs: dict[str, Any]) -> set[str]:
    """The `type` values a union's branch takes (through `$ref` into `defs`, the component schemas, and `allOf`)."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = defs[schema["$ref"].rpartition("/")[2]]
    if not isinstance(schema, dict):
        return set()
    if "allOf" in schema:
        return set().union(*(type_values(part, defs) for part in schema["allOf"]))
    kind = schema.get("properties", {}).get("type")
    if not isinstance(kind, dict):
        return set()
    return {str(value) for value in kind.get("enum", ())} | ({str(kind["const"])} if "const" in kind else set())


def _union(
    validator: Validator, branches: list[Any], instance: Any, table: dict[str, list[int]] | None
) -> Iterator[ValidationError]:
    """anyOf and oneOf alike (a value two branches take is the spec's ambiguity, not the sender's fault): the branch
    its `type` names, else the branch of its JSON type; that branch's own errors, never "none of the branches"."""
    if table is not None and isinstance(instance, dict):
        kind = instance.get("type")
        if "type" not in instance:
            yield ValidationError("missing", validator="required", validator_value=["type"], instance=instance)
            return
        chosen = table.get(kind) if isinstance(kind, str) else None
        if chosen is None:
            yield ValidationError(
                "no such type", validator="enum", validator_value=sorted(table), instance=kind, path=deque(["type"])
            )
            return
        yield from _closest(validator, [(index, branches[index]) for index in chosen], instance)
        return
    yield from _closest(validator, list(enumerate(branches)), instance)


def _closest(validator: Validator, branches: list[tuple[int, Any]], instance: Any) -> Iterator[ValidationError]:
    tried: list[list[ValidationError]] = []
    for index, branch in branches:
        errors = list(validator.descend(instance, branch, schema_path=index))
        if not errors:
            return
        tried.append(errors)
    fitting = [errors for errors in tried if not any(_wrong_kind(error) for error in errors)]
    if fitting:
        yield from min(fitting, key=len)
        return
    kinds: list[str] = []
    for errors in tried:
        for error in errors:
            if _wrong_kind(error):
                value = error.validator_value
                kinds += [str(one) for one in (value if isinstance(value, list) else [value]) if str(one) not in kinds]
    yield ValidationError("wrong type", validator="type", validator_value=kinds)


def _wrong_kind(error: ValidationError) -> bool:
    """An error saying the value is of another JSON type than the branch (or another `type` than its own)."""
    keyword = str(error.validator)
    if not error.relative_path:
        return keyword == "type"
    return list(error.relative_path) == ["type"] and keyword in ("enum", "const")


def _any_of(validator: Validator, branches: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    return _union(validator, branches, instance, schema.get(BRANCHES.format("anyOf")))


def _one_of(validator: Validator, branches: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    return _union(validator, branches, instance, schema.get(BRANCHES.format("oneOf")))


_Checker = validators.extend(Draft202012Validator, {"anyOf": _any_of, "oneOf": _one_of})


@functools.cache
def _registry() -> Registry[Any]:
    registry: Registry[Any] = Registry().with_resource(URI, DRAFT202012.create_resource(document()))
    return registry


@functools.cache
def validator_for(name: str) -> Validator:
    """A validator of the component schema `name` (compiled once, kept)."""
    if name not in document()["components"]["schemas"]:
        raise KeyError(f"{name!r} is no schema of the excerpt ({EXCERPT.name})")
    return _Checker({"$ref": f"{URI}{SCHEMAS}{name}"}, registry=_registry())


@functools.cache
def event_schemas() -> dict[str, str]:
    """Each streamed event type the spec knows -> the name of its schema."""
    union = document()["components"]["schemas"][EVENT_UNION]
    return {
        kind: union["anyOf"][indexes[0]]["$ref"].rpartition("/")[2]
        for kind, indexes in union[BRANCHES.format("anyOf")].items()
    }
