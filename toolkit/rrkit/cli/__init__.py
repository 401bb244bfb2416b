"""The `rrkit` command line: a thin front end, each option mapped to a call into the package. One module per group
of commands (serving, cassettes, conformance, fixtures), loaded when one of its commands runs; the option bundles
and the foreground server they share.

The exit statuses: 0 done (no difference, every check kept), 1 a difference or a failed check
(a cassette that could not be written: its journal keeps every exchange), 2 a usage or file error."""

from __future__ import annotations

from .group import commands as commands  # every command, each module loaded (a run loads only its command's)
from .group import main as main  # the entry point (pyproject.toml) and what tests invoke
from .group import run as run
