"""A report as GitHub Actions workflow commands: an `::error` per finding that fails the run, a `::warning` per
other finding, a `::notice` per case not judged, pointing at the judged file where there is one."""

from __future__ import annotations

from .model import Report, Severity
from .text import printable


def to_annotations(report: Report) -> str:
    lines = []
    for case in report.cases:
        where = {"file": case.file} if case.file else {}
        if case.skipped is not None:
            title = f"rrkit {report.tool}: {case.name}: not judged"
            lines.append(_command("notice", {**where, "title": title}, case.skipped))
        for finding in case.findings:
            level = "error" if finding.severity is Severity.MUST else "warning"
            title = f"rrkit {report.tool}: {case.name}: {finding.rule}"
            lines.append(_command(level, {**where, "title": title}, str(finding)))
    return "\n".join(lines) + ("\n" if lines else "")


def _command(level: str, properties: dict[str, str], message: str) -> str:
    fields = ",".join(f"{name}={_property(value)}" for name, value in properties.items())
    return f"::{level} {fields}::{_data(message)}"


def _data(text: str) -> str:
    """A command's message: `%`, CR and LF escaped as the runner reads them; other control characters (an ESC
    would drive the log's terminal) and lone surrogates written as Python escapes."""
    return printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A command's property value: `:` and `,` escaped too, since they separate properties."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")
