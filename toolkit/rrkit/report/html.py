"""Reports as one self-contained HTML page (inline CSS, no script, no fetch), and the page parts `rrkit show`
shares. What a judged peer sent is untrusted: every text is escaped, and the Content-Security-Policy forbids
scripts and any load, so even a missed escape could run nothing and reach nothing."""

from __future__ import annotations

from collections.abc import Iterator
from html import escape as _escape

from .model import Case, Report
from .text import printable

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


def escape(text: str) -> str:
    """Untrusted text for a page: HTML-escaped (quotes too), control characters shown as escapes."""
    return _escape(printable(text), quote=True)


def head(title: str) -> str:
    """A page's head, up to the opening of its body; `title` is escaped here."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    )


def to_html(report: Report) -> str:
    """The report as one page: a header with the verdict, then a section per case with its rules."""
    return "".join(_page(report))


def _page(report: Report) -> Iterator[str]:
    title = f"rrkit {report.tool}: {report.subject}"
    state = "ok" if report.ok else "bad"
    yield head(title)
    yield f'<header class="summary sev-{state}"><h1>{escape(title)}</h1>\n'
    yield f'<p class="text-{state}">{escape(report.summary or _counted(report))}</p></header>\n'
    for index, case in enumerate(report.cases):
        yield from _case(case, index)
    yield "</body>\n</html>\n"


def _counted(report: Report) -> str:
    counts = report.counts
    return f"{counts['failed']} of {counts['cases']} case(s) failed; {counts['must']} must, {counts['should']} should"


def _case(case: Case, index: int) -> Iterator[str]:
    state = "warn" if case.skipped is not None else "ok" if case.ok else "bad"
    yield f'<section class="exchange sev-{state}" id="case-{index}">\n'
    yield f'<h3><span class="title">{escape(case.name)}</span> <span class="dim">{escape(case.group)}</span>'
    badge = "n/a" if case.skipped is not None else "ok" if case.ok else "FAILED"
    yield f' <span class="badge">{badge}</span></h3>\n'
    if case.skipped is not None:
        yield f'<p class="text-warn">not judged: {escape(case.skipped)}</p>\n'
    if case.output:
        yield f'<p class="dim">{escape(case.output)}</p>\n'
    if case.findings or case.held:
        yield "<table><thead><tr><th>rule</th><th>where and what was seen</th><th>verdict</th></tr></thead><tbody>\n"
        for finding in case.findings:
            mark = "bad" if finding.severity == "must" else "warn"
            yield (
                f'<tr><td class="fixed">{escape(finding.rule)}</td><td class="free">{escape(str(finding.place))}'
                f"<br>{escape(finding.evidence)}<br>"
                f'<span class="dim">{escape(finding.reason)}</span></td>'
                f'<td class="fixed text-{mark}">{escape(finding.strength)}</td></tr>\n'
            )
        for held in case.held:
            yield (
                f'<tr><td class="fixed">{escape(held.rule)}</td><td class="free">{escape(held.evidence)}</td>'
                '<td class="fixed text-ok">ok</td></tr>\n'
            )
        yield "</tbody></table>\n"
    yield "</section>\n"
