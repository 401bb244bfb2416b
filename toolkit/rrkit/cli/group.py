"""The `rrkit` command group, and the program that runs it (an exit a late signal cannot turn into a kill)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

import click

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    pass


@click.group()
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
    try:
        main()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
