"""`rrkit conform` on a terminal: the catalogue's list, and a report as one table with a sentence per failure."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .profile import Profile
from .report import ConformReport
from .scenario import Scenario


def render_list(scenarios: Sequence[Scenario], profiles: Sequence[Profile], console: Console) -> None:
    table = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("scenario", "over", "what the server does"):
        table.add_column(column, overflow="fold")
    for scenario in scenarios:
        name = f"{scenario.name} (opt-in)" if scenario.opt_in else scenario.name
        table.add_row(name, ", ".join(scenario.transports), " ".join(scenario.description.split()))
    console.print(table)
    listed = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("profile (--profile)", "whose rules"):
        listed.add_column(column, overflow="fold")
    for profile in profiles:
        listed.add_row(profile.name, " ".join(profile.description.split()))
    console.print(listed)


def render_report(report: ConformReport, console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("scenario", "over", "expectation", "seen", "verdict"):
        table.add_column(column, overflow="fold")
    for result in report.results:
        for verdict in result.verdicts:
            table.add_row(
                verdict.scenario,
                verdict.transport,
                verdict.expectation + ("" if verdict.strength == "must" else f" ({verdict.strength})"),
                verdict.seen,
                "[green]ok[/green]" if verdict.held else "[bold red]FAILED[/bold red]",
            )
    console.print(table)
    failures = report.failures
    for verdict in failures:
        console.print(f"[bold]{verdict.scenario} [{verdict.transport}][/bold] {verdict.expectation}: {verdict.why}")
    held = sum(len(result.verdicts) for result in report.results) - len(failures)
    total = held + len(failures)
    kinds = "musts" if report.profile is None else f"musts and {report.profile} rules"
    summary = f"{report.client}: {held} of {total} {kinds} held in {len(report.results)} scenario run(s)"
    console.print(f"[green]{summary}[/green]" if not failures else f"[bold red]{summary}[/bold red]")
