"""Writes `rrkit/references/openapi.json`: the OpenAPI description cut to the routes rrkit serves and the schemas they
and the field checks reach (`python -m tests.references.make_openapi_excerpt [SPEC]`; default ../shared/specs)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from rrkit.protocol.routes import ROUTES
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
PREFIX = "#/components/"
DROPPED = frozenset({"description", "example", "examples", "title", "default", "deprecated", "summary", "tags"})
"""Annotations nothing asserts: left out (with every `x-` keyword) to keep the excerpt small."""
OPERATION = ("operationId", "parameters", "requestBody", "responses")
"""What an operation keeps: what Schemathesis sends and judges by."""


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [ref for key, value in node.items() for ref in ([value] if key == "$ref" else refs(value))]
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    return []


def _named(ref: str) -> tuple[str, str]:
    """`#/components/schemas/Response` -> (`schemas`, `Response`)."""
    section, _, name = ref.removeprefix(PREFIX).partition("/")
    return section, name


def _reachable(components: dict[str, Any], paths: dict[str, Any]) -> dict[str, list[str]]:
    """Each section of `components` (`schemas`, `responses`) -> the names ROOTS and `paths` reach, sorted."""
    seen: set[tuple[str, str]] = set()
    stack = [("schemas", name) for name in ROOTS] + [_named(ref) for ref in refs(paths)]
    while stack:
        section, name = stack.pop()
        if (section, name) not in seen:
            seen.add((section, name))
            stack += [_named(ref) for ref in refs(components[section][name])]
    sections = sorted({section for section, _ in seen})
    return {section: sorted(name for part, name in seen if part == section) for section in sections}


def _converted(node: Any, home: str) -> Any:
    """A schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect) reads it: 2019-09's `$recursiveRef` a plain ref to
    its anchor (the schema `home`), OpenAPI 3.0's `nullable` a null alternative, annotations left out."""
    if isinstance(node, list):
        return [_converted(value, home) for value in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED or key.startswith("x-") or key in ("$recursiveAnchor", "nullable"):
            continue
        if key == "$recursiveRef":
            out["$ref"] = f"{PREFIX}schemas/{home}"
        elif key in ("properties", "patternProperties"):
            out[key] = {name: _converted(sub, home) for name, sub in value.items()}
        elif key in ("enum", "const", "$ref"):
            out[key] = value
        else:
            out[key] = _converted(value, home)
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") is True else out


def _operation(operation: dict[str, Any]) -> dict[str, Any]:
    kept = {key: _converted(operation[key], "") for key in OPERATION[:-1] if key in operation}
    # status codes one by one: a `default` answer is a status here, not an annotation
    kept["responses"] = {status: _converted(answer, "") for status, answer in operation["responses"].items()}
    return kept


def _paths(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's operations of rrkit.protocol.routes.ROUTES (artefact `beta_path_keys`: no `?beta=true` key)."""
    paths: dict[str, Any] = {}
    for method, path, _ in ROUTES:
        paths.setdefault(path, {})[method.lower()] = _operation(spec["paths"][path][method.lower()])
    return paths


def _fixed(document: dict[str, Any], fix: Fix) -> None:
    *parents, last = fix.parts
    node: Any = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    schema = node[last]
    if fix.add_enum:
        schema["enum"] = [*schema["enum"], *(value for value in fix.add_enum if value not in schema["enum"])]
    if fix.open_enum:
        schema[OPEN_ENUM] = True
    if fix.also is not None:
        schema = node[last] = {"allOf": [schema, copy.deepcopy(dict(fix.also))]}
    if fix.admit_null:
        node[last] = {"anyOf": [schema, {"type": "null"}]}


def excerpt(spec_path: Path = SPEC) -> str:
    """The excerpt's text: an OpenAPI 3.1 document as compact JSON, keys in the spec's order, components by name."""
    spec = yaml.load(spec_path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    components, paths = spec["components"], _paths(spec)
    kept = {
        section: {name: _converted(components[section][name], name) for name in names}
        for section, names in _reachable(components, paths).items()
    }
    kept["securitySchemes"] = {name: components["securitySchemes"][name] for one in spec["security"] for name in one}
    document: dict[str, Any] = {
        "openapi": spec["openapi"],
        "info": {
            **{key: spec["info"][key] for key in ("title", "version", "license")},
            "x-source": SOURCE,
            "x-excerpt": "the routes rrkit serves and the schemas of every body and event, made by "
            "tests/references/make_openapi_excerpt.py with the fixes of rrkit.references.ARTEFACTS",
        },
        "security": spec["security"],
        "paths": paths,
        "components": kept,
    }
    for fix in FIXES:
        _fixed(document, fix)
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False) + "\n"


if __name__ == "__main__":
    EXCERPT.write_text(excerpt(Path(sys.argv[1]) if len(sys.argv) > 1 else SPEC), encoding="utf-8")
    print(f"{EXCERPT}: {EXCERPT.stat().st_size} bytes")
