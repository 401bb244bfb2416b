"""`rrkit conform --list` on a terminal: the catalogue's scenarios and the shipped profiles."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .listing import Listed


def render_list(scenarios: Sequence[Listed], profiles: Sequence[Listed], console: Console) -> None:
    table = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("scenario", "over", "what the server does"):
        table.add_column(column, overflow="fold")
    for scenario in scenarios:
        name = f"{scenario.name} (opt-in)" if scenario.opt_in else scenario.name
        table.add_row(name, ", ".join(scenario.transports), " ".join(scenario.description.split()))
    console.print(table)
    listed = Table(show_lines=False, box=None, pad_edge=False)
    for column in ("profile (--profile)", "whose rules"):
        listed.add_column(column, overflow="fold")
    for profile in profiles:
        listed.add_row(profile.name, " ".join(profile.description.split()))
    console.print(listed)
