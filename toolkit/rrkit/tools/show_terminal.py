"""The terminal view of `rrkit show`: a timeline model rendered with rich, coloured by outcome, any width."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..report.text import printable
from .show_model import ConnectionView, ExchangeView, Row, Timeline, Tone

STYLE_OF: dict[Tone, str] = {
    Tone.OK: "green",
    Tone.WARN: "yellow",
    Tone.BAD: "red",
    Tone.UNKNOWN: "magenta",
}
LABEL_WIDTH = len("turn state")  # the longest label: every card's values start in the same column
MAX_RUNS = 40
MAX_PROBLEMS = 10
"""Event runs and protocol problems shown per exchange: a stream of thousands still fits a screen."""


def print_timeline(timeline: Timeline, console: Console | None = None) -> None:
    (console or Console()).print(*renderables(timeline))


def renderables(timeline: Timeline) -> Iterator[RenderableType]:
    title = _text(f"rrkit show: {timeline.title}", "bold")
    yield Panel(_grid(timeline.summary()), title=title, box=box.ROUNDED)
    yield _connections(timeline.connections, bool(timeline.exchanges))
    yield Text(f"Exchanges ({len(timeline.exchanges)})", style="bold")
    if not timeline.exchanges:
        yield Text("  none")
    for exchange in timeline.exchanges:
        yield _exchange(exchange)


def _connections(connections: Sequence[ConnectionView], any_exchange: bool) -> RenderableType:
    heading = Text(f"WebSocket connections ({len(connections)})", style="bold")
    if not connections:
        return Group(heading, Text("  none: every exchange went over HTTP" if any_exchange else "  none"))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("conn", no_wrap=True)
    table.add_column("handshake", overflow="fold")
    table.add_column("turn state", overflow="fold")
    table.add_column("closed", overflow="fold")
    table.add_column("exchanges", overflow="fold")
    for connection in connections:
        style = STYLE_OF[connection.tone]
        table.add_row(
            _text(f"#{connection.id}", style),
            _text(connection.handshake, style),
            _text(connection.turn_state or "-"),
            _text(connection.closed, style),
            _text(connection.exchange_list),
        )
    return Group(heading, table)


def _exchange(exchange: ExchangeView) -> RenderableType:
    style = STYLE_OF[exchange.tone]
    title = _text(exchange.title, "bold")
    subtitle = _text(exchange.outcome.kind, f"bold {style}")
    rows = exchange.rows(max_runs=MAX_RUNS, max_problems=MAX_PROBLEMS)
    return Panel(_grid(rows), title=title, title_align="left", subtitle=subtitle, border_style=style, box=box.ROUNDED)


def _grid(rows: Sequence[Row]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True, min_width=LABEL_WIDTH)
    grid.add_column(overflow="fold")
    for row in rows:
        style = STYLE_OF[row.tone] if row.tone else ""
        grid.add_row(_text(row.label), _Pieces(row.pieces, style) if row.pieces else _text(row.text, style))
    return grid


def _text(text: str, style: str = "") -> Text:
    """Cassette text as a rich Text: never parsed as markup, control characters shown as escapes."""
    return Text(printable(text), style=style)


class _Pieces:
    """Text that wraps only between its pieces (rich would break `12 x output_text.delta` at any space);
    a piece wider than the line is folded."""

    def __init__(self, pieces: Sequence[str], style: str) -> None:
        self.pieces = [printable(piece) for piece in pieces]
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 1)
        lines = [""]
        for piece in self.pieces:
            if lines[-1] and cell_len(lines[-1] + piece.rstrip()) > width:
                lines[-1] = lines[-1].rstrip()
                lines.append("")
            lines[-1] += piece
        for line in lines:
            text = Text(line.rstrip(), style=self.style, overflow="fold", no_wrap=False)
            yield from text.wrap(console, width, overflow="fold")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max(cell_len(piece.rstrip()) for piece in self.pieces)
        total = cell_len("".join(self.pieces))
        return Measurement(min(widest, options.max_width), min(total, options.max_width))
