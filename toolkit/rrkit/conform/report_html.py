"""`rrkit conform --html`: the report as one self-contained page (inline CSS, no script, no fetch), with the same
rows as the terminal table; every text is escaped (a client's command line or output is untrusted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..files.atomic import write_page
from ..tools.show_html import CSP, CSS, escape
from .report import ConformReport


def render_html(report: ConformReport) -> str:
    return "".join(_page(report))


def write_html(report: ConformReport, path: Path | str) -> Path:
    return write_page(render_html(report), path)


def _page(report: ConformReport) -> Iterator[str]:
    title = escape(f"rrkit conform: {report.client}")
    failures = report.failures
    total = sum(len(result.verdicts) for result in report.results)
    yield '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    yield f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
    yield '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    yield f"<title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    severity = "bad" if failures else "ok"
    yield f'<header class="summary sev-{severity}"><h1>{title}</h1>\n'
    yield (
        f'<p class="text-{severity}">{total - len(failures)} of {total} musts held in '
        f"{len(report.results)} scenario run(s)</p></header>\n"
    )
    for result in report.results:
        run = result.run
        state = "ok" if result.ok else "bad"
        yield f'<section class="exchange sev-{state}" id="{escape(run.scenario)}-{escape(run.transport)}">\n'
        yield f'<h3><span class="title">{escape(run.scenario)} over {escape(run.transport)}</span>'
        yield f' <span class="badge">{"ok" if result.ok else "FAILED"}</span></h3>\n'
        detail = f" ({run.detail})" if run.detail else ""
        yield f'<p class="dim">the client: {escape(run.outcome + detail)}; the server saw: {escape(run.flow)}</p>\n'
        yield "<table><thead><tr><th>expectation</th><th>seen</th><th>verdict</th></tr></thead><tbody>\n"
        for verdict in result.verdicts:
            mark = "ok" if verdict.held else "bad"
            yield (
                f'<tr><td class="fixed">{escape(verdict.expectation)}</td><td class="free">{escape(verdict.seen)}'
                + ("" if verdict.held else f'<br><span class="dim">{escape(verdict.why)}</span>')
                + f'</td><td class="fixed text-{mark}">{"ok" if verdict.held else "FAILED"}</td></tr>\n'
            )
        yield "</tbody></table>\n</section>\n"
    yield "</body>\n</html>\n"
