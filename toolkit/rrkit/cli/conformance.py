"""`rrkit conform` (a client against the scenario catalogue) and `rrkit compare-codex`."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..conform.timeouts import ANSWER_TIMEOUT, DEFAULT_TIMEOUT, RUN_BUDGET
from ..protocol.vocabulary import TRANSPORTS, Transport
from .cassettes import ThenCommand, client_command
from .common import SECONDS, FileError, fixtures_directory, fixtures_option
from .group import failed, main
from .reporting import ReportOutputs, conclude_report, report_options

if TYPE_CHECKING:
    from ..conform.scenario import Scenario


class ConformCommand(ThenCommand):
    """`rrkit conform`'s help in sections: options for judging a client, for judging a server, and the report's."""

    SECTIONS = (
        ("Judging a client (the reference client, or the command after --)", ("--profile",)),
        ("Judging a server (--server URL)", ("--server", "--model", "--api-key-env", "--budget")),
        ("The report", ("--json", "--junit", "--html", "--github")),
    )

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        placed = {name for _, names in self.SECTIONS for name in names}
        rows = {param.opts[0]: param.get_help_record(ctx) for param in self.get_params(ctx)}
        sections = [("Options", [row for name, row in rows.items() if name not in placed])]
        sections += [(title, [rows[name] for name in names if name in rows]) for title, names in self.SECTIONS]
        for title, records in sections:
            with formatter.section(title):
                formatter.write_dl([record for record in records if record is not None])


CLIENT_ONLY = ("profile",)
SERVER_ONLY = ("model", "api_key_env", "budget")


@main.command(cls=ConformCommand)
@click.option("--list", "list_only", is_flag=True, help="List the catalogue's scenarios (or, with --server, probes).")
@click.option("--only", multiple=True, metavar="NAME", help="Run only this scenario or probe (repeatable).")
@click.option(
    "--scenario",
    "scenario_paths",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Judge the client on this scenario file, or on this script file (its `expect` says whether its stream is "
    "an answer: what `rrkit explore` writes), instead of the catalogue (repeatable).",
)
@click.option(
    "--transport",
    type=click.Choice(["http", "ws", "both"]),
    default="both",
    show_default=True,
    help="Play each scenario over HTTP SSE, over WebSocket, or both (a scenario runs only where it applies).",
)
@click.option(
    "--timeout",
    type=SECONDS,
    help=f"Seconds (more than 0) a client may run per scenario and transport, then stopped (and breaks `ends`); "
    f"with --server, an answer may take per step.  [default: {DEFAULT_TIMEOUT:g}; {ANSWER_TIMEOUT:g} with --server]",
)
@click.option(
    "--profile",
    metavar="NAME|FILE",
    help="Also judge a kind of client's finer rules: a shipped profile (codex, openai-sdk) or a profile file.",
)
@click.option(
    "--server",
    "server_url",
    metavar="URL",
    help="Judge a Responses server instead: its base URL (http://HOST:PORT/v1), sent the probe battery.",
)
@click.option("--model", help="The model every probe names.  [default: gpt-4.1-mini]")
@click.option(
    "--budget",
    type=SECONDS,
    help=f"Seconds the whole --server run may take; the probes left then are reported not run (a `must`).  "
    f"[default: {RUN_BUDGET:g}]",
)
@click.option(
    "--api-key-env",
    metavar="VAR",
    help="The environment variable holding the API key sent (a placeholder when unset).  [default: OPENAI_API_KEY]",
)
@report_options
@click.pass_context
def conform(
    ctx: click.Context,
    server_url: str | None,
    model: str | None,
    api_key_env: str | None,
    budget: float | None,
    list_only: bool,
    only: tuple[str, ...],
    scenario_paths: tuple[Path, ...],
    profile: str | None,
    transport: str,
    timeout: float | None,
    outputs: ReportOutputs,
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

    Both write the same report (--json, --junit, --html, --github), as `validate`, `diff` and `replay` do.

    Exit status: 0 every must (and profile rule) held, 1 one broken, 2 a usage or file error, or a --server
    where nothing answers.

    \b
    Examples:
      rrkit conform --list
      rrkit conform --profile codex
      rrkit conform --transport http --junit conform.xml -- python my_client.py
      rrkit conform --server http://127.0.0.1:8000/v1 --transport both --junit server.xml
    """
    command = client_command(ctx)
    given = {name for name in (*CLIENT_ONLY, *SERVER_ONLY) if ctx.params.get(name) is not None}
    transports = tuple(name for name in TRANSPORTS if transport in (name, "both"))
    if server_url is not None:
        if scenario_paths:
            raise click.UsageError("--scenario judges a client on a scenario: give no --server with it")
        if command or given & set(CLIENT_ONLY):
            raise click.UsageError("--server judges a server: give no client command and no --profile with it")
        target = ServerTarget(
            server_url,
            model or "gpt-4.1-mini",
            api_key_env or "OPENAI_API_KEY",
            timeout or ANSWER_TIMEOUT,
            budget or RUN_BUDGET,
        )
        _conform_server(target, list_only, only, transports, outputs)
        return
    if given & set(SERVER_ONLY):
        raise click.UsageError("--model, --api-key-env and --budget go with --server: give --server URL, or leave them")
    scenarios = [_scenario_file(path) for path in scenario_paths] or None
    _conform_client(command, list_only, only, scenarios, profile, transports, timeout or DEFAULT_TIMEOUT, outputs)


def _scenario_file(path: Path) -> Scenario:
    from ..conform.scenario import load_scenario_or_script

    return load_scenario_or_script(path)


def _conform_client(
    command: list[str] | None,
    list_only: bool,
    only: tuple[str, ...],
    scenarios: list[Scenario] | None,
    profile: str | None,
    transports: tuple[Transport, ...],
    timeout: float,
    outputs: ReportOutputs,
) -> None:
    if not list_only:
        judged = shlex.join(command) if command else "rrkit's reference client"
        click.echo(
            f"rrkit conform: judging {judged} over {' and '.join(transports)}, each scenario on a fresh fake server; "
            f"a run may take {timeout:g} s (--timeout)",
            err=True,
        )
    from rich.console import Console

    if list_only:
        from ..conform.listing import listed_profiles, listed_scenarios
        from ..conform.render import render_list

        render_list(listed_scenarios(only), listed_profiles(), Console(highlight=False))
        return
    from ..conform.profile import load_profile
    from ..conform.report import run

    judged_by = load_profile(profile) if profile is not None else None
    progress = Console(stderr=True, highlight=False)

    def said(result: Any) -> None:
        verdict = "ok" if result.ok else "FAILED"
        progress.print(f"{result.run.scenario} [{result.run.transport}] {verdict}", markup=False)

    report = run(
        command or None,
        only=only,
        scenarios=scenarios,
        transports=transports,
        timeout=timeout,
        profile=judged_by,
        on_result=said,
    )
    conclude_report(report.to_report(), outputs)


@dataclass(frozen=True)
class ServerTarget:
    """What `--server` was given: the base URL, the model the probes name, where the API key is, the timeout."""

    url: str
    model: str
    key_env: str
    timeout: float
    budget: float


def _conform_server(
    given: ServerTarget,
    list_only: bool,
    only: tuple[str, ...],
    transports: tuple[Transport, ...],
    outputs: ReportOutputs,
) -> None:
    if not list_only:
        click.echo(
            f"rrkit conform --server: judging {given.url} over {' and '.join(transports)}; an answer may take "
            f"{given.timeout:g} s, the whole run {given.budget:g} s (--timeout, --budget)",
            err=True,
        )
    from rich.console import Console

    if list_only:
        from ..conform.listing import listed_probes
        from ..conform.server.render import render_probes

        render_probes(listed_probes(only), Console(highlight=False))
        return
    from ..conform.server.drive import Target
    from ..conform.server.report import run_server

    key = os.environ.get(given.key_env) or "rrkit-conform"
    target = Target(given.url, model=given.model, api_key=key, timeout=given.timeout)
    progress = Console(stderr=True, highlight=False)

    def said(result: Any) -> None:
        progress.print(f"{result.probe} [{result.transport}] {'ok' if result.ok else 'FAILED'}", markup=False)

    report = run_server(target, only=only, transports=transports, on_result=said, budget=given.budget)
    conclude_report(report.to_report(), outputs)


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
    from ..differential.codex import CODEX_VERSION, find_codex
    from ..script.shipped import script_files

    directory = fixtures_directory(fixtures_dir)
    paths = [path for path in script_files(directory) if not only or path.stem in only]
    if not paths:
        named = f" named {', '.join(only)}" if only else ""
        raise FileError(f"no scripts to run in {directory}{named}: `rrkit fixtures` lists the shipped ones")
    # said before Codex is looked for: asking each candidate its version starts node, a quarter of a second
    click.echo(f"rrkit compare-codex: Codex CLI {CODEX_VERSION} and the reference client, scripts from {directory}")
    codex = find_codex(codex_path)
    click.echo(f"  Codex CLI: {codex}")
    from ..differential.fixtures import compare_scripts, format_comparisons, summary
    from ..differential.settings import Budgets

    budgets = Budgets(idle_timeout=idle_timeout)
    results = compare_scripts(paths, codex, transports=transports or TRANSPORTS, budgets=budgets)
    click.echo(format_comparisons(results, verbose=verbose))
    click.echo(summary(results))
    if not all(result.agree for result in results):
        failed()
