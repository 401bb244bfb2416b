"""A report on a terminal: a table with a row per rule judged, a sentence per finding, and the verdict."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .model import Report, Severity
from .text import printable

FINDINGS_PER_CASE = 50
"""Findings told one by one per case before the rest are counted (`--json` has them all)."""


def render(report: Report, console: Console, *, held: bool = True) -> None:
    """The table (with the rules that held too, unless `held` is False), each finding, then the summary."""
    table = Table(box=None, pad_edge=False)
    for column in ("case", "rule", "seen", "verdict"):
        table.add_column(column, overflow="fold")
    for case in report.cases:
        name = _safe(case.name)
        for finding in case.findings[:FINDINGS_PER_CASE]:
            verdict = "[bold red]FAILED[/]" if finding.severity is Severity.MUST else "[yellow]should[/]"
            rule = finding.rule + (f" ({finding.profile})" if finding.profile else "")
            table.add_row(name, _safe(rule), _safe(finding.evidence), verdict)
        for passed in case.held if held else ():
            table.add_row(name, _safe(passed.rule), _safe(passed.evidence), "[green]ok[/green]")
        if not case.findings and not (held and case.held):
            table.add_row(name, "", _safe(case.output), "[green]ok[/green]")
    console.print(table)
    for case in report.cases:
        for finding in case.findings[:FINDINGS_PER_CASE]:
            style = "bold red" if finding.severity is Severity.MUST else "yellow"
            console.print(f"[{style}]{_safe(case.name)}[/] {_safe(str(finding))}", soft_wrap=True)
        if len(case.findings) > FINDINGS_PER_CASE:
            more = len(case.findings) - FINDINGS_PER_CASE
            console.print(f"{_safe(case.name)}: ... and {more} more (--json lists them all)", soft_wrap=True)
    console.print(summary_line(report), soft_wrap=True)


def summary_line(report: Report) -> str:
    """The verdict in one line of rich markup, green when the run holds and red when it does not."""
    counts = report.counts
    text = report.summary or (
        f"rrkit {report.tool}: {counts['failed']} of {counts['cases']} case(s) failed "
        f"({counts['must']} must, {counts['should']} should finding(s))"
    )
    return f"[green]{_safe(text)}[/green]" if report.ok else f"[bold red]{_safe(text)}[/bold red]"


def _safe(text: str) -> str:
    return escape(printable(text))
