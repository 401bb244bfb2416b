"""What the pytest plugin hands a test: the `RRKitServer` handle, the options from the marker and `RRKitConfig`,
the cassette deck and the teardown checks (loaded by the fixtures, not at pytest start-up)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import FrameType
from typing import Any, Self

import pytest

from .cassette.format import Cassette
from .cassette.match import MatchConfig, unknown_name
from .cassette.modes import CassetteDeck
from .cassette.record import cassette_from_capture
from .cassette.recordmode import RecordMode, parse_record_mode
from .cassette.redact import Redactor
from .cassette.replay import CassetteSource
from .protocol.exceptions import CassetteError, ScriptError
from .protocol.outcome import OutcomeKind
from .script.loader import load_script
from .script.models import Handshake, Match, Reply, Script
from .script.select import ReplySource
from .script.shipped import FIXTURE_PREFIX
from .server.app import NO_MATCH_CODE
from .server.capture import Connection, Exchange
from .server.runner import FakeServer

_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "upstream": ((str, type(None)), "a URL or None"),
    "cassette_dir": ((str, os.PathLike), "a folder path"),
    "time_scale": ((int, float), "a number"),
    "assert_all_used": ((bool,), "True or False"),
    "assert_all_matched": ((bool,), "True or False"),
    "assert_all_played": ((bool,), "True or False"),
    "match": ((MatchConfig, Mapping, type(None)), "a MatchConfig, a mapping of match settings, or None"),
    "allow_repeats": ((bool, type(None)), "True, False or None"),
}


@dataclass(frozen=True)
class RRKitConfig(Mapping[str, Any]):
    """Project-wide settings of the rrkit fixtures: what the `rrkit_config` fixture returns. Override the fixture
    in a conftest.py returning `{**rrkit_config, "record_mode": "once"}` (a mapping over the defaults, checked
    by `RRKitConfig.of`) or `dataclasses.replace(rrkit_config, record_mode="once")`."""

    record_mode: RecordMode = RecordMode.NONE
    upstream: str | None = None  # a URL to record from; None records from the test's own script
    cassette_dir: str | os.PathLike[str] = "cassettes"  # relative to the test file's folder
    time_scale: float = 0.0
    redact_headers: tuple[str, ...] = ()
    redact_paths: tuple[str, ...] = ()
    assert_all_used: bool = True
    assert_all_matched: bool = True
    assert_all_played: bool = True  # a replay-only cassette fails the test if a recorded exchange was never requested
    match: MatchConfig | Mapping[str, Any] | None = None  # a MatchConfig, or settings for MatchConfig.from_settings
    match_preset: str | tuple[str, ...] | None = None  # preset name(s) added to `match`, e.g. "codex"
    allow_repeats: bool | None = None  # True lets a recorded exchange answer more than once (overrides `match`)

    def __post_init__(self) -> None:
        """Check every value, so that a bad one fails naming its key; names lists become tuples."""
        try:
            object.__setattr__(self, "record_mode", parse_record_mode(self.record_mode))
        except ValueError as error:
            raise ValueError(f"rrkit_config key 'record_mode': {error}") from None
        for key, (kinds, what) in _KINDS.items():
            value = getattr(self, key)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise ValueError(f"rrkit_config key {key!r} must be {what}, got {value!r}")
        for key in ("redact_headers", "redact_paths"):
            object.__setattr__(self, key, _names(key, getattr(self, key)))
        if self.match_preset is not None:
            object.__setattr__(self, "match_preset", _names("match_preset", self.match_preset))

    @classmethod
    def of(cls, settings: RRKitConfig | Mapping[str, Any]) -> RRKitConfig:
        """`settings` as an RRKitConfig: a mapping's keys over the defaults; ValueError naming an unknown key
        (with the closest valid one) or a bad value."""
        if isinstance(settings, RRKitConfig):
            return settings
        if not isinstance(settings, Mapping):
            raise ValueError(f"rrkit_config must return an RRKitConfig or a mapping, got {settings!r}")
        problem = _unknown_keys(settings, CONFIG_KEYS, "rrkit_config key")
        if problem:
            raise ValueError(problem)
        return cls(**settings)

    def __getitem__(self, key: str) -> Any:
        if key not in CONFIG_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(CONFIG_KEYS)

    def __len__(self) -> int:
        return len(CONFIG_KEYS)


CONFIG_KEYS = tuple(field.name for field in fields(RRKitConfig))
"""The keys of `rrkit_config`."""


def _names(key: str, value: object) -> tuple[str, ...]:
    """A name or a list of names, as a tuple."""
    names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, Iterable) else None
    if names is None or not all(isinstance(name, str) for name in names):
        raise ValueError(f"rrkit_config key {key!r} must be a name or a list of names, got {value!r}")
    return names


DEFAULT_CONFIG = RRKitConfig()
"""What `rrkit_config` returns unless a conftest overrides it (frozen, so one serves every test)."""


MARKER_KEYS = (
    "script",
    "cassette",
    "record_mode",
    "upstream",
    "assert_all_used",
    "assert_all_matched",
    "assert_all_played",
    "match",
    "match_preset",
    "allow_repeats",
)
"""The arguments `@pytest.mark.rrkit(...)` accepts."""
_MARKER_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "script": ((str, os.PathLike), "a script file path (relative to the test file or the rootdir) or 'fixture:NAME'"),
    "cassette": ((str, bool), "a cassette name, or True for cassettes/<module>/<test>.json"),
    "record_mode": ((str,), "a record mode name"),
    "match_preset": ((str, tuple, list, type(None)), "a preset name or a list of names"),
    **{key: _KINDS[key] for key in ("upstream", "assert_all_used", "assert_all_matched", "assert_all_played")},
    **{key: _KINDS[key] for key in ("match", "allow_repeats")},
}
"""What each marker argument must be: a typo'd value (`assert_all_used="no"`) fails instead of being truthy."""
_MAX_NAME = 100


def safe_name(name: str) -> str:
    """A file name from a test name: safe characters only, bounded length, parametrized ids kept distinct."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "test"
    if len(cleaned) <= _MAX_NAME:
        return cleaned
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    return f"{cleaned[: _MAX_NAME - 13]}-{digest}"


@dataclass
class _Options:
    test: str
    cassette: Path | None
    mode: RecordMode
    upstream: str | None
    config: RRKitConfig
    assert_all_used: bool
    assert_all_matched: bool
    assert_all_played: bool
    match: MatchConfig
    script: Path | str | None = None  # a script file, or `fixture:NAME`, from the marker's `script=`
    script_given: str = ""  # `script=` as the marker says it, for messages


def _unknown_keys(given: Mapping[str, Any], valid: tuple[str, ...], where: str) -> str | None:
    return next((unknown_name(where, str(key), valid) for key in given if key not in valid), None)


def _marked_and_config(
    request: pytest.FixtureRequest, config: RRKitConfig | Mapping[str, Any]
) -> tuple[dict[str, Any], RRKitConfig]:
    """The test's `rrkit` marker arguments (checked for unknown keys) and its `rrkit_config`, checked."""
    marker = request.node.get_closest_marker("rrkit")
    marked: dict[str, Any] = dict(marker.kwargs) if marker else {}
    problem = _unknown_keys(marked, MARKER_KEYS, "@pytest.mark.rrkit argument")
    if problem is None and marker is not None and marker.args:
        problem = f"@pytest.mark.rrkit takes keyword arguments only ({', '.join(MARKER_KEYS)}), got {marker.args!r}"
    if problem is None:
        problem = next((_marker_value_problem(key, value) for key, value in marked.items()), None)
    if problem is None:
        try:
            return marked, RRKitConfig.of(config)
        except ValueError as error:
            problem = str(error)
    raise pytest.UsageError(f"{request.node.nodeid}: {problem}")


def _marker_value_problem(key: str, value: object) -> str | None:
    kinds, what = _MARKER_KINDS[key]
    if isinstance(value, kinds) and (not isinstance(value, bool) or bool in kinds):
        return None
    return f"@pytest.mark.rrkit argument {key!r} must be {what}, got {value!r}"


def _script_reference(request: pytest.FixtureRequest, value: object) -> Path | str | None:
    """The marker's `script=`: `fixture:NAME` as given; a path tried next to the test file, then under the
    rootdir; a UsageError naming the marker, the test and the places looked in when it is in neither."""
    if value is None:
        return None
    text = str(value)
    if text.startswith(FIXTURE_PREFIX):
        return text
    path = Path(text)
    places = (
        [path] if path.is_absolute() else [Path(str(request.node.path)).parent / path, request.config.rootpath / path]
    )
    for place in places:
        if place.is_file():
            return place
    raise pytest.UsageError(
        f"{request.node.nodeid}: @pytest.mark.rrkit(script={text!r}): no such file (looked for "
        f"{' and '.join(str(place) for place in places)}); give a path relative to the test file or the rootdir, "
        "or `fixture:NAME` for a shipped script (`rrkit fixtures` lists them)"
    )


def _script(options: _Options) -> Script:
    """The test's script: the marker's `script=` file loaded, else an empty one for the test to fill."""
    if options.script is None:
        return Script()
    try:
        return load_script(options.script)
    except ScriptError as error:
        raise pytest.UsageError(
            f"{options.test}: @pytest.mark.rrkit(script={options.script_given!r}): {error}"
        ) from None


_DEFAULT_MATCH = MatchConfig()  # frozen: the configuration of every test that sets none, built once


def _match(test: str, marked: dict[str, Any], config: RRKitConfig) -> MatchConfig:
    """The matching configuration: the marker's `match` over rrkit_config's (two mappings merge key by key),
    then the `match_preset` and `allow_repeats` shortcuts (the marker's over rrkit_config's)."""
    configured, given = config.match, marked.get("match")
    if isinstance(configured, Mapping) and isinstance(given, Mapping):
        given = {**configured, **given}
    elif given is None:
        given = configured
    try:
        if isinstance(given, MatchConfig):
            match = given
        elif given is None:
            match = _DEFAULT_MATCH
        elif isinstance(given, Mapping):
            match = MatchConfig.from_settings(given)
        else:
            raise ValueError(f"`match` is a MatchConfig or a mapping of settings, got {given!r}")
        preset = marked.get("match_preset", config.match_preset)
        if preset:
            match = replace(match, presets=(*match.presets, *((preset,) if isinstance(preset, str) else preset)))
        repeats = marked.get("allow_repeats", config.allow_repeats)
        if repeats is not None:
            match = replace(match, allow_repeats=bool(repeats))
    except ValueError as error:
        raise pytest.UsageError(f"{test}: rrkit match configuration: {error}") from None
    return match


def _options(request: pytest.FixtureRequest, config: RRKitConfig | Mapping[str, Any]) -> _Options:
    marked, checked = _marked_and_config(request, config)
    cli_mode = request.config.getoption("--rrkit-record-mode", default=None)
    if cli_mode is None and request.config.getoption("--rrkit-update", default=False):
        cli_mode = RecordMode.REWRITE  # --rrkit-update: record every cassette afresh (and refresh snapshots)
    try:
        mode = parse_record_mode(cli_mode or marked.get("record_mode") or checked.record_mode)
    except ValueError as error:
        raise pytest.UsageError(f"{request.node.nodeid}: {error}") from None
    cassette = None
    if "cassette" in marked or "record_mode" in marked:
        folder = Path(str(request.node.path)).parent / checked.cassette_dir / safe_name(request.node.module.__name__)
        name = marked.get("cassette")
        stem = safe_name(str(name)) if isinstance(name, str) else safe_name(request.node.name)
        cassette = folder / (stem if stem.endswith(".json") else f"{stem}.json")
    return _Options(
        test=request.node.nodeid,
        cassette=cassette,
        mode=mode,
        upstream=request.config.getoption("--rrkit-upstream", default=None)
        or marked.get("upstream")
        or checked.upstream,
        config=checked,
        assert_all_used=bool(marked.get("assert_all_used", checked.assert_all_used)),
        assert_all_matched=bool(marked.get("assert_all_matched", checked.assert_all_matched)),
        assert_all_played=bool(marked.get("assert_all_played", checked.assert_all_played)),
        match=_match(request.node.nodeid, marked, checked),
        script=_script_reference(request, marked.get("script")),
        script_given=str(marked.get("script", "")),
    )


class _Handle:
    """What a test holds: the running fake server, its script to add answers to, what it captured, and the
    teardown checks. `RRKitServer` waits for the server from the test's thread, `AsyncRRKitServer` on the loop
    both share."""

    def __init__(self, server: FakeServer, script: Script, options: _Options, deck: CassetteDeck | None) -> None:
        self.server, self.script, self.options, self.deck = server, script, options, deck
        self.reported: list[str] = []  # findings already attached to the test's own failure (not repeated)
        self._quiet = _NoMatchLogFilter(self)
        _SERVER_LOG.addFilter(self._quiet)

    # -- addresses ------------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        return self.server.http_url

    @property
    def ws_url(self) -> str:
        return self.server.ws_url

    @property
    def responses_ws_url(self) -> str:
        return self.server.responses_ws_url

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
        found = []
        test = self.options.test
        if self.options.assert_all_matched:
            for exchange in self.exchanges:
                outcome = exchange.outcome
                if outcome is not None and outcome.kind is OutcomeKind.REFUSED and outcome.code == NO_MATCH_CODE:
                    hint = (
                        f"run with --rrkit-record-mode=new_episodes to record it into {self.options.cassette}"
                        if self.deck is not None
                        else "add a reply for it to the script"
                    )
                    report = outcome.message or ""
                    if shown and report and report.splitlines()[0] in shown:
                        report = "(its closest-match report is the error above)"
                    found.append(
                        f"{test}: exchange {exchange.id} ({exchange.transport}) was answered by nothing; {hint}, "
                        "or mark the test @pytest.mark.rrkit(assert_all_matched=False).\n" + report
                    )
        if self.options.assert_all_used and self.deck is None:
            unused = self.server.state.source.unused()
            if unused:
                found.append(
                    f"{test}: {len(unused)} scripted repl{'y was' if len(unused) == 1 else 'ies were'} never "
                    f"requested: {', '.join(unused)}. Remove them, or mark the test "
                    "@pytest.mark.rrkit(assert_all_used=False) (or call rrkit_server.allow_unused())."
                )
        source = self.server.state.source
        replays_only = self.deck is not None and not self.deck.records
        if self.options.assert_all_played and replays_only and isinstance(source, CassetteSource):
            unplayed = source.unplayed()
            if unplayed:
                count = f"{len(unplayed)} recorded exchange{'' if len(unplayed) == 1 else 's'}"
                found.append(
                    f"{test}: {count} of {self.options.cassette} {'was' if len(unplayed) == 1 else 'were'} never "
                    "requested:\n" + "".join(f"  - {line}\n" for line in unplayed) + "If the test no longer makes "
                    "these requests, record the cassette again (--rrkit-record-mode=rewrite); if it may skip them, "
                    "mark the test @pytest.mark.rrkit(assert_all_played=False) (or call rrkit_server.allow_unplayed())."
                )
        return found

    def failure_findings(self, failure: str) -> str | None:
        """Called when the test itself failed (its setup or call): the teardown checks' findings, to be shown
        with that failure rather than as a second error at teardown (`_finish` reports only new ones). One
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

    def __init__(self, handle: _Handle) -> None:
        super().__init__()
        self.handle = handle

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.handle.options.assert_all_matched or record.levelno != logging.WARNING:
            return True
        return not _NO_MATCH_LOG.match(record.getMessage())


class RRKitServer(_Handle):
    """The handle of `rrkit_server` and `rrkit_shared_server`, whose server runs in a background thread."""

    def _wait_briefly(self) -> None:
        self.server.state.capture.wait_settled(0.5)

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


class AsyncRRKitServer(_Handle):
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


def _make(options: _Options) -> tuple[FakeServer, Script, CassetteDeck | None]:
    _stop_on_sigterm()
    script = _script(options)
    if options.cassette is None:
        return FakeServer(script), script, None
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
    server = FakeServer(source=deck.source())
    deck.journal_to(server.state.capture)  # each exchange on disk as it ends: a crashed test run loses none
    return server, script, deck


def _finish(handle: _Handle) -> None:
    """The teardown checks: a failure listing what is wrong, unless the test's own failure already showed it."""
    try:
        if not handle.server.state.capture.wait_settled(5.0):
            pytest.fail(f"{handle.options.test}: an exchange was still streaming at teardown", pytrace=False)
        deck = handle.deck
        if deck is not None and deck.records:
            deck.save(handle.exchanges, handle.connections)  # under the folder's lock
        problems = [problem for problem in handle.problems() if problem not in handle.reported]
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)
    finally:
        handle.close()
