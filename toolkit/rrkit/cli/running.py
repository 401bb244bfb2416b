"""Running a server in the foreground: its signals, ready file, observers, the upstream it relays to, and the
cassette written when it stops."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from ..cassette.modes import CassetteDeck
    from ..protocol.limits import Limits
    from ..relay import UpstreamSource
    from ..script.select import ReplySource
    from ..server.runner import FakeServer, LoopbackServer


class _StopSignals:
    """SIGINT and SIGTERM over a foreground server's life. Until it listens, a signal stops the start; while it
    runs, uvicorn's own handlers (installed over these) stop it; once they are gone again, a signal is held with
    `message` on stderr, so that a second Ctrl-C (or SIGTERM) never cuts the cassette being written. In the `rrkit`
    program (`until_exit`), one held stays held until the process exits: a late one would turn the exit into
    "Aborted!" and status 1."""

    until_exit = False

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
        if self.holding and self.until_exit:
            return
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.holding:
            raise KeyboardInterrupt
        click.echo(self.message, err=True)


def hold_stop_signals_until_exit() -> None:
    """In this process (the `rrkit` program), a foreground server's stop signals stay held once it stopped."""
    _StopSignals.until_exit = True


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
    from ..server.runner import FakeServer

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
class Observe:
    """The `observe_options` given."""

    quiet: bool
    journal_path: Path | None
    ready_path: Path | None


@contextmanager
def _observed(server: FakeServer, quiet: bool, journal_path: Path | None) -> Iterator[None]:
    """A line per exchange on stdout (unless `quiet`) and the `--journal`, while the server runs."""
    from ..server.exchange_log import JournalFile, LinePrinter, when_settled
    from ..tools.self_check import breaks_text

    capture = server.state.capture
    printer = None if quiet else LinePrinter(click.echo, after=breaks_text)
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
def in_foreground(
    server: FakeServer,
    headline: str,
    stop_hint: str,
    host: str,
    port: int,
    observe: Observe,
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


def upstream_source(url: str, limits: Limits, connect_timeout: float, timeout: float, redirects: str) -> UpstreamSource:
    from ..relay import UpstreamSource  # the proxy (and httpx), loaded only when a command relays

    return UpstreamSource(
        url,
        max_message=limits.upstream_message,
        connect_timeout=connect_timeout,
        timeout=timeout or None,
        redirects=redirects,
    )


def save_recording(deck: CassetteDeck, server: FakeServer) -> Path | None:
    """Write the cassette; an error is one line saying where the exchanges are kept."""
    from ..protocol.exceptions import CassetteError

    try:
        return deck.save(server.exchanges, server.connections)
    except (OSError, CassetteError) as error:
        from ..files.text import why_not_writable

        message = why_not_writable(deck.path, error) if isinstance(error, OSError) else error
        raise click.ClickException(f"cannot write the cassette {deck.path}: {message}; {_kept(deck)}") from None


def _kept(deck: CassetteDeck) -> str:
    """Where the exchanges of a recording whose cassette could not be written are, truly: the journal's count."""
    if deck.journal is None:
        return "nothing was recorded"
    if not deck.journaled:
        lost = f" ({deck.unjournaled} could not be journaled: they are lost)" if deck.unjournaled else ""
        return f"nothing could be kept: its journal {deck.journal.path} holds no exchange{lost}"
    lost = f" ({deck.unjournaled} more could not be journaled: they are lost)" if deck.unjournaled else ""
    return (
        f"its journal {deck.journal.path} keeps {deck.journaled} exchange(s){lost}: free the space or fix the path, "
        f"then run `rrkit recover {deck.path}`"
    )


def report_unplayed(deck: CassetteDeck, source: ReplySource) -> None:
    """When the deck only replays, say which recorded exchanges no request played (they may be stale)."""
    if deck.records:
        return
    never = source.unplayed()
    if never:
        click.echo(f"rrkit: {len(never)} recorded exchange(s) were never requested:", err=True)
        for line in never:
            click.echo(f"  - {line}", err=True)
