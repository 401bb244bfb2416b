"""The HTML view of `rrkit show`: the same timeline as one self-contained page (inline CSS, no script, no fetch).

Cassette content is untrusted: every text is escaped, and the page's Content-Security-Policy forbids scripts
and any load, so even a missed escape could run nothing and reach nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html import escape as _escape
from pathlib import Path

from ..files.atomic import write_page
from .show import ConnectionView, ExchangeView, Row, Timeline, format_seconds, printable

MAX_LOG = 5000
"""Events listed one by one per exchange (in a collapsed table); the rest are counted."""
MAX_PROBLEMS = 1000

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

CSS = """
:root { --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --unknown: #8250df; --line: #d0d7de; --dim: #57606a; }
* { box-sizing: border-box; }
body { font: 14px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; margin: 1.5rem auto;
       max-width: 70rem; padding: 0 1rem; color: #1f2328; background: #fff; }
h1 { font-size: 1.3rem; margin: 0 0 .5rem; } h2 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
h3 { font-size: 1rem; margin: 0 0 .4rem; display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline; }
h1, h3 .title { overflow-wrap: anywhere; }
dl.rows { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: 0; }
dl.rows dt { color: var(--dim); } dl.rows dd { margin: 0; overflow-wrap: anywhere; }
.piece { white-space: nowrap; } .piece.long { white-space: normal; overflow-wrap: anywhere; }
header, section.exchange { border: 1px solid var(--line); border-left-width: 6px; border-radius: 6px;
       padding: .6rem .9rem; margin: .6rem 0; }
table { border-collapse: collapse; } th, td { text-align: left; padding: .15rem .8rem .15rem 0;
       vertical-align: top; } th, td.fixed { white-space: nowrap; } td.free { overflow-wrap: anywhere; }
thead th { border-bottom: 1px solid var(--line); }
.badge { font-size: .85rem; padding: 0 .5rem; border-radius: 1rem; color: #fff; }
.sev-ok { border-left-color: var(--ok); } .sev-ok > h3 .badge, .badge.sev-ok { background: var(--ok); }
.sev-warn { border-left-color: var(--warn); } .sev-warn > h3 .badge, .badge.sev-warn { background: var(--warn); }
.sev-bad { border-left-color: var(--bad); } .sev-bad > h3 .badge, .badge.sev-bad { background: var(--bad); }
.sev-unknown { border-left-color: var(--unknown); } .sev-unknown > h3 .badge { background: var(--unknown); }
.text-ok { color: var(--ok); } .text-warn { color: var(--warn); } .text-bad { color: var(--bad); }
.text-unknown { color: var(--unknown); } .dim { color: var(--dim); }
details { margin-top: .4rem; } summary { cursor: pointer; color: var(--dim); }
table.log td:first-child { text-align: right; color: var(--dim); }
label.filter { display: block; margin: .8rem 0; color: var(--dim); }
body:has(#hide-completed:checked) section.exchange.sev-ok { display: none; }
"""


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
        text = f"text-{connection.severity.value}"
        yield (
            f'<tr id="connection-{connection.id}"><td class="fixed {text}">#{connection.id}</td>'
            f'<td class="fixed {text}">{escape(connection.handshake)}</td>'
            f'<td class="free">{escape(connection.turn_state or "-")}</td>'
            f'<td class="fixed {text}">{escape(connection.closed)}</td>'
            f"<td>{escape(connection.exchange_list)}</td></tr>\n"
        )
    yield "</tbody>\n</table>\n"


def _exchange(exchange: ExchangeView) -> Iterator[str]:
    severity = exchange.severity.value
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


def escape(text: str) -> str:
    """Cassette text for the page: HTML-escaped (quotes too), control characters shown as escapes."""
    return _escape(printable(text), quote=True)


def _rows(rows: Sequence[Row]) -> str:
    lines = ['<dl class="rows">\n']
    for row in rows:
        style = f' class="text-{row.severity.value}"' if row.severity else ""
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
