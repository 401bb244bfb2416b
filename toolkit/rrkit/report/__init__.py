"""One findings model behind every verdict (`Finding`, `Case`, `Report`), written once to JSON, JUnit XML, HTML,
GitHub annotations and the terminal. The names load on first use (PEP 562): the text helpers need no model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .model import REPORT_FORMAT, Case, Finding, Held, Place, Report, Severity

__all__ = ["REPORT_FORMAT", "Case", "Finding", "Held", "Place", "Report", "Severity"]

__getattr__, __dir__ = lazy_exports(__name__, {".model": __all__}, __all__)
