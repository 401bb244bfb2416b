"""One findings model behind every verdict (`Finding`, `Case`, `Report`), written once to JSON, JUnit XML, HTML,
GitHub annotations and the terminal."""

from __future__ import annotations

from .model import REPORT_FORMAT, Case, Finding, Held, Place, Report, Severity

__all__ = ["REPORT_FORMAT", "Case", "Finding", "Held", "Place", "Report", "Severity"]
