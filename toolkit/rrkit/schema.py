"""The JSON Schemas of the files users write (scripts, scenarios, profiles, probes) and read (cassettes), made from
the models that load them; shipped as files in `rrkit/schemas/` for editors, and printed by `rrkit schema NAME`."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

SCHEMAS: dict[str, tuple[str, str]] = {
    "script": ("rrkit.script.models", "Script"),
    "cassette": ("rrkit.cassette.format", "Cassette"),
    "scenario": ("rrkit.conform.scenario", "Scenario"),
    "profile": ("rrkit.conform.profile", "Profile"),
    "probe": ("rrkit.conform.server.probe", "Probe"),
    "report": ("rrkit.report.model", "Report"),
}
"""Each schema's name and the model that loads its files (imported only when its schema is asked for); `report`
is the one rrkit writes rather than reads: every judge's `--json`."""
WRITTEN = frozenset({"report"})
"""Schemas of files rrkit writes: the shape serialized, computed fields included."""

SHIPPED = Path(__file__).parent / "schemas"
"""Where the schemas ship, one `NAME.schema.json` each (the hint an editor follows: `# yaml-language-server:
$schema=...`)."""
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one kind of file (a name of `SCHEMAS`), as its model validates it."""
    module, model = SCHEMAS[name]
    mode = "serialization" if name in WRITTEN else "validation"
    schema: dict[str, Any] = getattr(importlib.import_module(module), model).model_json_schema(by_alias=True, mode=mode)
    return {"$schema": DIALECT, "title": f"rrkit {name}", **{key: v for key, v in schema.items() if key != "title"}}


def schema_text(name: str) -> str:
    """The schema as its shipped file holds it (and `rrkit schema NAME` prints it)."""
    return json.dumps(json_schema(name), indent=2, ensure_ascii=False) + "\n"


def shipped_path(name: str) -> Path:
    return SHIPPED / f"{name}.schema.json"
