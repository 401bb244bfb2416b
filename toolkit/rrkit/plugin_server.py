"""What the pytest plugin hands a test: the `RRKitServer` handle (its server, script, cassette deck and teardown
checks), made from the test's options (`plugin_options`) by the fixtures, not at pytest start-up."""

from __future__ import annotations

import logging
import re
import signal
import threading
from types import FrameType
from typing import Self

import pytest

from .cassette.format import Cassette
from .cassette.modes import CassetteDeck
from .cassette.record import cassette_from_capture
from .cassette.redact import Redactor
from .cassette.replay import CassetteSource
from .plugin_options import FixtureOptions, safe_name, script_of
from .protocol.exceptions import CassetteError
from .protocol.outcome import OutcomeKind
from .script.models import Handshake, Match, Reply, Script
from .script.select import ReplySource
from .server.app import NO_MATCH_CODE
from .server.capture import Connection, Exchange
from .server.runner import FakeServer
from .server.stream import server_failed


class Handle:
    """What a test holds: the running fake server, its script to add answers to, what it captured, and the
    teardown checks. `RRKitServer` waits for the server from the test's thread, `AsyncRRKitServer` on the loop
    both share."""

    http_url: str
    """The server's HTTP base URL (`http://127.0.0.1:PORT/v1`)."""
    ws_url: str
    """Its WebSocket base URL (`ws://127.0.0.1:PORT/v1`)."""
    responses_ws_url: str
    """Its WebSocket endpoint (`ws://127.0.0.1:PORT/v1/responses`)."""

    def __init__(self, server: FakeServer, script: Script, options: FixtureOptions, deck: CassetteDeck | None) -> None:
        self.server, self.script, self.options, self.deck = server, script, options, deck
        self.http_url, self.ws_url, self.responses_ws_url = server.http_url, server.ws_url, server.responses_ws_url
        self.reported: list[str] = []  # findings already attached to the test's own failure (not repeated)
        self._quiet = _NoMatchLogFilter(self)
        _SERVER_LOG.addFilter(self._quiet)

    # -- scripting ------------------------------------------------------------------------------
    def add(self, reply: Reply, *, when: Match | None = None, times: int = 1, repeat: bool = False) -> Self:
        self.script.add(reply, when=when, times=times, repeat=repeat)
        return self

    def queue(self, *replies: Reply) -> Self:
        self.script.queue(*replies)
        return self

    def add_handshake(self, handshake: Handshake) -> Self:
        self.script.add_handshake(handshake)
        return self

    def allow_unused(self) -> None:
        """Do not fail the test for scripted answers it never requested."""
        self.options.assert_all_used = False

    def allow_unmatched(self) -> None:
        """Do not fail the test for requests that nothing answered."""
        self.options.assert_all_matched = False

    def allow_unplayed(self) -> None:
        """Do not fail the test for recorded exchanges of its cassette it never requested."""
        self.options.assert_all_played = False

    # -- what was captured ----------------------------------------------------------------------
    @property
    def exchanges(self) -> list[Exchange]:
        return self.server.exchanges

    @property
    def connections(self) -> list[Connection]:
        return self.server.connections

    def _recording(self) -> Cassette:
        return cassette_from_capture(self.exchanges, self.connections, name=safe_name(self.options.test))

    # -- teardown -------------------------------------------------------------------------------
    def problems(self, shown: str = "") -> list[str]:
        """What the teardown checks find wrong, each message saying what to do about it. A closest-match
        report already in `shown` (the test's failure, when its client raised the 400 it got) is not repeated."""
        found = self._failed()
        found += self._unmatched(shown) if self.options.assert_all_matched else []
        if self.options.assert_all_used and self.deck is None:
            found += self._unused()
        if self.options.assert_all_played and self.deck is not None and not self.deck.records:
            found += self._unplayed()
        return found

    def _failed(self) -> list[str]:
        """The requests the server itself failed on (a reply source of the test's that raised): as much the test's
        problem as a request nothing matched, whatever its client did with the 500 or the cut."""
        return [
            f"{self.options.test}: exchange {exchange.id} ({exchange.transport}): "
            f"{exchange.outcome.message if exchange.outcome else ''}; the traceback is in the log above: fix what "
            "raised (a reply source of the test's, or rrkit: then report it)"
            for exchange in self.exchanges
            if server_failed(exchange.outcome)
        ]

    def _unmatched(self, shown: str) -> list[str]:
        """The requests nothing answered."""
        found = []
        hint = (
            f"run with --rrkit-record-mode=new_episodes to record it into {self.options.cassette}"
            if self.deck is not None
            else "add a reply for it to the script"
        )
        for exchange in self.exchanges:
            outcome = exchange.outcome
            if outcome is None or outcome.kind is not OutcomeKind.REFUSED or outcome.code != NO_MATCH_CODE:
                continue
            report = outcome.message or ""
            if shown and report and report.splitlines()[0] in shown:
                report = "(its closest-match report is the error above)"
            found.append(
                f"{self.options.test}: exchange {exchange.id} ({exchange.transport}) was answered by nothing; {hint}, "
                "or mark the test @pytest.mark.rrkit(assert_all_matched=False).\n" + report
            )
        return found

    def _unused(self) -> list[str]:
        """The scripted replies no request used."""
        unused = self.server.state.source.unused()
        if not unused:
            return []
        return [
            f"{self.options.test}: {len(unused)} scripted repl{'y was' if len(unused) == 1 else 'ies were'} never "
            f"requested: {', '.join(unused)}. Remove them, or mark the test "
            "@pytest.mark.rrkit(assert_all_used=False) (or call rrkit_server.allow_unused())."
        ]

    def _unplayed(self) -> list[str]:
        """The recorded exchanges of a replay-only cassette no request played."""
        source = self.server.state.source
        unplayed = source.unplayed() if isinstance(source, CassetteSource) else []
        if not unplayed:
            return []
        count = f"{len(unplayed)} recorded exchange{'' if len(unplayed) == 1 else 's'}"
        return [
            f"{self.options.test}: {count} of {self.options.cassette} {'was' if len(unplayed) == 1 else 'were'} never "
            "requested:\n" + "".join(f"  - {line}\n" for line in unplayed) + "If the test no longer makes "
            "these requests, record the cassette again (--rrkit-record-mode=rewrite); if it may skip them, "
            "mark the test @pytest.mark.rrkit(assert_all_played=False) (or call rrkit_server.allow_unplayed())."
        ]

    def failure_findings(self, failure: str) -> str | None:
        """Called when the test itself failed (its setup or call): the teardown checks' findings, to be shown
        with that failure rather than as a second error at teardown (`finish` reports only new ones). One
        unmatched request is then one failure, its closest-match report printed once."""
        self._wait_briefly()
        self.reported = self.problems()
        if not self.reported:
            return None
        return (
            "\n\n".join(self.problems(shown=failure))
            + "\n(rrkit: found when the test failed; not repeated at teardown)"
        )

    def _wait_briefly(self) -> None:
        """Let the exchanges the test's client has seen the end of get their outcomes (not on the async loop,
        which is not running while pytest makes its report)."""

    def close(self) -> None:
        _SERVER_LOG.removeFilter(self._quiet)


_SERVER_LOG = logging.getLogger("rrkit.server")
_NO_MATCH_LOG = re.compile(r"rrkit: no .+ matches this ")


class _NoMatchLogFilter(logging.Filter):
    """While a test's handle checks unmatched requests itself, the server's own warning about each one is
    dropped: pytest would print it again under "Captured log" (twice: with the failure and with teardown)."""

    def __init__(self, handle: Handle) -> None:
        super().__init__()
        self.handle = handle

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.handle.options.assert_all_matched or record.levelno != logging.WARNING:
            return True
        return not _NO_MATCH_LOG.match(record.getMessage())


SETTLE_SECONDS = 2.0
"""How long `rrkit_server.exchanges` waits for exchanges still ending (a stream a test reads mid-way included)."""


class RRKitServer(Handle):
    """The handle of `rrkit_server` and `rrkit_shared_server`, whose server runs in a background thread."""

    def _wait_briefly(self) -> None:
        self.server.state.capture.wait_settled(0.5)

    @property
    def exchanges(self) -> list[Exchange]:
        """The exchanges so far, each with its outcome: a client sees its stream cut (or its terminal event) a
        moment before the server notes the outcome, so this waits for the ones still ending, up to SETTLE_SECONDS
        (a stall, which ends only when its client leaves, is not waited for)."""
        self.server.state.capture.wait_settled(SETTLE_SECONDS, except_stalls=True)
        return self.server.exchanges

    def settle(self, timeout: float = 5.0) -> RRKitServer:
        """Wait until every exchange has its outcome; TimeoutError naming the ones still streaming."""
        self.server.settle(timeout)
        return self

    @property
    def recording(self) -> Cassette:
        """A cassette of what this test's server saw (redacted), once every exchange has its outcome; compare it
        with `rrkit_snapshot`."""
        self.settle()
        return self._recording()


class AsyncRRKitServer(Handle):
    """The handle of `rrkit_async_server`, whose server runs on the test's event loop: waiting is awaited, so
    that the server goes on serving meanwhile."""

    async def settle(self, timeout: float = 5.0) -> AsyncRRKitServer:
        """Wait until every exchange has its outcome; TimeoutError naming the ones still streaming."""
        await self.server.settle_async(timeout)
        return self

    async def recording(self, timeout: float = 5.0) -> Cassette:
        """`await rrkit_async_server.recording()`: the cassette, once every exchange has its outcome."""
        await self.settle(timeout)
        return self._recording()


def _upstream_source(url: str) -> ReplySource:
    from .relay import UpstreamSource  # the proxy's relay, only needed when recording a URL

    source: ReplySource = UpstreamSource(url)
    return source


def _stop_on_sigterm() -> None:
    """From the first rrkit server of a session on, SIGTERM (what `timeout`, CI runners and `docker stop` send)
    stops pytest as Ctrl-C does, so that fixtures are torn down and cassettes written; pytest itself would die
    at once. Only where SIGTERM still has its default action, and only in the main thread."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def new_server(options: FixtureOptions) -> tuple[FakeServer, Script, CassetteDeck | None]:
    """The test's server (not started), its script, and its cassette's deck when it has one; the test fails
    naming the cassette when it cannot be used."""
    _stop_on_sigterm()
    script = script_of(options)
    if options.cassette is None:
        return FakeServer(script, chaos=options.chaos), script, None
    redactor = Redactor.with_extra(options.config.redact_headers, options.config.redact_paths)
    try:
        deck = CassetteDeck.open(
            options.cassette,
            options.mode,
            upstream=_upstream_source(options.upstream) if options.upstream else script,
            match=options.match,
            redactor=redactor,
            time_scale=float(options.config.time_scale),
        )
    except CassetteError as error:
        pytest.fail(f"{options.test}: {error}", pytrace=False)
    server = FakeServer(source=deck.source(), chaos=options.chaos)
    deck.journal_to(server.state.capture)  # each exchange on disk as it ends: a crashed test run loses none
    return server, script, deck


def finish(handle: Handle) -> None:
    """The teardown: the cassette saved when the test recorded, then the checks, a failure listing what is
    wrong unless the test's own failure already showed it."""
    try:
        if not handle.server.state.capture.wait_settled(5.0):
            pytest.fail(f"{handle.options.test}: an exchange was still streaming at teardown", pytrace=False)
        deck = handle.deck
        if deck is not None and deck.records:
            deck.save(handle.exchanges, handle.connections)  # under the folder's lock, onto what other workers added
        problems = [problem for problem in handle.problems() if problem not in handle.reported]
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)
    finally:
        handle.close()
