"""The HTML view of `rrkit show`: the same timeline as one self-contained page (inline CSS, no script, no fetch).

Cassette content is untrusted: every text is escaped, and the page's Content-Security-Policy forbids scripts
and any load, so even a missed escape could run nothing and reach nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from ..files.atomic import write_page
from ..report.html import CSP, CSS, escape
from .show_model import ConnectionView, ExchangeView, Row, Timeline, format_seconds

MAX_LOG = 5000
"""Events listed one by one per exchange (in a collapsed table); the rest are counted."""
MAX_PROBLEMS = 1000


def render_html(timeline: Timeline) -> str:
    """The whole page, as text."""
    return "".join(_page(timeline))


def write_html(timeline: Timeline, path: Path | str) -> Path:
    """Write the page atomically: a crash mid-write leaves the previous file (if any) untouched."""
    return write_page(render_html(timeline), path)


def _page(timeline: Timeline) -> Iterator[str]:
    title = escape(f"rrkit show: {timeline.title}")
    yield '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    yield f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
    yield '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    yield f"<title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    yield f'<header class="summary"><h1>{title}</h1>\n{_rows(timeline.summary())}</header>\n'
    yield from _connections(timeline.connections, bool(timeline.exchanges))
    yield f"<h2>Exchanges ({len(timeline.exchanges)})</h2>\n"
    if timeline.exchanges:
        yield '<label class="filter"><input type="checkbox" id="hide-completed"> hide completed exchanges</label>\n'
    else:
        yield "<p>none</p>\n"
    for exchange in timeline.exchanges:
        yield from _exchange(exchange)
    yield "</body>\n</html>\n"


def _connections(connections: Sequence[ConnectionView], any_exchange: bool) -> Iterator[str]:
    yield f"<h2>WebSocket connections ({len(connections)})</h2>\n"
    if not connections:
        yield f"<p>{'none: every exchange went over HTTP' if any_exchange else 'none'}</p>\n"
        return
    yield '<table class="connections">\n<thead><tr><th>conn</th><th>handshake</th><th>turn state</th>'
    yield "<th>closed</th><th>exchanges</th></tr></thead>\n<tbody>\n"
    for connection in connections:
        text = f"text-{connection.tone.value}"
        yield (
            f'<tr id="connection-{connection.id}"><td class="fixed {text}">#{connection.id}</td>'
            f'<td class="fixed {text}">{escape(connection.handshake)}</td>'
            f'<td class="free">{escape(connection.turn_state or "-")}</td>'
            f'<td class="fixed {text}">{escape(connection.closed)}</td>'
            f"<td>{escape(connection.exchange_list)}</td></tr>\n"
        )
    yield "</tbody>\n</table>\n"


def _exchange(exchange: ExchangeView) -> Iterator[str]:
    severity = exchange.tone.value
    yield f'<section class="exchange sev-{severity}" id="exchange-{exchange.id}">\n'
    yield f'<h3><span class="title">{escape(exchange.title)}</span>'
    yield f' <span class="badge">{escape(exchange.outcome.kind)}</span></h3>\n'
    yield _rows(exchange.rows(max_problems=MAX_PROBLEMS))
    if exchange.log:
        yield f"<details><summary>every recorded event with its offset ({len(exchange.log)})</summary>\n"
        yield '<table class="log"><tbody>\n'
        for at, kind in exchange.log[:MAX_LOG]:
            yield f"<tr><td>{escape(format_seconds(at))}</td><td>{escape(kind)}</td></tr>\n"
        yield "</tbody></table>\n"
        if len(exchange.log) > MAX_LOG:
            yield f'<p class="dim">... and {len(exchange.log) - MAX_LOG} more</p>\n'
        yield "</details>\n"
    yield "</section>\n"


def _rows(rows: Sequence[Row]) -> str:
    lines = ['<dl class="rows">\n']
    for row in rows:
        style = f' class="text-{row.tone.value}"' if row.tone else ""
        if row.pieces:
            # The space after a piece stays outside its span: a browser breaks lines there, never inside one.
            value = "".join(
                f'<span class="piece{" long" if len(piece) > 60 else ""}">{escape(piece.rstrip())}</span>'
                + (" " if piece[-1:].isspace() else "")
                for piece in row.pieces
            )
        else:
            value = escape(row.text)
        lines.append(f"<dt>{escape(row.label)}</dt><dd{style}>{value}</dd>\n")
    lines.append("</dl>\n")
    return "".join(lines)
