"""What every command shares: file errors (exit status 2), the option types, reading a cassette for a command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..cassette.recordmode import RecordMode

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from ..cassette.format import Cassette


class FileError(click.ClickException):
    """A file that cannot be read as what it should be: exit status 2, like a usage error."""

    exit_code = 2


fixtures_option = click.option(
    "--fixtures",
    "fixtures_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Directory of scripts; default: ./fixtures, else the scripts shipped with rrkit.",
)
"""The scripts `rrkit demo` and `rrkit compare-codex` run."""


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


def file_error(error: Exception, kind_message: str | None) -> FileError:
    return FileError(kind_message or str(error))


def read_cassette(path: Path) -> Cassette:
    """A cassette for show, diff and replay; a script given instead is named as one."""
    from ..cassette.store import load_cassette
    from ..protocol.exceptions import CassetteError
    from ..tools.file_kind import not_a_cassette

    try:
        return load_cassette(path)
    except CassetteError as error:
        hint = f"give a cassette, or serve the script with `rrkit serve --script {path}`"
        raise file_error(error, not_a_cassette(path, hint)) from None
