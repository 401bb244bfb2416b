"""What every command shares: the option types, reading a cassette for a command."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..cassette.recordmode import RecordMode
from .group import FileError as FileError  # the file errors every command raises

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from ..cassette.format import Cassette


T = TypeVar("T")


fixtures_option = click.option(
    "--fixtures",
    "fixtures_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Directory of scripts; default: ./fixtures, else the scripts shipped with rrkit.",
)
"""The scripts `rrkit demo` and `rrkit compare-codex` run."""

strict_streams_option = click.option(
    "--strict-streams",
    is_flag=True,
    help="Make the reference client stricter than Codex: refuse (and retry) every stream that breaks an answer rule "
    "(an event lost or out of order, another response's id, a completion before its output). Default: Codex's "
    "behaviour, which answers with such a stream.",
)
"""`rrkit demo`, `rrkit replay` and `rrkit explore`: the reference client's `ClientOptions.strict_streams`."""


def strict_streams_usage(strict_streams: bool, other: object) -> None:
    """--strict-streams sets the reference client: with another client (a command, a server) it is a usage error."""
    if strict_streams and other:
        raise click.UsageError("--strict-streams sets rrkit's reference client: leave it out when you give another")


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


class FiniteRange(click.FloatRange):
    """A FloatRange that refuses what is no finite number (`nan` passes every comparison, `inf` every bound)."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number: float = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is no finite number", param, ctx)
        return number


SECONDS = FiniteRange(min=0, min_open=True)
"""A number of seconds above 0."""

NOT_NEGATIVE = FiniteRange(min=0)
"""A finite number, 0 or more (seconds where 0 means never, a time scale where 0 means at once)."""


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


def read_cassette(path: Path) -> Cassette:
    """A cassette for show, diff and replay; a script given instead is named as one."""
    from ..cassette.file import CassetteFile

    return CassetteFile(path, hint=f"give a cassette, or serve the script with `rrkit serve --script {path}`").read()
