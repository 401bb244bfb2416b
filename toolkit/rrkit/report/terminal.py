"""A report on a terminal: a table with a row per rule judged, a sentence per finding, and the verdict."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .model import Case, Finding, Report, Severity
from .text import printable

FINDINGS_PER_CASE = 50
"""Findings told one by one per case before the rest are counted (`--json` has them all)."""


def render(report: Report, console: Console, *, held: bool = True) -> None:
    """The table (with the rules that held too, unless `held` is False), each finding, then the summary."""
    table = Table(box=None, pad_edge=False)
    for column in ("case", "rule", "seen", "verdict"):
        table.add_column(column, overflow="fold")
    names = _names(report)
    for case, name in zip(report.cases, names, strict=True):
        if case.skipped is not None:
            table.add_row(name, "", _safe(case.skipped), "[yellow]n/a[/yellow]")
            continue
        for finding in case.findings[:FINDINGS_PER_CASE]:
            verdict = "[bold red]FAILED[/]" if finding.severity is Severity.MUST else "[yellow]should[/]"
            rule = finding.rule + (f" ({finding.profile})" if finding.profile else "")
            table.add_row(name, _safe(rule), _safe(finding.evidence), verdict)
        for passed in case.held if held else ():
            table.add_row(name, _safe(passed.rule), _safe(passed.evidence), "[green]ok[/green]")
        if not case.findings and not (held and case.held):
            table.add_row(name, "", _safe(case.output), "[green]ok[/green]")
    console.print(table)
    for case, name in zip(report.cases, names, strict=True):
        for finding in case.findings[:FINDINGS_PER_CASE]:
            console.print(_sentence(name, finding), soft_wrap=True)
        if len(case.findings) > FINDINGS_PER_CASE:
            more = len(case.findings) - FINDINGS_PER_CASE
            console.print(f"{name}: ... and {more} more (--json lists them all)", soft_wrap=True)
    console.print(summary_line(report), soft_wrap=True)


def _names(report: Report) -> list[str]:
    """Each case's name for the table, made safe; a name two cases share (a scenario or a probe over each
    transport) is told apart by the last part of its group: `text [http]`, `text [ws]`."""
    shared = Counter(case.name for case in report.cases)
    return [_safe(case.name if shared[case.name] == 1 else f"{case.name} [{_kind(case)}]") for case in report.cases]


def _kind(case: Case) -> str:
    return case.group.rsplit(".", 1)[-1]


def _sentence(name: str, finding: Finding) -> str:
    """A finding in a line, after its case's name unless its place already says where it is."""
    style = "bold red" if finding.severity is Severity.MUST else "yellow"
    told = _safe(str(finding))
    return f"[{style}]{told}[/]" if finding.place.label else f"[{style}]{name}[/] {told}"


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
