"""The terminal rendering of a `ValidationReport`: one line per clean cassette, each finding of the others."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from .validate import ValidationReport

FINDINGS_PER_CASSETTE = 50
"""Findings shown per cassette before the rest is counted (`--json` has them all)."""


def render_validation(report: ValidationReport, console: Console) -> None:
    for validated in report.cassettes:
        count = len(validated.findings)
        if not count:
            console.print(
                f"[green]clean[/]  {escape(validated.path)} ({validated.exchanges} exchange(s))", soft_wrap=True
            )
            continue
        console.print(
            f"[bold red]{count} finding(s)[/]  {escape(validated.path)} ({validated.exchanges} exchange(s))",
            soft_wrap=True,
        )
        for finding in validated.findings[:FINDINGS_PER_CASSETTE]:
            console.print(f"  [magenta]{finding.rule}[/] {escape(str(finding))}", soft_wrap=True)
        if count > FINDINGS_PER_CASSETTE:
            console.print(f"  ... and {count - FINDINGS_PER_CASSETTE} more (--json lists them all)")
    broken = sum(1 for validated in report.cassettes if validated.findings)
    total = len(report.cassettes)
    verdict = (
        "[green]every cassette is clean[/]"
        if not broken
        else f"[bold red]{broken} of {total} cassette(s) break a rule[/]"
    )
    console.print(f"rrkit validate: {total} cassette(s): {verdict}")
