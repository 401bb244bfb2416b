"""Writes `rrkit/references/openapi.json`: the component schemas rrkit's field checks need, cut from the OpenAPI
description (`python -m tests.references.make_openapi_excerpt [SPEC]`; default ../shared/specs/openai-openapi.yaml)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from rrkit.references.artefacts import FIXES, Fix
from rrkit.references.check import OPEN_ENUM
from rrkit.references.kinds import ROOTS

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "specs" / "openai-openapi.yaml"
EXCERPT = ROOT / "toolkit" / "rrkit" / "references" / "openapi.json"
SOURCE = {
    "repository": "https://github.com/openai/openai-openapi",
    "commit": "f85dbe223d40e1a31cba812ab2d755c7e98a92a3",
    "file": "openai-openapi.yaml",
    "license": "MIT (LICENSE-openai-openapi, beside this file)",
}
PREFIX = "#/components/schemas/"
DROPPED = frozenset({"description", "example", "examples", "title", "default", "deprecated"})
"""Annotations JSON Schema never asserts: left out (with every `x-` keyword) to keep the excerpt small."""


def _reachable(schemas: dict[str, Any]) -> list[str]:
    seen: set[str] = set()
    stack = list(ROOTS)
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack += [ref.removeprefix(PREFIX) for ref in _refs(schemas[name])]
    return sorted(seen)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [ref for key, value in node.items() for ref in ([value] if key == "$ref" else _refs(value))]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def _converted(node: Any, home: str) -> Any:
    """A schema as JSON Schema 2020-12 reads it: refs into `$defs`, 2019-09's `$recursiveRef` a plain ref to its
    anchor (the schema `home`), OpenAPI 3.0's `nullable` a null alternative, annotations left out."""
    if isinstance(node, list):
        return [_converted(value, home) for value in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED or key.startswith("x-") or key in ("$recursiveAnchor", "nullable"):
            continue
        if key == "$ref":
            out[key] = "#/$defs/" + value.removeprefix(PREFIX)
        elif key == "$recursiveRef":
            out["$ref"] = f"#/$defs/{home}"
        elif key in ("properties", "patternProperties"):
            out[key] = {name: _converted(sub, home) for name, sub in value.items()}
        elif key in ("enum", "const"):
            out[key] = value
        else:
            out[key] = _converted(value, home)
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") is True else out


def _fixed(document: dict[str, Any], fix: Fix) -> None:
    *parents, last = fix.pointer.strip("/").split("/")
    node: Any = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    schema = node[last]
    if fix.add_enum:
        schema["enum"] = [*schema["enum"], *(value for value in fix.add_enum if value not in schema["enum"])]
    if fix.open_enum:
        schema[OPEN_ENUM] = True
    if fix.admit_null:
        node[last] = {"anyOf": [schema, {"type": "null"}]}


def excerpt(spec: Path = SPEC) -> str:
    """The excerpt's text: compact JSON, keys in the spec's order, schemas by name."""
    schemas = yaml.load(spec.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)["components"]["schemas"]
    document: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "x-source": SOURCE,
        "$defs": {name: _converted(schemas[name], name) for name in _reachable(schemas)},
    }
    for fix in FIXES:
        _fixed(document, fix)
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False) + "\n"


if __name__ == "__main__":
    EXCERPT.write_text(excerpt(Path(sys.argv[1]) if len(sys.argv) > 1 else SPEC), encoding="utf-8")
    print(f"{EXCERPT}: {EXCERPT.stat().st_size} bytes")
