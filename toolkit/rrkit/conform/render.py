"""`rrkit conform` on a terminal: the catalogue's list, and a report as one table with a sentence per failure."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .report import ConformReport
from .scenario import Scenario


def render_list(scenarios: Sequence[Scenario], console: Console) -> None:
    table = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("scenario", "over", "what the server does"):
        table.add_column(column, overflow="fold")
    for scenario in scenarios:
        table.add_row(scenario.name, ", ".join(scenario.transports), " ".join(scenario.description.split()))
    console.print(table)


def render_report(report: ConformReport, console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("scenario", "over", "expectation", "seen", "verdict"):
        table.add_column(column, overflow="fold")
    for result in report.results:
        for verdict in result.verdicts:
            table.add_row(
                verdict.scenario,
                verdict.transport,
                verdict.expectation,
                verdict.seen,
                "[green]ok[/green]" if verdict.held else "[bold red]FAILED[/bold red]",
            )
    console.print(table)
    failures = report.failures
    for verdict in failures:
        console.print(f"[bold]{verdict.scenario} [{verdict.transport}][/bold] {verdict.expectation}: {verdict.why}")
    held = sum(len(result.verdicts) for result in report.results) - len(failures)
    total = held + len(failures)
    summary = f"{report.client}: {held} of {total} musts held in {len(report.results)} scenario run(s)"
    console.print(f"[green]{summary}[/green]" if not failures else f"[bold red]{summary}[/bold red]")
