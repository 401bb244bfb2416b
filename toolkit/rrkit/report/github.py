"""A report as GitHub Actions workflow commands: an `::error` per finding that fails the run, a `::warning` per
other finding, pointing at the judged file where there is one."""

from __future__ import annotations

from .model import Report, Severity
from .text import printable


def to_annotations(report: Report) -> str:
    lines = []
    for case in report.cases:
        for finding in case.findings:
            level = "error" if finding.severity is Severity.MUST else "warning"
            properties = {"title": f"rrkit {report.tool}: {case.name}: {finding.rule}"}
            if case.file:
                properties = {"file": case.file, **properties}
            fields = ",".join(f"{name}={_property(value)}" for name, value in properties.items())
            lines.append(f"::{level} {fields}::{_data(str(finding))}")
    return "\n".join(lines) + ("\n" if lines else "")


def _data(text: str) -> str:
    """A command's message: `%`, CR and LF escaped as the runner reads them; other control characters (an ESC
    would drive the log's terminal) and lone surrogates written as Python escapes."""
    return printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A command's property value: `:` and `,` escaped too, since they separate properties."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")
