"""The probe battery and its checks listed on a terminal (`rrkit conform --server URL --list`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from ..listing import Listed
from .check_texts import CHECK_TEXTS, PROBE_CHECK_TEXTS


def render_probes(probes: Sequence[Listed], console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("probe", "over", "what it sends and checks"):
        table.add_column(column, overflow="fold")
    for probe in probes:
        table.add_row(probe.name, ", ".join(probe.transports), " ".join(probe.description.split()))
    console.print(table)
    checks = Table(box=None, pad_edge=False)
    for column in ("check", "what it holds an answer to"):
        checks.add_column(column, overflow="fold")
    for name, what in {**CHECK_TEXTS, **PROBE_CHECK_TEXTS}.items():
        checks.add_row(name, what)
    console.print(checks)
