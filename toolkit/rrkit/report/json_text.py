"""A report as the JSON document every judge writes (`rrkit schema report` has its schema)."""

from __future__ import annotations

import json

from .model import Report


def to_json(report: Report) -> str:
    """Indented JSON; text a peer sent that is not valid Unicode (a lone surrogate) is kept as a JSON escape."""
    return json.dumps(report.model_dump(mode="json"), indent=2)
