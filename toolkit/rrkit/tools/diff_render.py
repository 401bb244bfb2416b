"""The side-by-side rendering of a `DiffReport` with rich (A | B), coloured on a terminal, readable at 80 columns."""

from __future__ import annotations

import io
from collections.abc import Iterator

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from ..report.text import quoted
from .diff_report import Difference, DiffReport, Kind

ROWS_PER_EXCHANGE = 30
"""Differences shown per exchange pair before the rest is summed up (`--json` has them all)."""
_STYLE = {
    Kind.CONTENT: "bold red",
    Kind.INCREMENTALITY: "bold yellow",
    Kind.PROTOCOL: "bold magenta",
    Kind.EXCHANGE_MISSING: "bold red",
    Kind.EXCHANGE_EXTRA: "bold green",
    Kind.TIMING: "dim",
}


def render_report(report: DiffReport, console: Console, *, rows: int = ROWS_PER_EXCHANGE) -> None:
    console.print(Group(*_parts(report, rows)))


def report_text(report: DiffReport, *, width: int = 80, color: bool = False, rows: int = ROWS_PER_EXCHANGE) -> str:
    """The rendering as text (ANSI colours only with `color`)."""
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=color, color_system="standard" if color else None)
    render_report(report, console, rows=rows)
    return out.getvalue()


def _parts(report: DiffReport, rows: int) -> Iterator[RenderableType]:
    if report.strict:
        mode = "strict: every value compared as recorded"
    else:
        mode = "normalized: ids paired by use; times, token counts, per-run headers not compared"
    head = Table.grid(padding=(0, 1))
    head.add_column(style="bold")
    head.add_column(overflow="fold")
    for label, summary in (("A", report.a), ("B", report.b)):
        head.add_row(label, f"{summary.name}  ({summary.exchanges} exchanges, {summary.events} events)")
    ignore = f"; ignored: {', '.join(report.ignore)}" if report.ignore else ""
    head.add_row("", Text(f"view {report.view}; {mode}{ignore}", style="dim"))
    yield head
    for title, differences in _groups(report):
        yield Rule(title, style="cyan", align="left")
        yield from (_block(difference) for difference in differences[:rows])
        if len(differences) > rows:
            yield Text(f"... and {len(differences) - rows} more here (--json lists them all)", style="dim")
    yield _summary(report)


def _groups(report: DiffReport) -> Iterator[tuple[str, list[Difference]]]:
    """Differences by exchange pair, in alignment order (connections no exchange used come last)."""
    slot: dict[tuple[int, int], int] = {}
    for index, (a, b) in enumerate(report.pairs):
        if a is not None:
            slot[(0, a)] = index
        if b is not None:
            slot[(1, b)] = index
    grouped: dict[int, list[Difference]] = {}
    for difference in report.differences:
        if difference.a.exchange is not None:
            key = slot.get((0, difference.a.exchange), -1)
        elif difference.b.exchange is not None:
            key = slot.get((1, difference.b.exchange), -1)
        else:
            key = -1
        grouped.setdefault(key, []).append(difference)
    for key in sorted(grouped, key=lambda k: (k < 0, k)):
        if key < 0:
            yield "connections no exchange used", grouped[key]
            continue
        a, b = report.pairs[key]
        yield f"A exchange {_id(a)} | B exchange {_id(b)}", grouped[key]


def _id(exchange: int | None) -> str:
    return "-" if exchange is None else str(exchange)


def _block(difference: Difference) -> RenderableType:
    """One difference: what and where on a line, then A's value beside B's, then why (dim)."""
    head = Text(difference.kind.value, style=_STYLE.get(difference.kind, "bold"))
    a, b = difference.a, difference.b
    path = difference.path if a.path == b.path else f"{a.path} | {b.path}"
    event = ""  # an event's place is in its path (events[3].delta); say it only where the path does not
    if (a.event is not None or b.event is not None) and not path.startswith("events["):
        event = f"event {_id(a.event)}" + (f" | {_id(b.event)}" if a.event != b.event else "")
    for place in (path, event, difference.rule or ""):
        if place:
            head.append(f"  {place}", style="default" if place != difference.rule else "dim")
    values = Table.grid(expand=True, padding=(0, 1))
    values.add_column(width=1, style="dim")
    values.add_column(ratio=1, overflow="fold", style="red")
    values.add_column(width=1, style="dim")
    values.add_column(ratio=1, overflow="fold", style="green")
    values.add_row("A", _value(a.value, difference), "B", _value(b.value, difference))
    parts: list[RenderableType] = [head, Padding(values, (0, 0, 0, 2))]
    if difference.detail:
        parts.append(Padding(Text(quoted(difference.detail), style="dim"), (0, 0, 0, 2)))
    return Group(*parts)


def _value(value: str | None, difference: Difference) -> Text:
    if value is None:
        return Text("-", style="dim")
    value = quoted(value)  # a value a client sent or was sent: a few KiB of each end, its size between
    return Text(f"breaks: {value}" if difference.kind is Kind.PROTOCOL else value)


def _summary(report: DiffReport) -> Text:
    if report.equal:
        return Text(f"No differences ({len(report.pairs)} exchange pairs compared).", style="bold green")
    counts = ", ".join(f"{kind} {count}" for kind, count in report.counts().items())
    total = len(report.differences)
    return Text(f"{total} difference{'' if total == 1 else 's'}: {counts}", style="bold red")
