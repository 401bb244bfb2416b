"""`rrkit conform` (a client against the scenario catalogue) and `rrkit compare-codex`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..protocol.vocabulary import TRANSPORTS
from .cassettes import ThenCommand, client_command
from .common import SECONDS, FileError, conclude, fixtures_directory, fixtures_option, write_file
from .group import failed, main
from .options import timeout_option


@main.command(cls=ThenCommand)
@click.option("--list", "list_only", is_flag=True, help="List the catalogue's scenarios and exit.")
@click.option("--only", multiple=True, metavar="NAME", help="Run only this scenario (repeatable).")
@click.option(
    "--profile",
    metavar="NAME|FILE",
    help="Also judge a kind of client's finer rules: a shipped profile (codex, openai-sdk) or a profile file.",
)
@click.option(
    "--transport",
    type=click.Choice(["http", "ws", "both"]),
    default="both",
    show_default=True,
    help="Play each scenario over HTTP SSE, over WebSocket, or both (a scenario runs only where it applies).",
)
@timeout_option(60.0, "scenario and transport", "; one still running then is stopped (and breaks `ends`)")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the report as JUnit XML (one test case per scenario and transport), for any CI.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write the report as one self-contained HTML page.",
)
@click.option(
    "--server",
    "server_url",
    metavar="URL",
    help="Judge a Responses server instead: its base URL (http://HOST:PORT/v1), sent the probe battery.",
)
@click.option("--model", default="gpt-4.1-mini", show_default=True, help="With --server: the model every probe names.")
@click.option(
    "--api-key-env",
    metavar="VAR",
    default="OPENAI_API_KEY",
    show_default=True,
    help="With --server: the environment variable holding the API key sent (a placeholder when unset).",
)
@click.pass_context
def conform(
    ctx: click.Context,
    server_url: str | None,
    model: str,
    api_key_env: str,
    list_only: bool,
    only: tuple[str, ...],
    profile: str | None,
    transport: str,
    timeout: float,
    as_json: bool,
    junit_path: Path | None,
    html_path: Path | None,
) -> None:
    """Judge a Responses client: play each scenario of the catalogue on a fresh fake server, run the client
    against it, and judge what the server saw it do (requests, retries and the waits before them, full or
    incremental, fallbacks, tool outputs, how it ended) against the scenario's musts: what every correct client
    of the protocol does. The client is rrkit's reference client, or the command after `--`, run once per
    scenario and transport with OPENAI_BASE_URL, RRKIT_HTTP_URL, RRKIT_WS_URL, RRKIT_SCENARIO and RRKIT_TRANSPORT
    (`http` or `ws`: which one to use) in its environment; its exit status 0 says the turn completed.

    The catalogue (--list): text and tool loops, warmups and incremental requests, every fault rrkit scripts
    (cuts, early ends, stalls, close frames, 426 and 503 on the upgrade, the connection limit), every failure
    code, 4xx and 5xx with and without retry-after, previous_response_not_found, turn state. The musts: a stream
    without its terminal event is no answer; a 400, or a failure a retry cannot mend, is never retried; a named
    delay is never cut short; a silent stream is given up on; a tool call is answered with its call_id; an
    incremental request continues a response the server holds; after a failure the request is a full one.

    With --profile, a kind of client's finer rules are judged too (`codex`: the Codex CLI's observed retries,
    waits and fallbacks; `openai-sdk`: the official SDKs' documented retries).

    With --server URL, a Responses server (a gateway, a proxy, another mock) is judged instead: each probe of
    its battery (--list) is sent over HTTP and WebSocket, and every answer is checked for shape, order and state,
    never for words: the event order rules of every family, the SDK's types, previous_response_id, warmups, the
    upgrade, error frames and refusals. Each finding names the probe, the step, the event and field, what the
    protocol requires and its severity (`must` breaks real clients; `should` departs from the real service).

    Exit status: 0 every must (and profile rule) held, 1 one broken, 2 a usage or file error, or a --server
    where nothing answers.

    \b
    Examples:
      rrkit conform --list
      rrkit conform --profile codex
      rrkit conform --transport http --junit conform.xml -- python my_client.py
      rrkit conform --server http://127.0.0.1:8000/v1 --transport both --junit server.xml
    """
    from rich.console import Console

    from ..conform import catalogue, run, select
    from ..conform.profile import load_profile, shipped_profiles
    from ..conform.render import render_list, render_report
    from ..conform.report_html import write_html
    from ..files.atomic import write_page

    command = client_command(ctx)
    if server_url is not None:
        if command or profile is not None:
            raise click.UsageError("--server judges a server: give no client command and no --profile with it")
        outputs = Outputs(as_json, junit_path, html_path)
        _conform_server(server_url, model, api_key_env, list_only, only, transport, timeout, outputs)
        return
    every = catalogue(opt_in=bool(only) or list_only)  # an opt-in scenario runs when named; --list shows it
    scenarios = select(every, only)
    judged_by = load_profile(profile) if profile is not None else None
    if list_only:
        render_list(scenarios, [load_profile(name) for name in shipped_profiles()], Console(highlight=False))
        return
    transports = tuple(name for name in TRANSPORTS if transport in (name, "both"))
    progress = Console(stderr=True, highlight=False)

    def said(result: Any) -> None:
        verdict = "ok" if result.ok else "FAILED"
        progress.print(f"{result.run.scenario} [{result.run.transport}] {verdict}", markup=False)

    report = run(
        command or None,
        scenarios=every,
        only=only,
        transports=transports,
        timeout=timeout,
        profile=judged_by,
        on_result=said,
    )
    if junit_path is not None:
        write_file(junit_path, "the JUnit report", lambda: write_page(report.to_junit(), junit_path))
    if html_path is not None:
        write_file(html_path, "the HTML report", lambda: write_html(report, html_path))
    conclude(report.ok, as_json, report.to_json, lambda console: render_report(report, console))


@dataclass(frozen=True)
class Outputs:
    """Where a report goes besides the terminal."""

    as_json: bool
    junit_path: Path | None
    html_path: Path | None


def _conform_server(
    url: str,
    model: str,
    key_env: str,
    list_only: bool,
    only: tuple[str, ...],
    transport: str,
    timeout: float,
    outputs: Outputs,
) -> None:
    from rich.console import Console

    from ..conform.server import Target, probe_catalogue, run_server, select_probes
    from ..conform.server.render import render_probes, render_server_report, write_server_html
    from ..files.atomic import write_page

    probes = select_probes(probe_catalogue(), only)
    if list_only:
        render_probes(probes, Console(highlight=False))
        return
    target = Target(url, model=model, api_key=os.environ.get(key_env) or "rrkit-conform", timeout=timeout)
    progress = Console(stderr=True, highlight=False)

    def said(result: Any) -> None:
        progress.print(f"{result.probe} [{result.transport}] {'ok' if result.ok else 'FAILED'}", markup=False)

    transports = tuple(name for name in TRANSPORTS if transport in (name, "both"))
    report = run_server(target, only=only, transports=transports, probes=probes, on_result=said)
    if outputs.junit_path is not None:
        path = outputs.junit_path
        write_file(path, "the JUnit report", lambda: write_page(report.to_junit(), path))
    if outputs.html_path is not None:
        html = outputs.html_path
        write_file(html, "the HTML report", lambda: write_server_html(report, html))
    conclude(report.ok, outputs.as_json, report.to_json, lambda console: render_server_report(report, console))


@main.command("compare-codex")
@fixtures_option
@click.option(
    "--codex",
    "codex_path",
    metavar="PATH",
    help="The Codex CLI to run; default: $RRKIT_CODEX_BIN, .ci/node's codex, then `codex` on PATH.",
)
@click.option(
    "--transport", "transports", type=click.Choice(["http", "ws"]), multiple=True, help="Only this transport."
)
@click.option("--script", "only", multiple=True, metavar="NAME", help="Only the script with this file stem.")
@click.option(
    "--idle-timeout",
    type=SECONDS,
    default=1.0,
    show_default=True,
    help="Both clients' stream idle timeout (seconds, more than 0).",
)
@click.option("-v", "--verbose", is_flag=True, help="Also print every attempt of the runs that differ.")
def compare_codex(
    fixtures_dir: Path | None,
    codex_path: str | None,
    transports: tuple[str, ...],
    only: tuple[str, ...],
    idle_timeout: float,
    verbose: bool,
) -> None:
    """Run every script through the real Codex CLI and the reference client; print where they differ.

    Each script runs over each transport on a fresh fake server, once by `codex exec` and once by the
    reference client, both configured alike (request_max_retries 4, stream_max_retries 5). What the
    server saw is compared: attempts, transports, full / incremental / warmup, the wait before each
    retry (none, backoff, named delay, idle timeout) and the outcome.

    Exit status: 0 they agree, 1 they differ, 2 Codex not found or a bad script.

    \b
    Examples:
      rrkit compare-codex
      rrkit compare-codex --codex ~/.npm-global/bin/codex --transport ws --script http-500 -v
    """
    from ..differential.codex import find_codex
    from ..differential.fixtures import compare_scripts, format_comparisons, summary
    from ..differential.settings import Budgets
    from ..script.shipped import script_files

    codex = find_codex(codex_path)
    directory = fixtures_directory(fixtures_dir)
    paths = [path for path in script_files(directory) if not only or path.stem in only]
    if not paths:
        named = f" named {', '.join(only)}" if only else ""
        raise FileError(f"no scripts to run in {directory}{named}: `rrkit fixtures` lists the shipped ones")
    click.echo(f"rrkit compare-codex: Codex CLI ({codex}) and the reference client, scripts from {directory}")
    budgets = Budgets(idle_timeout=idle_timeout)
    results = compare_scripts(paths, codex, transports=transports or TRANSPORTS, budgets=budgets)
    click.echo(format_comparisons(results, verbose=verbose))
    click.echo(summary(results))
    if not all(result.agree for result in results):
        failed()
