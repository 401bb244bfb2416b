"""A server conformance report on a terminal (a table of probes, then each finding in a sentence) and as one
self-contained HTML page (every text escaped: a server's answers are untrusted)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape as markup_escape
from rich.table import Table

from ...files.atomic import write_page
from ...tools.show_html import CSP, CSS, escape
from .checks import CHECKS, Severity
from .probe import Probe
from .report import ServerReport


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


def _summary(report: ServerReport) -> str:
    must, should = report.count(Severity.MUST), report.count(Severity.SHOULD)
    sdk = f"SDK types of openai {report.sdk}" if report.sdk else "SDK types not checked (no openai package)"
    return f"{report.server}: {len(report.results)} probe run(s), {must} must and {should} should finding(s); {sdk}"


def render_server_report(report: ServerReport, console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for column in ("probe", "over", "steps", "must", "should", "verdict"):
        table.add_column(column, overflow="fold")
    for result in report.results:
        steps = ", ".join(f"{answer.status} {answer.ending.value}" for answer in result.answers)
        must = sum(finding.severity is Severity.MUST for finding in result.findings)
        verdict = "[green]ok[/green]" if result.ok else "[bold red]FAILED[/bold red]"
        table.add_row(result.probe, result.transport, steps, str(must), str(len(result.findings) - must), verdict)
    console.print(table)
    for finding in report.findings:
        style = "bold red" if finding.severity is Severity.MUST else "yellow"
        console.print(f"[{style}]{markup_escape(str(finding))}[/{style}]")
    summary = _summary(report)
    console.print(f"[green]{summary}[/green]" if report.ok else f"[bold red]{summary}[/bold red]", markup=True)


def write_server_html(report: ServerReport, path: Path | str) -> Path:
    return write_page("".join(_page(report)), path)


def _page(report: ServerReport) -> Iterator[str]:
    title = escape(f"rrkit conform --server {report.server}")
    yield '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    yield f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
    yield f"<title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    state = "ok" if report.ok else "bad"
    yield f'<header class="summary sev-{state}"><h1>{title}</h1>\n<p class="text-{state}">'
    yield f"{escape(_summary(report))}</p></header>\n"
    for result in report.results:
        mark = "ok" if result.ok else "bad"
        yield f'<section class="exchange sev-{mark}"><h3><span class="title">{escape(result.probe)} over '
        yield f'{escape(result.transport)}</span> <span class="badge">{"ok" if result.ok else "FAILED"}</span></h3>\n'
        if result.findings:
            yield "<table><thead><tr><th>severity</th><th>where</th><th>requires</th><th>seen</th></tr></thead>"
            yield "<tbody>\n"
            for finding in result.findings:
                yield f'<tr><td class="fixed">{escape(finding.severity.value)}</td>'
                yield f'<td class="fixed">{escape(finding.where)}</td><td class="free">{escape(finding.requires)}</td>'
                yield f'<td class="free">{escape(finding.seen)}</td></tr>\n'
            yield "</tbody></table>\n"
        yield "</section>\n"
    yield "</body>\n</html>\n"
