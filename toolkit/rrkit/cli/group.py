"""The `rrkit` command group, its one table of exit statuses, and the program that runs it (an exit a late signal
cannot turn into a kill)."""

from __future__ import annotations

import importlib
import signal
from enum import IntEnum
from typing import Any, NoReturn

import click

from ..protocol.exceptions import (
    AppServerError,
    CassetteError,
    CodexNotFound,
    ConformError,
    LockHeld,
    RRKitError,
    ScriptError,
    ServerUnreachable,
    SettingError,
)


class ExitStatus(IntEnum):
    """What every command's exit status means."""

    OK = 0
    """Done: no difference, every check kept."""
    FAILED = 1
    """A difference or a failed check; or a recording that could not be written (its journal keeps it)."""
    USAGE = 2
    """A usage or file error: nothing was run, or nothing could be."""


EXIT_STATUSES: tuple[tuple[type[RRKitError], ExitStatus], ...] = (
    # first match wins: a subclass before its base
    (LockHeld, ExitStatus.FAILED),
    (AppServerError, ExitStatus.FAILED),
    (ScriptError, ExitStatus.USAGE),
    (CassetteError, ExitStatus.USAGE),
    (ConformError, ExitStatus.USAGE),
    (SettingError, ExitStatus.USAGE),
    (CodexNotFound, ExitStatus.USAGE),
    (ServerUnreachable, ExitStatus.USAGE),
    (RRKitError, ExitStatus.FAILED),
)
"""The exit status of an error a command lets through to the group, by its type."""


def exit_status(error: RRKitError) -> ExitStatus:
    return next(status for kind, status in EXIT_STATUSES if isinstance(error, kind))


class FileError(click.ClickException, RRKitError):
    """A file that cannot be read or written as what it should be: a file error."""

    exit_code = ExitStatus.USAGE


class CheckFailed(click.ClickException, RRKitError):
    """A check that could not be completed, or a recording that could not be written."""

    exit_code = ExitStatus.FAILED


def command_error(error: RRKitError) -> click.ClickException:
    """An rrkit error shown as `Error: <its message>`, with the exit status the table gives its type."""
    kind = FileError if exit_status(error) is ExitStatus.USAGE else CheckFailed
    return kind(str(error))


def failed() -> NoReturn:
    """End a command that found a difference or a broken check (after it has shown them)."""
    raise SystemExit(ExitStatus.FAILED)


COMMAND_MODULES: dict[str, str] = {
    "compare-codex": "conformance",
    "conform": "conformance",
    "demo": "fixtures",
    "diff": "cassettes",
    "explore": "exploring",
    "fixtures": "fixtures",
    "record": "serving",
    "recover": "cassettes",
    "replay": "cassettes",
    "schema": "fixtures",
    "serve": "serving",
    "show": "cassettes",
    "validate": "cassettes",
}
"""Each command -> the module of this package that defines it, loaded when the command runs (or a help lists them
all): a command loads its own module's stack, not every command's."""


def commands() -> dict[str, click.Command]:
    """Every command of the group, each module loaded."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"{__package__}.{module}")
    return dict(main.commands)


class _Group(click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"{__package__}.{COMMAND_MODULES[cmd_name]}")  # registers its commands
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException:
            raise  # a command's own error (FileError, CheckFailed): its message and exit status stand
        except RRKitError as error:
            raise command_error(error) from None


@click.group(cls=_Group)
@click.version_option(package_name="rrkit")
def main() -> None:
    """rrkit: record/replay protocol testing for the OpenAI Responses streaming protocol.

    \b
    Examples:
      rrkit serve --script fixture:tool-loop
      rrkit record --upstream https://api.openai.com/v1 --cassette session.json
      rrkit demo
    """


def run() -> None:
    """The `rrkit` program (and `python -m rrkit`): the command line, then an exit that a late Ctrl-C or SIGTERM
    cannot turn into a kill (Python resets signal handlers to the default action while it finalizes)."""
    from .running import hold_stop_signals_until_exit

    hold_stop_signals_until_exit()
    try:
        main()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
