"""Makes `openapi_routes.json`, the excerpt of the OpenAI OpenAPI description the Schemathesis run reads (the paths of
the routes rrkit serves and every component they reach), with the spec's licence beside it.
Run: python -m tests.fuzz.openapi_excerpt [SPEC]"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

SPEC = Path(__file__).resolve().parents[3] / "shared" / "specs" / "openai-openapi.yaml"
"""The spec beside the checkout (not in a clean clone): openai/openai-openapi, MIT."""
EXCERPT = Path(__file__).with_name("openapi_routes.json")
COMMIT = "f85dbe223d40e1a31cba812ab2d755c7e98a92a3"
SOURCE = f"openai/openai-openapi at commit {COMMIT}"
LICENCE = SPEC.with_name("LICENSE-openai-openapi")
"""The spec's licence, copied beside the excerpt (`LICENSE-openai-openapi`)."""
PATHS = (
    "/responses",
    "/responses/{response_id}",
    "/responses/{response_id}/cancel",
    "/responses/{response_id}/input_items",
    "/responses/input_tokens",
    "/responses/compact",
    "/conversations",
    "/conversations/{conversation_id}",
    "/conversations/{conversation_id}/items",
    "/conversations/{conversation_id}/items/{item_id}",
    "/models",
    "/models/{model}",
)
"""The spec's paths of the routes rrkit serves (rrkit.protocol.routes.ROUTES). Left out on purpose: the same routes
again under `?beta=true` keys (`/responses?beta=true`, ...): a path key holding a query string is not an OpenAPI
path template, and rrkit answers those requests on the routes above (the query is not part of the route)."""
DROPPED = ("description", "x-oaiMeta", "summary")
"""Text for readers only (a string under these keys; a property named so is kept): dropped to keep the file small."""


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def trimmed(node: Any, *, names: bool = False) -> Any:
    """`node` without reader-only text; `names`: `node` maps property names to schemas (none of them dropped)."""
    if isinstance(node, dict):
        return {
            key: trimmed(value, names=key == "properties" and not names)
            for key, value in node.items()
            if names or not (key in DROPPED and (isinstance(value, str) or key == "x-oaiMeta"))
        }
    if isinstance(node, list):
        return [trimmed(value) for value in node]
    return node


def excerpt(spec: dict[str, Any]) -> dict[str, Any]:
    """The paths of PATHS and every component they reach, as one OpenAPI document."""
    paths = {path: spec["paths"][path] for path in PATHS}
    components: dict[str, dict[str, Any]] = {}
    pending = list(refs(paths))
    while pending:
        ref = pending.pop()
        _, _, section, name = ref.split("/", 3)
        if name in components.setdefault(section, {}):
            continue
        components[section][name] = spec["components"][section][name]
        pending.extend(refs(components[section][name]))
    components["securitySchemes"] = spec["components"]["securitySchemes"]
    return trimmed(
        {
            "openapi": spec["openapi"],
            "info": {
                **{key: spec["info"][key] for key in ("title", "version", "license")},
                "x-source": SOURCE,
                "x-licence": "MIT: tests/fuzz/LICENSE-openai-openapi",
                "x-excerpt": "the paths of the routes rrkit serves, made by tests/fuzz/openapi_excerpt.py",
            },
            "servers": spec["servers"],
            "security": spec["security"],
            "paths": paths,
            "components": {section: dict(sorted(entries.items())) for section, entries in sorted(components.items())},
        }
    )


def render(spec_path: Path = SPEC) -> str:
    spec = yaml.load(spec_path.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return json.dumps(excerpt(spec), separators=(",", ":"), ensure_ascii=False) + "\n"


if __name__ == "__main__":
    spec_path = Path(sys.argv[1]) if len(sys.argv) > 1 else SPEC
    EXCERPT.write_text(render(spec_path), "utf-8")
    EXCERPT.with_name(LICENCE.name).write_text(spec_path.with_name(LICENCE.name).read_text("utf-8"), "utf-8")
    print(f"wrote {EXCERPT} ({EXCERPT.stat().st_size} bytes)")
