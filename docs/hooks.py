"""MkDocs hooks: a `<!-- schema: NAME -->` line in a page becomes the reference of that kind of file, field by
field, made from its JSON Schema (rrkit.schema), so that the format pages never drift from the models that load
files; the command-line reference shows no default for an option that has none."""

from __future__ import annotations

import json
import re
from typing import Any

from rrkit.schema import json_schema

MARKER = re.compile(r"^<!-- schema: (\w+) -->$", re.M)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda found: format_reference(found.group(1)), markdown)


def on_page_content(html: str, **_: Any) -> str:
    # mkdocs-click 0.9 shows click 8.3's "no default" marker as a default; the option has none
    return html.replace("<code>Sentinel.UNSET</code>", "")


def format_reference(name: str) -> str:
    """Each object of the schema (the file itself first, then every object it uses) as a table of its fields."""
    schema = json_schema(name)
    definitions = schema.get("$defs", {})
    objects = [(f"{name}-file", f"The {name} file", schema)]
    objects += [(_anchor(name, key), key, value) for key, value in definitions.items() if "properties" in value]
    out = []
    for anchor, title, spec in objects:
        out.append(f"### {title} {{ #{anchor} }}\n")
        if spec.get("description"):
            out.append(_one_line(spec["description"]) + "\n")
        out.append("| field | type | default | what it is |\n|---|---|---|---|")
        required = set(spec.get("required", []))
        for field, prop in spec.get("properties", {}).items():
            default = "required" if field in required else _default(prop)
            kind = _type(name, prop, definitions)
            out.append(f"| `{field}` | {kind} | {default} | {_one_line(prop.get('description', ''))} |")
        out.append("")
    return "\n".join(out)


def _anchor(name: str, key: str) -> str:
    return f"{name}-{re.sub(r'[^a-z0-9]+', '-', key.lower()).strip('-')}"


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(prop: dict[str, Any]) -> str:
    if "default" not in prop:
        return ""
    return f"`{json.dumps(prop['default'])}`".replace("|", "\\|")


def _grouped(kind: str) -> str:
    return f"({kind})" if " or " in kind else kind


def _type(name: str, prop: dict[str, Any], definitions: dict[str, Any]) -> str:
    """The field's type in words: an object it uses links to its table; values of an enumeration are listed."""
    if "$ref" in prop:
        key = prop["$ref"].rsplit("/", 1)[1]
        if "properties" not in definitions.get(key, {}):
            return _type(name, definitions.get(key, {}), definitions)
        return f"[{key}](#{_anchor(name, key)})"
    if "const" in prop:
        return f'`"{prop["const"]}"`'
    if "enum" in prop:
        return " or ".join(f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`' for value in prop["enum"])
    for union in ("anyOf", "oneOf"):
        if union in prop:
            return " or ".join(dict.fromkeys(_type(name, option, definitions) for option in prop[union]))
    kind = prop.get("type")
    if kind == "array":
        return f"list of {_grouped(_type(name, prop['items'], definitions))}" if prop.get("items") else "list"
    if kind == "object":
        values = prop.get("additionalProperties")
        if isinstance(values, dict) and values:
            return f"mapping of {_grouped(_type(name, values, definitions))}"
        return "mapping"
    if kind == "null":
        return "null"
    return str(kind or "any")
