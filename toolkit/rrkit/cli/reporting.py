"""What every judging command shares: the report options (`--json`, `--junit`, `--html`, `--github`) and where
its report goes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .common import write_file
from .group import failed

if TYPE_CHECKING:
    from rich.console import Console

    from ..report import Report


@dataclass(frozen=True)
class ReportOutputs:
    """Where a judging command's report goes besides the terminal (the same options on every judging command)."""

    as_json: bool = False
    junit: Path | None = None
    html: Path | None = None
    github: bool = False


def report_options(command: Callable[..., None]) -> Callable[..., None]:
    """`--json`, `--junit FILE`, `--html FILE` and `--github`, given to the command as one `outputs` argument."""

    @functools.wraps(command)
    def with_outputs(
        *args: Any, as_json: bool, junit_path: Path | None, html_path: Path | None, github: bool, **kwargs: Any
    ) -> None:
        command(*args, outputs=ReportOutputs(as_json, junit_path, html_path, github), **kwargs)

    writable = click.Path(dir_okay=False, writable=True, path_type=Path)
    options = (
        click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (`rrkit schema report`)."),
        click.option("--junit", "junit_path", type=writable, help="Also write the report as JUnit XML, for any CI."),
        click.option("--html", "html_path", type=writable, help="Also write the report as one self-contained page."),
        click.option(
            "--github",
            is_flag=True,
            help="Also print each finding as a GitHub Actions annotation (to stderr with --json).",
        ),
    )
    for option in reversed(options):
        with_outputs = option(with_outputs)
    return with_outputs


LOG_WIDTH = 160
"""Columns a report is laid out in when it goes to a log, not a terminal (rich would take 80: a CI log would show
`failed-insufficient-q / uota`); COLUMNS still wins."""


def _width() -> int | None:
    import os
    import sys

    return None if sys.stdout.isatty() or os.environ.get("COLUMNS") else LOG_WIDTH


def conclude_report(report: Report, outputs: ReportOutputs, render: Callable[[Console], None] | None = None) -> None:
    """Write a judge's report where `outputs` says (JUnit, HTML, JSON, annotations), show it for a person unless
    it went out as JSON (`render`, else the report's own table), then end the command: exit status 1 when a rule
    that fails the run was broken."""
    from ..files.atomic import write_page
    from ..report.github import to_annotations
    from ..report.html import to_html
    from ..report.json_text import to_json
    from ..report.junit import to_junit

    if outputs.junit is not None:
        junit = outputs.junit
        write_file(junit, "the JUnit report", lambda: write_page(to_junit(report), junit))
    if outputs.html is not None:
        html = outputs.html
        write_file(html, "the HTML report", lambda: write_page(to_html(report), html))
    if outputs.github:
        click.echo(to_annotations(report), nl=False, err=outputs.as_json)
    if outputs.as_json:
        click.echo(to_json(report))
    else:
        from rich.console import Console

        from ..report.terminal import render as render_report

        console = Console(highlight=False, width=_width())
        (render or (lambda shown: render_report(report, shown)))(console)
    if not report.ok:
        failed()
