"""References others wrote, as checks: the OpenAI OpenAPI description (a vendored excerpt, MIT), each body and
streamed event held to its schemas field by field. The names load on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .artefacts import ARTEFACTS, Artefact
    from .check import Strictness, Violation, check_body, check_event, route_kind
    from .kinds import BODY_SCHEMAS, ROUTE_KINDS, BodyKind
    from .schemas import openapi

__all__ = [
    "ARTEFACTS",
    "BODY_SCHEMAS",
    "ROUTE_KINDS",
    "Artefact",
    "BodyKind",
    "Strictness",
    "Violation",
    "check_body",
    "check_event",
    "openapi",
    "route_kind",
]

_HOMES = {
    ".artefacts": ("ARTEFACTS", "Artefact"),
    ".check": ("Strictness", "Violation", "check_body", "check_event", "route_kind"),
    ".kinds": ("BODY_SCHEMAS", "ROUTE_KINDS", "BodyKind"),
    ".schemas": ("openapi",),
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
