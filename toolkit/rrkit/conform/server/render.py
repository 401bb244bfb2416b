"""The probe battery and its checks listed on a terminal (`rrkit conform --server URL --list`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .checks import CHECKS
from .probe import Probe


def render_probes(probes: Sequence[Probe], console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("probe", "over", "what it sends and checks"):
        table.add_column(column, overflow="fold")
    for probe in probes:
        table.add_row(probe.name, ", ".join(probe.transports), " ".join(probe.description.split()))
    console.print(table)
    checks = Table(box=None, pad_edge=False)
    for column in ("check", "what it holds an answer to"):
        checks.add_column(column, overflow="fold")
    for name, (_, what) in CHECKS.items():
        checks.add_row(name, what)
    console.print(checks)
