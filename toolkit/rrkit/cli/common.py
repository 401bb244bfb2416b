"""What every command shares: the option types, reading a cassette for a command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from ..cassette.recordmode import RecordMode
from .group import FileError as FileError  # the file errors every command raises
from .group import failed

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from rich.console import Console

    from ..cassette.format import Cassette
    from ..report import Report
    from .options import ReportOutputs


T = TypeVar("T")


fixtures_option = click.option(
    "--fixtures",
    "fixtures_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Directory of scripts; default: ./fixtures, else the scripts shipped with rrkit.",
)
"""The scripts `rrkit demo` and `rrkit compare-codex` run."""


def fixtures_directory(given: Path | None) -> Path:
    """The folder of scripts a command runs: --fixtures, else ./fixtures, else the shipped ones."""
    from ..script.shipped import fixtures_folder

    directory = fixtures_folder(given)
    if not directory.is_dir():
        raise FileError(f"no fixtures directory at {directory} (use --fixtures DIR)")
    return directory


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
"""uvicorn's log levels, for `--log-level`."""


RECORD_MODES = tuple(mode.value for mode in RecordMode)


PORT = click.IntRange(0, 65535)


SECONDS = click.FloatRange(min=0, min_open=True)


def log_level_option(command: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        default="warning",
        show_default=True,
        help="uvicorn's log level (the per-exchange lines are rrkit's own: --quiet silences them).",
    )(command)


def write_file(path: Path, what: str, write: Callable[[], T]) -> T:
    """What `write` returns; an OSError from it is a file error naming the file and what it is."""
    try:
        return write()
    except OSError as error:
        raise FileError(f"{path}: cannot write {what}: {error.strerror or error}") from None


def conclude_report(report: Report, outputs: ReportOutputs, render: Callable[[Console], None] | None = None) -> None:
    """Write a judge's report where `outputs` says (JUnit, HTML, JSON, annotations), show it for a person unless
    it went out as JSON (`render`, else the report's own table), then end the command: exit status 1 when a rule
    that fails the run was broken."""
    from ..report.github import to_annotations
    from ..report.html import to_html, write_page
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

        console = Console(highlight=False)
        (render or (lambda shown: render_report(report, shown)))(console)
    if not report.ok:
        failed()


def read_cassette(path: Path) -> Cassette:
    """A cassette for show, diff and replay; a script given instead is named as one."""
    from ..cassette.file import CassetteFile

    return CassetteFile(path, hint=f"give a cassette, or serve the script with `rrkit serve --script {path}`").read()
