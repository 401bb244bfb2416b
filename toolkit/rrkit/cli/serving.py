"""`rrkit serve` and `rrkit record`: a fake server or a recording proxy in the foreground until Ctrl-C, and the one
path both take: open the cassette's deck, serve, then report and save what was recorded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

import click

from ..cassette.recordmode import RecordMode, parse_record_mode
from ..protocol.exceptions import ScriptError, SettingError

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from ..cassette.match import MatchConfig
    from ..cassette.modes import CassetteDeck
    from ..cassette.redact import Redactor
    from ..relay import UpstreamSource
    from ..script.models import Script
    from ..script.select import ReplySource
    from ..server.runner import FakeServer
from .common import NOT_NEGATIVE, FileError
from .group import main
from .running import in_foreground, report_unplayed, save_recording
from .server_options import ServerOptions, cassette_options, server_options


@main.command()
@click.option(
    "--script",
    "script_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A YAML or JSON script, or a shipped one as fixture:NAME (`rrkit fixtures` lists them); without it "
    "every request gets a short text reply.",
)
@cassette_options(
    "Replay this cassette (and, in a recording mode, record into it).",
    "none",
    "With --cassette: none (replay only), once, new_episodes, all or rewrite.",
)
@click.option(
    "--upstream",
    help="With --cassette and a recording mode: the base URL of a Responses endpoint that answers what is "
    "recorded (instead of --script).",
)
@click.option(
    "--time-scale",
    type=NOT_NEGATIVE,
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
@server_options
def serve(
    script_path: Path | None,
    cassette_path: Path | None,
    record_mode: str,
    upstream: str | None,
    time_scale: float,
    keep: int,
    server: ServerOptions,
) -> None:
    """Run the fake Responses server until Ctrl-C: play a script, or replay (and record) a cassette. Each
    exchange prints one line as it ends (--quiet silences them; --journal FILE.jsonl keeps them as JSON).

    Exit status: 0 stopped, 1 its recording could not be written (its journal keeps it), 2 a usage or file error.

    \b
    Examples:
      rrkit serve --script fixture:drop-mid-stream
      rrkit serve --script my-script.yaml --port 8000
      rrkit serve --port 0 --ready-file /tmp/rrkit.json --journal /tmp/exchanges.jsonl --quiet
      rrkit serve --cassette codex.json              # matching with the preset it stores
      rrkit serve --cassette run.json --upstream https://api.openai.com/v1 --record-mode new_episodes
    """
    if upstream is not None and (cassette_path is None or script_path is not None):
        raise click.UsageError("--upstream answers what is recorded into --cassette, in place of --script: give one")
    match = server.match() if cassette_path is not None or server.matching_given else None
    script = _script(script_path)
    if cassette_path is None:
        from ..script import default_reply
        from ..server.runner import FakeServer

        try:
            fake = FakeServer(script, keep=keep, **server.settings)  # without --script, the default script
        except SettingError as error:
            raise click.ClickException(str(error)) from None
        name, steps = (script.name, len(script.responses)) if script else (default_reply.NAME, 0)
        served = f"rrkit: serving script {name!r} ({steps} steps)"
        serve_then_save(fake, None, server, served, "Press Ctrl-C to stop.", kept="rrkit: stopped")
        return
    assert match is not None
    answers = _relayed(server, upstream) if upstream is not None else script
    fake, deck = cassette_server(
        cassette_path,
        parse_record_mode(record_mode),
        server,
        answers,
        match,
        hint=f"use --script {cassette_path}",
        keep=keep,
        time_scale=time_scale,
        source_name="proxy" if upstream is not None else "fake-server",
    )
    matching = deck.replay.matching if deck.replay is not None else ""
    served = f"rrkit: serving cassette {str(cassette_path)!r} (record mode {deck.mode.value})"
    served += f", matching with {matching}" if matching else ""
    kept = f"rrkit: stopped; {cassette_path} kept as it was (record mode {deck.mode.value})"
    serve_then_save(fake, deck, server, served, "Press Ctrl-C to stop.", kept=kept)


def _script(path: Path | None) -> Script | None:
    """The `--script` given, loaded; a file error naming it (a cassette named as one)."""
    if path is None:
        return None
    from ..script.loader import load_script  # the script models, and pydantic: not for the default script

    try:
        return load_script(path)
    except ScriptError as error:
        from ..files.kind import not_a_script

        raise FileError(not_a_script(path, f"use --cassette {path}", error.seemed) or str(error)) from None


def _relayed(server: ServerOptions, url: str) -> UpstreamSource:
    """The relay to `url`; an error (exit status 1) for a URL it cannot relay to."""
    try:
        return server.upstream(url)
    except SettingError as error:
        raise click.ClickException(str(error)) from None


@main.command()
@click.option("--upstream", required=True, help="Base URL of the Responses endpoint to forward to (e.g. .../v1).")
@cassette_options(
    "Where to write the recording (atomically, when the proxy stops).",
    "rewrite",
    "rewrite (start afresh), new_episodes (replay what the cassette has, record the rest), all (append "
    "everything), once (record only if the cassette does not exist), none (replay only).",
    required=True,
)
@click.option("--redact-header", "--header", "headers", multiple=True, help="An extra header to redact (repeatable).")
@click.option("--redact-path", "paths", multiple=True, help="A JSON path to redact, e.g. input.*.content (repeatable).")
@server_options
def record(
    upstream: str,
    cassette_path: Path,
    record_mode: str,
    headers: tuple[str, ...],
    paths: tuple[str, ...],
    server: ServerOptions,
) -> None:
    """Forward SSE and WebSocket traffic to an upstream until Ctrl-C (or SIGTERM), then write it as a cassette.
    Each exchange prints one line as it ends (--quiet silences them).

    Exit status: 0 stopped, 1 the cassette could not be written (its journal keeps it), 2 a usage or file error.

    \b
    Example:
      rrkit record --upstream https://api.openai.com/v1 --cassette session.json
      OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 python my_client.py   # in another terminal
    """
    from ..cassette.redact import Redactor

    match = server.match()
    source = _relayed(server, upstream)
    try:
        redactor = Redactor.with_extra(headers, paths).knowing(source.secrets)
    except SettingError as error:
        raise click.UsageError(str(error)) from None
    mode = parse_record_mode(record_mode)
    hint = "give a new cassette file to record into, e.g. --cassette session.json"
    proxy, deck = cassette_server(
        cassette_path, mode, server, source, match, hint=hint, redactor=redactor, source_name="proxy"
    )
    headline = f"rrkit: recording {source.shown_url} into {cassette_path} (record mode {mode.value})"
    kept = f"rrkit: record mode {mode.value}: {cassette_path} kept as it was"
    stop_hint = "Press Ctrl-C to stop and write the cassette."
    serve_then_save(proxy, deck, server, headline, stop_hint, kept=kept, count_replayed=False)


# -- the path both take ------------------------------------------------------------------------------------


class DeckOptions(TypedDict, total=False):
    """What a command opens a cassette's deck with beyond its path, mode, upstream and matching."""

    redactor: Redactor
    time_scale: float
    source_name: str


def cassette_server(
    path: Path,
    mode: RecordMode,
    server: ServerOptions,
    upstream: Script | ReplySource | None,
    match: MatchConfig,
    *,
    hint: str,
    keep: int | None = None,
    **opening: Unpack[DeckOptions],
) -> tuple[FakeServer, CassetteDeck]:
    """The deck of the cassette at `path` (`CassetteDeck.open`: a file error naming it when it cannot be used,
    a script named as one with `hint`), and the server answering from it, journaling what it records."""
    from ..cassette.modes import CassetteDeck
    from ..protocol.exceptions import CassetteError
    from ..server.runner import FakeServer

    try:
        deck = CassetteDeck.open(path, mode, upstream=upstream, match=match, hint=hint, **opening)
    except CassetteError as error:
        raise FileError(str(error)) from None
    try:
        fake = FakeServer(source=deck.source(), keep=None if deck.records else keep, **server.settings)
        deck.journal_to(fake.state.capture)  # each exchange on disk as it ends: a crash loses none
    except (SettingError, CassetteError) as error:  # a folder that cannot hold the journal
        raise click.ClickException(str(error)) from None
    return fake, deck


def serve_then_save(
    fake: FakeServer,
    deck: CassetteDeck | None,
    server: ServerOptions,
    headline: str,
    stop_hint: str,
    *,
    kept: str,
    count_replayed: bool = True,
) -> None:
    """Serve in the foreground until stopped; then, with a deck, list the recorded exchanges a replay-only deck
    never played and write what it recorded, saying what was written (how many replayed too, if
    `count_replayed`), or `kept` when nothing was."""
    writes = deck is not None and deck.records
    holding = "rrkit: still writing the cassette, please wait" if writes else "rrkit: stopping"
    with in_foreground(fake, headline, stop_hint, server.host, server.port, server.observe, holding):
        if deck is None:
            click.echo(kept)
            return
        report_unplayed(deck, fake.state.source)
        written = save_recording(deck, fake)
        if written is None:
            click.echo(kept)
            return
        recorded = sum(1 for exchange in fake.exchanges if not exchange.replayed)
        replayed = len(fake.exchanges) - recorded
        again = f", {replayed} replayed" if replayed and count_replayed else ""
        click.echo(f"rrkit: wrote {written} ({recorded} exchange{'' if recorded == 1 else 's'} recorded{again})")
