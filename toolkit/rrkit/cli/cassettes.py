"""The cassette commands: `show`, `diff`, `validate`, `replay` (against a client or a server) and `recover`."""

from __future__ import annotations

from pathlib import Path

import click

from .common import FileError, read_cassette, strict_streams_option, strict_streams_usage, write_file
from .group import main
from .options import diff_options, match_config, match_options, timeout_option
from .reporting import ReportOutputs, conclude_report, report_options


@main.command()
@click.argument("path", metavar="CASSETTE|JOURNAL", type=click.Path(path_type=Path))
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the timeline as one self-contained HTML page (no script, no external resources).",
)
@click.option("--session", metavar="NAME", help="A journal's exchanges of this session only.")
@click.option(
    "--route", metavar="NAME", help="Only those on this route: responses.create, responses.retrieve, models.list, ..."
)
@click.option("--method", metavar="METHOD", help="Only those with this HTTP method (GET, POST, ...).")
@click.option("--status", metavar="STATUS", help="Only those with this status: 429, or a class: 4xx, 5xx.")
@click.option(
    "--outcome", metavar="KIND", help="Only those that ended so: completed, failed, refused, dropped, answered, ..."
)
@click.option("--model", metavar="MODEL", help="Only those asking for this model.")
@click.option(
    "--since",
    metavar="ID|TIME",
    help="Only those after exchange ID, or started at TIME or later (ISO 8601, UTC unless it says; or Unix "
    "seconds with a decimal point).",
)
@click.option("--until", metavar="ID|TIME", help="Only those up to exchange ID, or started before TIME.")
@click.option("--json", "as_json", is_flag=True, help="Print a journal's matching records as JSON lines.")
def show(path: Path, html_path: Path | None, as_json: bool, **filters: str | None) -> None:
    """Show a cassette as a timeline: its WebSocket connections, then each exchange in order (full or
    incremental, warmup, request sizes, events compressed, timing, outcome, protocol problems). Or show a
    journal (`rrkit serve --journal FILE.jsonl`, told by its content or its .jsonl name): one line per exchange,
    then `N of TOTAL exchanges`; the filter options keep those of a session, route, method, status, outcome,
    model or time (they apply to journals only), --json prints the records themselves.

    Exit status: 0 shown, 2 a usage or file error.

    \b
    Examples:
      rrkit show cassettes/drop-mid-stream.ws.json --html drop-mid-stream.html
      rrkit show exchanges.jsonl --status 4xx --since 2026-12-07T09:00:00Z
    """
    from ..tools.show_journal import is_journal

    given = {name: value for name, value in filters.items() if value}
    if is_journal(path):
        if html_path is not None:
            raise click.UsageError("--html draws a cassette's timeline: a journal is shown as lines (or --json)")
        _show_journal(path, given, as_json)
        return
    if given or as_json:
        options = ", ".join(f"--{name}" for name in (*given, *(("json",) if as_json else ())))
        raise click.UsageError(
            f"{options}: the filters apply to journal files (`rrkit serve --journal FILE.jsonl`), "
            f"and {path} is no journal: show the cassette without them"
        )
    from ..tools.show import build_timeline
    from ..tools.show_terminal import print_timeline

    cassette = read_cassette(path)
    timeline = build_timeline(cassette, path=str(path))
    print_timeline(timeline)
    if html_path is not None:
        from ..tools.show_html import write_html

        written = write_file(html_path, "the HTML page", lambda: write_html(timeline, html_path))
        click.echo(f"rrkit: wrote {written}")


def _show_journal(path: Path, given: dict[str, str], as_json: bool) -> None:
    """A journal's exchanges that the filters keep, one line each (or their records), then how many of all."""
    from ..server.exchange_filter import ExchangeFilter, FilterError
    from ..server.exchange_log import record_line
    from ..tools.show_journal import read_journal

    try:
        wanted = ExchangeFilter.parse(given)
    except FilterError as error:
        raise click.BadParameter(str(error), param_hint=f"'--{error.param}'") from None
    view = read_journal(path, wanted, FileError)
    for warning in view.warnings:
        click.echo(warning, err=True)
    for entry in view.shown:
        click.echo(entry.text if as_json else record_line(entry.record))
    click.echo(f"{len(view.shown)} of {view.total} exchanges", err=as_json)  # stdout stays JSON lines with --json


@main.command()
@click.argument("a_path", metavar="A", type=click.Path(path_type=Path))
@click.argument("b_path", metavar="B", type=click.Path(path_type=Path))
@diff_options
@report_options
def diff(a_path: Path, b_path: Path, strict: bool, ignore: tuple[str, ...], view: str, outputs: ReportOutputs) -> None:
    """Compare two cassettes exchange by exchange: requests (logical and wire), full vs incremental, events,
    outcomes, statuses, bodies, headers, connections, and the protocol rules each breaks.

    Exit status: 0 no difference, 1 differences, 2 a usage or file error.

    \b
    Example (a fresh recording against the golden one, tool outputs left out):
      rrkit demo --record /tmp/now
      rrkit diff cassettes/tool-loop.ws.json /tmp/now/tool-loop.ws.json --ignore 'input[*].output'
    """
    from ..protocol.exceptions import SettingError
    from ..tools.diff import VIEWS, diff_cassettes
    from ..tools.diff_render import render_report

    first, second = read_cassette(a_path), read_cassette(b_path)
    chosen = next(name for name in VIEWS if name == view)  # click.Choice checked it; this narrows the type
    try:
        report = diff_cassettes(
            first, second, strict=strict, ignore=ignore, view=chosen, names=(str(a_path), str(b_path))
        )
    except SettingError as error:
        raise click.UsageError(str(error)) from None
    conclude_report(report.to_report(), outputs, lambda console: render_report(report, console))


@main.command()
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(path_type=Path))
@report_options
def validate(cassettes: tuple[Path, ...], outputs: ReportOutputs) -> None:
    """Check cassettes against the protocol: the event order rules of every event family in each recorded
    stream (side-channel frames left out), each recorded outcome against its terminal event, and each WebSocket
    delta against the earlier response it continues. Recorded bodies and events are held to the OpenAPI
    description field by field: where they depart, that is the recording's (a `should`, never a failure). A folder
    stands for every cassette under it.

    Exit status: 0 no rule broken, 1 a rule broken, 2 a usage or file error.

    \b
    Examples:
      rrkit validate cassettes/
      rrkit validate session.json --json
    """
    from ..tools.validate import Validated, validate_recording, validation_report

    validated = []
    for path in _cassette_files(cassettes):
        cassette = read_cassette(path)
        validated.append(Validated(str(path), len(cassette.exchanges), validate_recording(cassette)))
    report = validation_report(validated)
    conclude_report(report, outputs)


class ThenCommand(click.Command):
    """`... -- COMMAND ...`: what follows `--` is the client's command line, passed on untouched."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta["rrkit.command"] = args[at + 1 :]
            args = args[:at]
        return super().parse_args(ctx, args)


def client_command(ctx: click.Context) -> list[str] | None:
    """The client's command line after `--` (None: rrkit's reference client); an empty one is a usage error."""
    command: list[str] | None = ctx.meta.get("rrkit.command")
    if command is not None and not command:
        raise click.UsageError("nothing after `--`: give the client's command, e.g. -- python client.py")
    return command


@main.command(cls=ThenCommand)
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--against",
    "against_url",
    help="Check a server instead: send the recorded requests to this base URL (e.g. http://127.0.0.1:PORT/v1) "
    "and diff its answers against the recorded ones.",
)
@diff_options
@timeout_option(120.0, "cassette")
@report_options
@match_options
@strict_streams_option
@click.pass_context
def replay(
    ctx: click.Context,
    cassettes: tuple[Path, ...],
    against_url: str | None,
    view: str,
    strict: bool,
    ignore: tuple[str, ...],
    timeout: float,
    outputs: ReportOutputs,
    match_presets: tuple[str, ...],
    match_ignore: tuple[str, ...],
    match_normalize: tuple[str, ...],
    allow_repeats: bool,
    strict_streams: bool,
) -> None:
    """Check a client against cassettes: serve each one, run the client against it, and diff what the client
    did against the recording. The client is rrkit's reference client, or the command after `--`, run with
    RRKIT_HTTP_URL, RRKIT_WS_URL and OPENAI_BASE_URL (and OPENAI_API_KEY, if unset) in its environment.
    With --against URL, check a server instead: the recorded requests go to it, its answers are diffed.

    Exit status: 0 every run behaved as recorded, 1 a difference, 2 a usage or file error.

    \b
    Examples:
      rrkit replay cassettes/
      rrkit replay cassettes/text.http.json -- python client.py
      rrkit replay --against http://127.0.0.1:8080/v1 cassettes/tool-loop.ws.json
    """
    import asyncio

    command = client_command(ctx)
    strict_streams_usage(strict_streams, command or against_url)
    if command and against_url:
        raise click.UsageError("--against checks a server; a client command after `--` checks a client: give one")
    who = (
        f"the server at {against_url}" if against_url is not None else " ".join(command or ()) or "the reference client"
    )
    match = match_config(match_presets, match_ignore, match_normalize, allow_repeats)
    loaded = [(path, read_cassette(path)) for path in _cassette_files(cassettes)]
    click.echo(f"rrkit replay: {len(loaded)} cassette(s), each against {who}", err=True)
    from ..tools.diff import VIEWS
    from ..tools.replay import replay_report, run_replays, show_replays

    results = asyncio.run(
        run_replays(
            loaded,
            command=command,
            against=against_url,
            match=match,
            view=next(name for name in VIEWS if name == view),  # click.Choice checked it; this narrows the type
            strict=strict,
            ignore=ignore,
            timeout=timeout,
            strict_streams=strict_streams,
        )
    )
    report = replay_report(results, who)
    conclude_report(report, outputs, lambda console: show_replays(results, who, console))


def _cassette_files(given: tuple[Path, ...]) -> list[Path]:
    """The cassettes named, a folder standing for every `*.json` under it."""
    from ..protocol.exceptions import CassetteError

    files: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(path.rglob("*.json"))
            if not found:
                raise CassetteError(f"{path}: no cassettes (*.json) in this folder: give a cassette or another folder")
            files += found
        elif path.exists():
            files.append(path)
        else:
            raise CassetteError(f"{path}: no such file or folder: check the path (`rrkit record` makes cassettes)")
    return files


@main.command()
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
def recover(cassettes: tuple[Path, ...]) -> None:
    """Merge into each cassette the journals a recording left next to it (a crash, or a final write that failed:
    free the space or fix the path first); the cassette is made from them when it does not exist. Journals of a
    recording still running are left alone. Opening a cassette to record into it does the same.

    Exit status: 0 recovered (or nothing to recover), 2 a usage or file error.

    \b
    Example:
      rrkit recover session.json
    """
    import warnings

    from ..cassette.journal_files import journal_paths

    for path in cassettes:
        if not journal_paths(path):  # nothing to recover: no cassette model loads
            click.echo(f"rrkit: {path}: no journal next to it, nothing to recover")
            continue
        from ..cassette.file import CassetteFile

        cassette = CassetteFile(path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                count = cassette.recover()
        except OSError as error:
            raise FileError(f"cannot recover {path}: {error.strerror or error}") from None
        left = cassette.journals()
        held = f"; {len(left)} journal(s) of a recording still running left alone" if left else ""
        click.echo(f"rrkit: {path}: recovered {count} exchange(s){held}")
