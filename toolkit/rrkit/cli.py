"""The `rrkit` command line: a thin front end, each option mapped to a call into the package."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from .cassette.recordmode import RecordMode, parse_record_mode
from .protocol.exceptions import LimitError, ScriptError
from .protocol.limits import UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_TIMEOUT, Limits, configured, given_limits
from .protocol.vocabulary import TRANSPORTS
from .script.loader import default_script, load_script
from .server.exchange_log import JournalFile, LinePrinter, when_settled
from .server.runner import FakeServer, LoopbackServer

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from .cassette.format import Cassette
    from .cassette.match import MatchConfig
    from .cassette.modes import CassetteDeck
    from .relay import UpstreamSource
    from .script.select import ReplySource


@click.group()
@click.version_option(package_name="rrkit")
def main() -> None:
    """rrkit: record/replay protocol testing for the OpenAI Responses streaming protocol.

    \b
    Examples:
      rrkit serve --script fixture:tool-loop
      rrkit record --upstream https://api.openai.com/v1 --cassette session.json
      rrkit demo
    """


class _FileError(click.ClickException):
    """A file that cannot be read as what it should be: exit status 2, like a usage error."""

    exit_code = 2


_fixtures_option = click.option(
    "--fixtures",
    "fixtures_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Directory of scripts; default: ./fixtures, else the scripts shipped with rrkit.",
)
"""The scripts `rrkit demo` and `rrkit compare-codex` run."""


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
"""uvicorn's log levels, for `--log-level`."""
RECORD_MODES = tuple(mode.value for mode in RecordMode)
PORT = click.IntRange(0, 65535)
SECONDS = click.FloatRange(min=0, min_open=True)


def _log_level_option(command: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        default="warning",
        show_default=True,
        help="uvicorn's log level (the per-exchange lines are rrkit's own: --quiet silences them).",
    )(command)


def _observe_options(command: Callable[..., None]) -> Callable[..., None]:
    """What a running server tells its user and its harness: a line per exchange, a journal, a ready file."""
    options = [
        click.option("--quiet", "-q", is_flag=True, help="Print no line per exchange (only start and stop)."),
        click.option(
            "--journal",
            "journal_path",
            type=click.Path(path_type=Path, dir_okay=False),
            help="Append each exchange, as it ends, to FILE.jsonl as one JSON object (README: the journal's fields).",
        ),
        click.option(
            "--ready-file",
            "ready_path",
            type=click.Path(path_type=Path, dir_okay=False),
            help='Once listening, write {"port", "http_url", "ws_url", "admin_url", "pid"} as JSON to this file '
            '(atomically; with "admin_token" and mode 0600 when admin calls need one); removed at exit. For --port 0 '
            "in harnesses.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _admin_options(command: Callable[..., None]) -> Callable[..., None]:
    """Who may call the admin API of a server the command runs (README: Admin API)."""
    options = [
        click.option(
            "--admin-token",
            envvar="RRKIT_ADMIN_TOKEN",
            help="Require `Authorization: Bearer TOKEN` on every admin call (env RRKIT_ADMIN_TOKEN); without it only "
            "loopback callers may, and a server bound to another address makes one up and prints it.",
        ),
        click.option(
            "--admin-host",
            "admin_hosts",
            multiple=True,
            help="A host name the admin API answers for, besides IP addresses and localhost (repeatable).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _limit_option(command: Callable[..., None]) -> Callable[..., None]:
    """The sizes a server the command runs accepts (rrkit.protocol.limits)."""
    return click.option(
        "--limit",
        "limits",
        multiple=True,
        metavar="NAME=SIZE",
        help="A size limit on what the server reads (repeatable): body (a request body as sent, default 32MiB), "
        "decoded-body (once decoded, 64MiB), ws-message (one WebSocket message, 32MiB): over it, a 413 or a 1009 "
        "close; memory (what is kept of past exchanges, 512MiB): the oldest evicted; upstream-message (an SSE message, "
        "a whole answer or a WebSocket frame from an upstream, 16MiB): the stream cut or a 502; script-file (64MiB) "
        "and cassette-file (1GiB). RRKIT_LIMITS gives the same settings (blank-separated) to every command.",
    )(command)


def _upstream_options(command: Callable[..., None]) -> Callable[..., None]:
    """How a relay treats its upstream (README: Recording proxy)."""
    options = [
        click.option(
            "--upstream-connect-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=UPSTREAM_CONNECT_TIMEOUT,
            show_default=True,
            help="Seconds reaching the upstream may take (TCP connect, TLS, the WebSocket handshake); then a 502.",
        ),
        click.option(
            "--upstream-timeout",
            type=click.FloatRange(min=0),
            default=UPSTREAM_TIMEOUT,
            show_default=True,
            help="Seconds the upstream may stay silent (before answering, or mid-stream) before the stream counts as "
            "cut; 0 waits for ever.",
        ),
        click.option(
            "--upstream-redirects",
            type=click.Choice(["none", "same-origin"]),
            default="none",
            show_default=True,
            help="none: an upstream redirect goes to the client as it came; same-origin: a 307 or 308 to the "
            "upstream's own scheme, host and port is followed (the key never goes to another host).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _server_settings(
    host: str,
    port: int,
    log_level: str,
    lenient: bool,
    admin_token: str | None,
    admin_hosts: tuple[str, ...],
    limits: tuple[str, ...],
) -> dict[str, Any]:
    """The FakeServer settings `serve` and `record` share, from their options."""
    try:
        parsed = configured(os.environ).with_settings(limits)
    except LimitError as error:
        raise click.BadParameter(str(error), param_hint="--limit") from None
    click.get_current_context().with_resource(given_limits(parsed))  # for what reads files: scripts, cassettes
    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        "lenient": lenient,
        "admin_token": admin_token,
        "admin_hosts": admin_hosts,
        "limits": parsed,
    }


class _StopSignals:
    """SIGINT and SIGTERM over a foreground server's life. Until it listens, a signal stops the start; while it
    runs, uvicorn's own handlers (installed over these) stop it; once they are gone again, a signal is held with
    `message` on stderr, so that a second Ctrl-C (or SIGTERM) never cuts the cassette being written."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.holding = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.holding:
            raise KeyboardInterrupt
        click.echo(self.message, err=True)


def _check_ready_path(path: Path | None) -> None:
    if path is not None and not path.resolve().parent.is_dir():
        raise click.BadParameter(
            f"{path}: the folder {path.resolve().parent} does not exist: create it, or give a path in an existing one",
            param_hint="--ready-file",
        )


def _write_ready_file(path: Path, running: LoopbackServer) -> None:
    """The ready file, atomically: a harness polling for it never reads half of it."""
    from urllib.parse import urlsplit

    port = urlsplit(running.http_url).port
    ready = {"port": port, "http_url": running.http_url, "ws_url": running.ws_url, "pid": os.getpid()}
    ready["admin_url"] = running.admin_url
    token = running.admin_token if isinstance(running, FakeServer) else None
    if token is not None:
        ready["admin_token"] = token
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # a token in it: for this user's eyes only
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if token else 0o644)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(json.dumps(ready) + "\n")
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        click.echo(
            f"rrkit: cannot write the ready file {path}: {error.strerror or error}; give another --ready-file", err=True
        )


@dataclass(frozen=True)
class _Observe:
    """The `_observe_options` given."""

    quiet: bool
    journal_path: Path | None
    ready_path: Path | None


@contextmanager
def _observed(server: FakeServer, quiet: bool, journal_path: Path | None) -> Iterator[None]:
    """A line per exchange on stdout (unless `quiet`) and the `--journal`, while the server runs."""
    capture = server.state.capture
    printer = None if quiet else LinePrinter(click.echo)
    try:
        journal = JournalFile(journal_path, lambda line: click.echo(line, err=True)) if journal_path else None
    except OSError as error:
        raise click.BadParameter(
            f"{journal_path}: cannot open for appending: {error.strerror or error}; give another file",
            param_hint="--journal",
        ) from None
    listeners = [when_settled(listener) for listener in (printer, journal) if listener is not None]
    capture.listeners.extend(listeners)
    try:
        yield
    finally:
        for listener in listeners:
            if listener in capture.listeners:
                capture.listeners.remove(listener)
        if printer is not None:
            printer.close()
            if printer.dropped:
                click.echo(f"rrkit: {printer.dropped} exchange line(s) dropped: stdout was not read", err=True)
        if journal is not None:
            journal.close()


@contextmanager
def _running(
    server: FakeServer,
    headline: str,
    stop_hint: str,
    host: str,
    port: int,
    observe: _Observe,
    holding: str,
) -> Iterator[None]:
    """Run a server in the foreground, printing its URLs once it listens, until Ctrl-C or SIGTERM; then run the
    body (writing the cassette) with further stop signals held, and remove the ready file."""
    ready_path = observe.ready_path
    _check_ready_path(ready_path)
    signals = _StopSignals(holding)

    def ready(running: LoopbackServer) -> None:
        signals.holding = True  # uvicorn's handlers stop the server now; ours hold a signal once they are gone
        if ready_path is not None:
            _write_ready_file(ready_path, running)  # before the URLs: one who read them finds the file
        click.echo(headline)
        click.echo(f"  HTTP base URL:      {running.http_url}")
        click.echo(f"  WebSocket base URL: {running.ws_url}   (endpoint {running.responses_ws_url})")
        if server.admin_token_made:
            click.echo(f"  Admin API:          {running.admin_url}   (Authorization: Bearer {server.admin_token})")
        click.echo(f"  {stop_hint}")

    try:
        with signals:
            with _observed(server, observe.quiet, observe.journal_path):
                try:
                    server.serve_forever(on_ready=ready)
                except OSError as error:
                    raise click.ClickException(
                        f"cannot listen on {host}:{port}: {error.strerror or error}; "
                        "give another --port (0 picks a free one) or --host"
                    ) from None
                except KeyboardInterrupt:
                    pass
                finally:
                    signals.holding = True
            yield
    finally:
        if ready_path is not None:
            ready_path.unlink(missing_ok=True)


def _upstream(url: str, limits: Limits, connect_timeout: float, timeout: float, redirects: str) -> UpstreamSource:
    from .relay import UpstreamSource  # the proxy (and httpx), loaded only when a command relays

    return UpstreamSource(
        url,
        max_message=limits.upstream_message,
        connect_timeout=connect_timeout,
        timeout=timeout or None,
        redirects=redirects,
    )


def _save(deck: CassetteDeck, server: FakeServer) -> Path | None:
    """Write the cassette; an error is one line saying where the exchanges are kept."""
    from .protocol.exceptions import CassetteError

    try:
        return deck.save(server.exchanges, server.connections)
    except (OSError, CassetteError) as error:
        kept = (
            f"its journal {deck.journal.path} keeps every exchange: free the space or fix the path, then run "
            f"`rrkit recover {deck.path}`"
            if deck.journal is not None
            else "nothing was recorded"
        )
        message = getattr(error, "strerror", None) or error
        raise click.ClickException(f"cannot write the cassette {deck.path}: {message}; {kept}") from None


def _file_error(error: Exception, kind_message: str | None) -> _FileError:
    return _FileError(kind_message or str(error))


def _load_cassette(path: Path) -> Cassette:
    """A cassette for show, diff and replay; a script given instead is named as one."""
    from .cassette.store import load_cassette
    from .protocol.exceptions import CassetteError
    from .tools.file_kind import not_a_cassette

    try:
        return load_cassette(path)
    except CassetteError as error:
        hint = f"give a cassette, or serve the script with `rrkit serve --script {path}`"
        raise _file_error(error, not_a_cassette(path, hint)) from None


def _match_options(command: Callable[..., None]) -> Callable[..., None]:
    """The matching options, the same on every command that replays (README: Matching)."""
    options = [
        click.option(
            "--match-preset",
            "match_presets",
            multiple=True,
            help="Built-in matching preset: codex, openai-sdk (repeatable; README: Matching).",
        ),
        click.option(
            "--match-ignore",
            "match_ignore",
            multiple=True,
            help="A JSON path left out of matching, wildcards allowed: input[*].output (repeatable).",
        ),
        click.option(
            "--match-normalize",
            "match_normalize",
            multiple=True,
            help="PATH=REGEX: what the regex matches in strings at PATH is not compared (repeatable).",
        ),
        click.option("--allow-repeats", is_flag=True, help="A recorded exchange may answer more than once."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _match_config(
    presets: tuple[str, ...], ignore: tuple[str, ...], normalize: tuple[str, ...], repeats: bool
) -> MatchConfig:
    from .cassette.match import match_config_from_cli

    try:
        return match_config_from_cli(ignore, normalize, presets, repeats)
    except ValueError as error:
        raise click.UsageError(str(error)) from None


def _report_unplayed(deck: CassetteDeck, source: ReplySource) -> None:
    """When the deck only replays, say which recorded exchanges no request played (they may be stale)."""
    if deck.records:
        return
    never = source.unplayed()
    if never:
        click.echo(f"rrkit: {len(never)} recorded exchange(s) were never requested:", err=True)
        for line in never:
            click.echo(f"  - {line}", err=True)


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
@_upstream_options
@_match_options
@_observe_options
@_admin_options
@_limit_option
@_log_level_option
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
    settings = _server_settings(host, port, log_level, lenient, admin_token, admin_hosts, limits)
    if upstream is not None and (cassette_path is None or script_path is not None):
        raise click.UsageError("--upstream answers what is recorded into --cassette, in place of --script: give one")
    matching = (match_presets, match_ignore, match_normalize, allow_repeats)
    match = _match_config(*matching) if cassette_path is not None or any(matching) else None
    mode = parse_record_mode(record_mode)
    # rewrite does not read the cassette: check it is no script before overwriting it
    overwrites = mode is RecordMode.REWRITE or str(cassette_path).startswith("fixture:")
    hint = f"use --script {cassette_path} (it is not overwritten)"
    if cassette_path is not None and overwrites:
        from .tools.file_kind import not_a_cassette

        if wrong := not_a_cassette(cassette_path, hint):
            raise _FileError(wrong)
    try:
        script = load_script(script_path) if script_path else None
    except ScriptError as error:
        from .tools.file_kind import not_a_script

        kind = not_a_script(script_path, f"use --cassette {script_path}") if script_path else None
        raise _file_error(error, kind) from None
    try:
        if cassette_path is not None:
            from .cassette.modes import CassetteDeck
            from .protocol.exceptions import CassetteError
            from .tools.file_kind import not_a_cassette

            relay = (upstream_connect_timeout, upstream_timeout, upstream_redirects)
            answers = _upstream(upstream, settings["limits"], *relay) if upstream is not None else script
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
                raise _file_error(error, not_a_cassette(cassette_path, f"use --script {cassette_path}")) from None
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
    observe = _Observe(quiet, journal_path, ready_path)
    with _running(server, f"rrkit: serving {what}", "Press Ctrl-C to stop.", host, port, observe, holding):
        if deck is None:
            click.echo("rrkit: stopped")
            return
        _report_unplayed(deck, server.state.source)
        if (written := _save(deck, server)) is None:
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
@_upstream_options
@_match_options
@_observe_options
@_admin_options
@_limit_option
@_log_level_option
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
    from .cassette.modes import CassetteDeck
    from .cassette.redact import Redactor
    from .protocol.exceptions import CassetteError
    from .tools.file_kind import not_a_cassette

    match = _match_config(match_presets, match_ignore, match_normalize, allow_repeats)
    settings = _server_settings(host, port, log_level, lenient, admin_token, admin_hosts, limits)
    mode = parse_record_mode(record_mode)
    hint = "give a new cassette file to record into, e.g. --cassette session.json"
    if mode is RecordMode.REWRITE and (wrong := not_a_cassette(cassette_path, hint + " (it is not overwritten)")):
        raise _FileError(wrong)
    try:
        source = _upstream(upstream, settings["limits"], upstream_connect_timeout, upstream_timeout, upstream_redirects)
        redactor = Redactor.with_extra(headers, paths).knowing(source.secrets)
        try:
            deck = CassetteDeck.open(
                cassette_path, mode, upstream=source, match=match, redactor=redactor, source_name="proxy"
            )
        except CassetteError as error:
            raise _file_error(error, not_a_cassette(cassette_path, hint)) from None
        proxy = FakeServer(source=deck.source(), **settings)
        deck.journal_to(proxy.state.capture)  # each exchange on disk as it ends: a crash loses none
    except (CassetteError, ValueError) as error:
        raise click.ClickException(str(error)) from None

    headline = f"rrkit: recording {source.shown_url} into {cassette_path} (record mode {deck.mode.value})"
    holding = "rrkit: still writing the cassette, please wait"
    stop_hint = "Press Ctrl-C to stop and write the cassette."
    with _running(proxy, headline, stop_hint, host, port, _Observe(quiet, journal_path, ready_path), holding):
        _report_unplayed(deck, proxy.state.source)
        written = _save(deck, proxy)
        count = sum(1 for exchange in proxy.exchanges if not exchange.replayed)
        if written is None:
            click.echo(f"rrkit: record mode {deck.mode.value}: {cassette_path} kept as it was")
        else:
            click.echo(f"rrkit: wrote {written} ({count} exchange{'' if count == 1 else 's'} recorded)")  # as serve


@main.command()
@_fixtures_option
@click.option(
    "--transport", "transports", type=click.Choice(["http", "ws"]), multiple=True, help="Only this transport."
)
@click.option("--warmup/--no-warmup", default=True, show_default=True, help="Warm up each WebSocket session.")
@click.option(
    "--record",
    "record_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write each run's recording to DIR/<fixture>.<transport>.json (the golden cassettes: cassettes/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON (for machines) instead of a table.")
def demo(
    fixtures_dir: Path | None, transports: tuple[str, ...], warmup: bool, record_dir: Path | None, as_json: bool
) -> None:
    """Run the reference client through every fixture over SSE and WebSocket; exit 0 if all end as expected.

    \b
    Examples:
      rrkit demo
      rrkit demo --transport ws --record /tmp/recordings
      rrkit demo --json | jq '.[] | select(.ok | not)'
    """
    import asyncio
    import json

    from rich.console import Console
    from rich.progress import Progress

    from .demo import demo_table, find_fixtures, rows_json, run_demo, summary

    directory = find_fixtures(fixtures_dir)
    if not directory.is_dir():
        raise click.ClickException(f"no fixtures directory at {directory} (use --fixtures DIR)")
    errors = Console(stderr=True)
    with Progress(console=errors, transient=True, disable=not errors.is_terminal) as progress:
        task = progress.add_task("starting", total=None)

        def step(done: int, total: int, what: str) -> None:
            progress.update(task, completed=done, total=total, description=what)

        try:
            rows = asyncio.run(
                run_demo(
                    directory, transports=transports or TRANSPORTS, warmup=warmup, record=record_dir, progress=step
                )
            )
        except ScriptError as error:
            raise click.ClickException(str(error)) from None
    if not rows:
        raise click.ClickException(f"no scripts (*.yaml, *.yml, *.json) in {directory}: give another --fixtures DIR")
    if as_json:
        click.echo(json.dumps(rows_json(rows), indent=2))
    else:
        out = Console(highlight=False, markup=False)
        out.print(f"rrkit demo: the reference client against the fake server, scripts from {directory}")
        out.print(demo_table(rows))
        out.print(summary(rows))
    if record_dir is not None and not as_json:
        click.echo(f"Wrote {len(rows)} cassettes to {record_dir}")
    if not all(row.ok for row in rows):
        raise SystemExit(1)


@main.command()
@click.argument("cassette_path", metavar="CASSETTE", type=click.Path(path_type=Path))
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the timeline as one self-contained HTML page (no script, no external resources).",
)
def show(cassette_path: Path, html_path: Path | None) -> None:
    """Show a cassette as a timeline: its WebSocket connections, then each exchange in order (full or
    incremental, warmup, request sizes, events compressed, timing, outcome, protocol problems).

    \b
    Example:
      rrkit show cassettes/drop-mid-stream.ws.json --html drop-mid-stream.html
    """
    from .tools.show import build_timeline
    from .tools.show_html import write_html
    from .tools.show_terminal import print_timeline

    cassette = _load_cassette(cassette_path)
    timeline = build_timeline(cassette, path=str(cassette_path))
    print_timeline(timeline)
    if html_path is not None:
        try:
            written = write_html(timeline, html_path)
        except OSError as error:
            raise _FileError(f"{html_path}: cannot write the HTML page: {error.strerror or error}") from None
        click.echo(f"rrkit: wrote {written}")


def _diff_options(command: Callable[..., None]) -> Callable[..., None]:
    """How cassettes are compared, the same for `rrkit diff` and `rrkit replay` (README: `rrkit diff`)."""
    options = [
        click.option(
            "--strict",
            is_flag=True,
            help="Compare ids, timestamps, token counts, per-run headers and timings as recorded.",
        ),
        click.option(
            "--ignore",
            "ignore",
            multiple=True,
            metavar="PATH",
            help="A JSON path left out, as in matching: input[*].output; or rooted as reported: events[*].delta, "
            "outcome.message, response_headers.retry-after (repeatable).",
        ),
        click.option(
            "--view",
            type=click.Choice(["logical", "wire", "both"]),
            default="both",
            show_default=True,
            help="Compare the logical requests, the wire requests, or both (a full request where a delta was "
            "recorded is an incrementality difference).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@main.command()
@click.argument("a_path", metavar="A", type=click.Path(path_type=Path))
@click.argument("b_path", metavar="B", type=click.Path(path_type=Path))
@_diff_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (its shape: rrkit_diff version 1).")
def diff(a_path: Path, b_path: Path, strict: bool, ignore: tuple[str, ...], view: str, as_json: bool) -> None:
    """Compare two cassettes exchange by exchange: requests (logical and wire), full vs incremental, events,
    outcomes, statuses, bodies, headers, connections, and the protocol rules each breaks.

    Exit status: 0 no difference, 1 differences, 2 a usage or file error.

    \b
    Example (a fresh recording against the golden one, tool outputs left out):
      rrkit demo --record /tmp/now
      rrkit diff cassettes/tool-loop.ws.json /tmp/now/tool-loop.ws.json --ignore 'input[*].output'
    """
    from rich.console import Console

    from .tools.diff import VIEWS, diff_cassettes
    from .tools.diff_render import render_report

    first, second = _load_cassette(a_path), _load_cassette(b_path)
    chosen = next(name for name in VIEWS if name == view)  # click.Choice checked it; this narrows the type
    try:
        report = diff_cassettes(
            first, second, strict=strict, ignore=ignore, view=chosen, names=(str(a_path), str(b_path))
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    if as_json:
        click.echo(report.to_json())
    else:
        render_report(report, Console(highlight=False))
    if not report.equal:
        raise SystemExit(1)


class _ThenCommand(click.Command):
    """`... -- COMMAND ...`: what follows `--` is the client's command line, passed on untouched."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta["rrkit.command"] = args[at + 1 :]
            args = args[:at]
        return super().parse_args(ctx, args)


def _client_command(ctx: click.Context) -> list[str] | None:
    """The client's command line after `--` (None: rrkit's reference client); an empty one is a usage error."""
    command: list[str] | None = ctx.meta.get("rrkit.command")
    if command is not None and not command:
        raise click.UsageError("nothing after `--`: give the client's command, e.g. -- python client.py")
    return command


def _timeout_option(default: float, per: str, then: str = "") -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--timeout",
        type=SECONDS,
        default=default,
        show_default=True,
        help=f"Seconds (more than 0) the client may run, per {per}{then}.",
    )


@main.command(cls=_ThenCommand)
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--against",
    "against_url",
    help="Check a server instead: send the recorded requests to this base URL (e.g. http://127.0.0.1:PORT/v1) "
    "and diff its answers against the recorded ones.",
)
@_diff_options
@_timeout_option(120.0, "cassette")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON (one object per cassette).")
@_match_options
@click.pass_context
def replay(
    ctx: click.Context,
    cassettes: tuple[Path, ...],
    against_url: str | None,
    view: str,
    strict: bool,
    ignore: tuple[str, ...],
    timeout: float,
    as_json: bool,
    match_presets: tuple[str, ...],
    match_ignore: tuple[str, ...],
    match_normalize: tuple[str, ...],
    allow_repeats: bool,
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

    from .protocol.exceptions import CassetteError
    from .tools.replay import run_replays

    command = _client_command(ctx)
    if command and against_url:
        raise click.UsageError("--against checks a server; a client command after `--` checks a client: give one")
    match = _match_config(match_presets, match_ignore, match_normalize, allow_repeats)
    try:
        paths = _cassette_files(cassettes)
    except CassetteError as error:
        raise _FileError(str(error)) from None
    loaded = [(path, _load_cassette(path)) for path in paths]
    try:
        results = asyncio.run(
            run_replays(
                loaded,
                command=command,
                against=against_url,
                match=match,
                view=view,
                strict=strict,
                ignore=ignore,
                timeout=timeout,
                as_json=as_json,
            )
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    if not all(result.ok for result in results):
        raise SystemExit(1)


def _cassette_files(given: tuple[Path, ...]) -> list[Path]:
    """The cassettes named, a folder standing for every `*.json` under it."""
    from .protocol.exceptions import CassetteError

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


@main.command(cls=_ThenCommand)
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
@_timeout_option(60.0, "scenario and transport", "; one still running then is stopped (and breaks `ends`)")
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
@click.pass_context
def conform(
    ctx: click.Context,
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

    Exit status: 0 every must (and profile rule) held, 1 one broken, 2 a usage or file error.

    \b
    Examples:
      rrkit conform --list
      rrkit conform --profile codex
      rrkit conform --transport http --junit conform.xml -- python my_client.py
    """
    from rich.console import Console

    from .conform import ConformError, catalogue, run, select
    from .conform.profile import load_profile, shipped_profiles
    from .conform.render import render_list, render_report
    from .conform.report_html import write_html
    from .tools.show_html import write_page

    command = _client_command(ctx)
    every = catalogue()
    try:
        scenarios = select(every, only)
        judged_by = load_profile(profile) if profile is not None else None
    except ConformError as error:
        raise click.UsageError(str(error)) from None
    if list_only:
        render_list(scenarios, [load_profile(name) for name in shipped_profiles()], Console(highlight=False))
        return
    transports = tuple(name for name in TRANSPORTS if transport in (name, "both"))
    progress = Console(stderr=True, highlight=False)

    def said(result: Any) -> None:
        verdict = "ok" if result.ok else "FAILED"
        progress.print(f"{result.run.scenario} [{result.run.transport}] {verdict}", markup=False)

    try:
        report = run(
            command or None,
            scenarios=every,
            only=only,
            transports=transports,
            timeout=timeout,
            profile=judged_by,
            on_result=said,
        )
    except ConformError as error:  # a profile's rules for no scenario
        raise click.UsageError(str(error)) from None
    if junit_path is not None:
        try:
            write_page(report.to_junit(), junit_path)
        except OSError as error:
            raise _FileError(f"{junit_path}: cannot write the JUnit report: {error.strerror or error}") from None
    if html_path is not None:
        try:
            write_html(report, html_path)
        except OSError as error:
            raise _FileError(f"{html_path}: cannot write the HTML report: {error.strerror or error}") from None
    if as_json:
        click.echo(report.to_json())
    else:
        render_report(report, Console(highlight=False))
    if not report.ok:
        raise SystemExit(1)


@main.command()
@click.argument("cassettes", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
def recover(cassettes: tuple[Path, ...]) -> None:
    """Merge into each cassette the journals a recording left next to it (a crash, or a final write that failed:
    free the space or fix the path first); the cassette is made from them when it does not exist. Journals of a
    recording still running are left alone. Opening a cassette to record into it does the same.

    \b
    Example:
      rrkit recover session.json
    """
    import warnings

    from .cassette.journal import journal_paths, recover_journals
    from .protocol.exceptions import CassetteError

    for path in cassettes:
        if not journal_paths(path):
            click.echo(f"rrkit: {path}: no journal next to it, nothing to recover")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                count = recover_journals(path)
        except (OSError, CassetteError) as error:
            raise click.ClickException(f"cannot recover {path}: {getattr(error, 'strerror', None) or error}") from None
        left = journal_paths(path)
        held = f"; {len(left)} journal(s) of a recording still running left alone" if left else ""
        click.echo(f"rrkit: {path}: recovered {count} exchange(s){held}")


@main.command()
def fixtures() -> None:
    """List the scripts shipped with rrkit, one line each: use one as `--script fixture:NAME`.

    \b
    Examples:
      rrkit fixtures
      rrkit serve --script fixture:ws-refuse-426
    """
    from rich.console import Console
    from rich.table import Table

    from .script.shipped import shipped_fixtures

    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("what it does", overflow="fold")
    for name, path in shipped_fixtures().items():
        script = load_script(path)
        table.add_row(name, " ".join(script.description.split()).split(". ")[0].rstrip(".") + ".")
    Console(highlight=False, markup=False).print(table)


@main.command("compare-codex")
@_fixtures_option
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
    from .demo import find_fixtures, fixture_paths
    from .differential.codex import find_codex
    from .differential.fixtures import compare_scripts, format_comparisons, summary
    from .differential.settings import Budgets
    from .protocol.exceptions import CodexNotFound

    try:
        codex = find_codex(codex_path)
    except CodexNotFound as error:
        raise _FileError(str(error)) from None
    directory = find_fixtures(fixtures_dir)
    if not directory.is_dir():
        raise _FileError(f"no fixtures directory at {directory} (use --fixtures DIR)")
    paths = [path for path in fixture_paths(directory) if not only or path.stem in only]
    if not paths:
        named = f" named {', '.join(only)}" if only else ""
        raise _FileError(f"no scripts to run in {directory}{named}: `rrkit fixtures` lists the shipped ones")
    click.echo(f"rrkit compare-codex: Codex CLI ({codex}) and the reference client, scripts from {directory}")
    budgets = Budgets(idle_timeout=idle_timeout)
    try:
        results = compare_scripts(paths, codex, transports=transports or TRANSPORTS, budgets=budgets)
    except ScriptError as error:
        raise _FileError(str(error)) from None
    click.echo(format_comparisons(results, verbose=verbose))
    click.echo(summary(results))
    if not all(result.agree for result in results):
        raise SystemExit(1)


def run() -> None:
    """The `rrkit` program (and `python -m rrkit`): the command line, then an exit that a late Ctrl-C or SIGTERM
    cannot turn into a kill (Python resets signal handlers to the default action while it finalizes)."""
    try:
        main()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
