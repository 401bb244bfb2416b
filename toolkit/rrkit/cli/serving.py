"""`rrkit serve` and `rrkit record`: a fake server or a recording proxy in the foreground until Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..cassette.recordmode import RecordMode, parse_record_mode
from ..protocol.exceptions import ScriptError
from ..script.loader import default_script, load_script
from ..server.runner import FakeServer

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from ..cassette.modes import CassetteDeck
from .common import PORT, RECORD_MODES, FileError, file_error, log_level_option
from .group import main
from .options import (
    admin_options,
    limit_option,
    match_config,
    match_options,
    observe_options,
    server_settings,
    upstream_options,
)
from .running import Observe, in_foreground, report_unplayed, save_recording, upstream_source


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=PORT, default=0, show_default=True, help="Port to bind, 0-65535; 0 picks a free one.")
@click.option(
    "--script",
    "script_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A YAML or JSON script, or a shipped one as fixture:NAME (`rrkit fixtures` lists them); without it "
    "every request gets a short text reply.",
)
@click.option(
    "--cassette",
    "cassette_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Replay this cassette (and, in a recording mode, record into it).",
)
@click.option(
    "--record-mode",
    type=click.Choice(RECORD_MODES),
    default="none",
    show_default=True,
    help="With --cassette: none (replay only), once, new_episodes, all or rewrite.",
)
@click.option(
    "--upstream",
    help="With --cassette and a recording mode: the base URL of a Responses endpoint that answers what is "
    "recorded (instead of --script).",
)
@click.option(
    "--time-scale",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Replay timing, 0 or more: 0 at once, 1 as recorded, 2 twice as slow.",
)
@click.option(
    "--keep",
    default=100,
    show_default=True,
    type=click.IntRange(min=0),
    help="Exchanges kept in memory when nothing is recorded (the most recent); recording keeps every one.",
)
@click.option(
    "--lenient",
    is_flag=True,
    help='Accept request fields of coercible types (stream: "yes", temperature: "0.5") instead of a 400.',
)
@upstream_options
@match_options
@observe_options
@admin_options
@limit_option
@log_level_option
def serve(
    host: str,
    port: int,
    script_path: Path | None,
    cassette_path: Path | None,
    record_mode: str,
    upstream: str | None,
    time_scale: float,
    keep: int,
    lenient: bool,
    upstream_connect_timeout: float,
    upstream_timeout: float,
    upstream_redirects: str,
    match_presets: tuple[str, ...],
    match_ignore: tuple[str, ...],
    match_normalize: tuple[str, ...],
    allow_repeats: bool,
    quiet: bool,
    journal_path: Path | None,
    ready_path: Path | None,
    admin_token: str | None,
    admin_hosts: tuple[str, ...],
    limits: tuple[str, ...],
    log_level: str,
) -> None:
    """Run the fake Responses server until Ctrl-C: play a script, or replay (and record) a cassette. Each
    exchange prints one line as it ends (--quiet silences them; --journal FILE.jsonl keeps them as JSON).

    \b
    Examples:
      rrkit serve --script fixture:drop-mid-stream
      rrkit serve --script my-script.yaml --port 8000
      rrkit serve --port 0 --ready-file /tmp/rrkit.json --journal /tmp/exchanges.jsonl --quiet
      rrkit serve --cassette codex.json --match-preset codex
      rrkit serve --cassette run.json --upstream https://api.openai.com/v1 --record-mode new_episodes
    """
    deck: CassetteDeck | None = None
    settings = server_settings(host, port, log_level, lenient, admin_token, admin_hosts, limits)
    if upstream is not None and (cassette_path is None or script_path is not None):
        raise click.UsageError("--upstream answers what is recorded into --cassette, in place of --script: give one")
    matching = (match_presets, match_ignore, match_normalize, allow_repeats)
    match = match_config(*matching) if cassette_path is not None or any(matching) else None
    mode = parse_record_mode(record_mode)
    # rewrite does not read the cassette: check it is no script before overwriting it
    overwrites = mode is RecordMode.REWRITE or str(cassette_path).startswith("fixture:")
    hint = f"use --script {cassette_path} (it is not overwritten)"
    if cassette_path is not None and overwrites:
        from ..tools.file_kind import not_a_cassette

        if wrong := not_a_cassette(cassette_path, hint):
            raise FileError(wrong)
    try:
        script = load_script(script_path) if script_path else None
    except ScriptError as error:
        from ..tools.file_kind import not_a_script

        kind = not_a_script(script_path, f"use --cassette {script_path}") if script_path else None
        raise file_error(error, kind) from None
    try:
        if cassette_path is not None:
            from ..cassette.modes import CassetteDeck
            from ..protocol.exceptions import CassetteError
            from ..tools.file_kind import not_a_cassette

            relay = (upstream_connect_timeout, upstream_timeout, upstream_redirects)
            answers = upstream_source(upstream, settings["limits"], *relay) if upstream is not None else script
            try:
                deck = CassetteDeck.open(
                    cassette_path,
                    mode,
                    upstream=answers,
                    match=match,
                    time_scale=time_scale,
                    source_name="proxy" if upstream is not None else "fake-server",
                )
            except CassetteError as error:
                raise file_error(error, not_a_cassette(cassette_path, f"use --script {cassette_path}")) from None
            server = FakeServer(source=deck.source(), keep=None if deck.records else keep, **settings)
            what = f"cassette {str(cassette_path)!r} (record mode {deck.mode.value})"
            deck.journal_to(server.state.capture)  # each exchange on disk as it ends: a crash loses none
        else:
            script = script or default_script()
            server = FakeServer(script, keep=keep, **settings)
            what = f"script {script.name!r} ({len(script.responses)} steps)"
    except (ScriptError, ValueError) as error:  # a CassetteError is a ValueError
        raise click.ClickException(str(error)) from None

    holding = "rrkit: still writing the cassette, please wait" if deck and deck.records else "rrkit: stopping"
    observe = Observe(quiet, journal_path, ready_path)
    with in_foreground(server, f"rrkit: serving {what}", "Press Ctrl-C to stop.", host, port, observe, holding):
        if deck is None:
            click.echo("rrkit: stopped")
            return
        report_unplayed(deck, server.state.source)
        if (written := save_recording(deck, server)) is None:
            click.echo(f"rrkit: stopped; {cassette_path} kept as it was (record mode {deck.mode.value})")
            return
        recorded = sum(1 for exchange in server.exchanges if not exchange.replayed)
        replayed = len(server.exchanges) - recorded
        again = f", {replayed} replayed" if replayed else ""
        click.echo(f"rrkit: wrote {written} ({recorded} exchange{'' if recorded == 1 else 's'} recorded{again})")


@main.command()
@click.option("--upstream", required=True, help="Base URL of the Responses endpoint to forward to (e.g. .../v1).")
@click.option(
    "--cassette",
    "cassette_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the recording (atomically, when the proxy stops).",
)
@click.option(
    "--record-mode",
    type=click.Choice(RECORD_MODES),
    default="rewrite",
    show_default=True,
    help="rewrite (start afresh), new_episodes (replay what the cassette has, record the rest), all (append "
    "everything), once (record only if the cassette does not exist), none (replay only).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=PORT, default=0, show_default=True, help="Port to bind, 0-65535; 0 picks a free one.")
@click.option("--redact-header", "--header", "headers", multiple=True, help="An extra header to redact (repeatable).")
@click.option("--redact-path", "paths", multiple=True, help="A JSON path to redact, e.g. input.*.content (repeatable).")
@click.option(
    "--lenient",
    is_flag=True,
    help='Accept request fields of coercible types (stream: "yes", temperature: "0.5") instead of a 400.',
)
@upstream_options
@match_options
@observe_options
@admin_options
@limit_option
@log_level_option
def record(
    upstream: str,
    cassette_path: Path,
    record_mode: str,
    host: str,
    port: int,
    headers: tuple[str, ...],
    paths: tuple[str, ...],
    lenient: bool,
    upstream_connect_timeout: float,
    upstream_timeout: float,
    upstream_redirects: str,
    match_presets: tuple[str, ...],
    match_ignore: tuple[str, ...],
    match_normalize: tuple[str, ...],
    allow_repeats: bool,
    quiet: bool,
    journal_path: Path | None,
    ready_path: Path | None,
    admin_token: str | None,
    admin_hosts: tuple[str, ...],
    limits: tuple[str, ...],
    log_level: str,
) -> None:
    """Forward SSE and WebSocket traffic to an upstream until Ctrl-C (or SIGTERM), then write it as a cassette.
    Each exchange prints one line as it ends (--quiet silences them).

    \b
    Example:
      rrkit record --upstream https://api.openai.com/v1 --cassette session.json
      OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 python my_client.py   # in another terminal
    """
    from ..cassette.modes import CassetteDeck
    from ..cassette.redact import Redactor
    from ..protocol.exceptions import CassetteError
    from ..tools.file_kind import not_a_cassette

    match = match_config(match_presets, match_ignore, match_normalize, allow_repeats)
    settings = server_settings(host, port, log_level, lenient, admin_token, admin_hosts, limits)
    mode = parse_record_mode(record_mode)
    hint = "give a new cassette file to record into, e.g. --cassette session.json"
    if mode is RecordMode.REWRITE and (wrong := not_a_cassette(cassette_path, hint + " (it is not overwritten)")):
        raise FileError(wrong)
    try:
        relay = (upstream_connect_timeout, upstream_timeout, upstream_redirects)
        source = upstream_source(upstream, settings["limits"], *relay)
        redactor = Redactor.with_extra(headers, paths).knowing(source.secrets)
        try:
            deck = CassetteDeck.open(
                cassette_path, mode, upstream=source, match=match, redactor=redactor, source_name="proxy"
            )
        except CassetteError as error:
            raise file_error(error, not_a_cassette(cassette_path, hint)) from None
        proxy = FakeServer(source=deck.source(), **settings)
        deck.journal_to(proxy.state.capture)  # each exchange on disk as it ends: a crash loses none
    except (CassetteError, ValueError) as error:
        raise click.ClickException(str(error)) from None

    headline = f"rrkit: recording {source.shown_url} into {cassette_path} (record mode {deck.mode.value})"
    holding = "rrkit: still writing the cassette, please wait"
    stop_hint = "Press Ctrl-C to stop and write the cassette."
    with in_foreground(proxy, headline, stop_hint, host, port, Observe(quiet, journal_path, ready_path), holding):
        report_unplayed(deck, proxy.state.source)
        written = save_recording(deck, proxy)
        count = sum(1 for exchange in proxy.exchanges if not exchange.replayed)
        if written is None:
            click.echo(f"rrkit: record mode {deck.mode.value}: {cassette_path} kept as it was")
        else:
            click.echo(f"rrkit: wrote {written} ({count} exchange{'' if count == 1 else 's'} recorded)")  # as serve
