"""pytest plugin: `rrkit_server` fixtures, the `rrkit` marker, record modes, teardown checks and snapshots.

pytest loads it in every project where rrkit is installed: it loads the server and cassette code only when a
fixture is used (`plugin_server`)."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .cassette.recordmode import RecordMode, parse_record_mode

if TYPE_CHECKING:
    from .explore import Exploration
    from .plugin_options import RRKitConfig
    from .plugin_server import AsyncRRKitServer, Handle, RRKitServer
    from .plugin_session import RRKitSession
    from .server.runner import FakeServer
    from .snapshot import RRKitSnapshotExtension

__all__ = ["AsyncRRKitServer", "RRKitConfig", "RRKitServer", "RRKitSession", "RRKitSnapshotExtension"]

_HANDLE = pytest.StashKey["Handle"]()
"""The test's server handle, while its fixture runs: its findings join the test's own failure."""
_FAILED = pytest.StashKey[bool]()
"""Set when the test's setup or call failed: teardown checks and snapshots then leave the failure alone."""


def __getattr__(name: str) -> Any:
    """`RRKitServer`, `RRKitSnapshotExtension` and the helpers stay importable from here, loaded on use."""
    if name.startswith(("_", "pytest_")):
        # pytest probes plugins for `pytest_plugins` (and tools for dunders) at start-up: answering those by
        # importing `plugin_server` would load the server and its web framework in every test session (and a
        # private name is no helper of this plugin)
        raise AttributeError(f"module 'rrkit.pytest_plugin' has no attribute {name!r}")
    if name == "rrkit_async_server":
        try:
            fixture = globals()[name] = _async_server_fixture()
        except ImportError:  # pragma: no cover - the async fixture needs pytest-asyncio
            raise AttributeError(f"{name} needs pytest-asyncio") from None
        return fixture
    if name == "RRKitSnapshotExtension":
        from .snapshot import RRKitSnapshotExtension

        return RRKitSnapshotExtension
    # the modules as imported now, not stale `rrkit.plugin_server` attributes: pytester's in-process runs drop the
    # modules a run imported, and the fixtures' own imports load them afresh (with new classes)
    for module in (".plugin_options", ".plugin_server", ".plugin_session"):
        loaded = importlib.import_module(module, __package__)
        if hasattr(loaded, name):
            return getattr(loaded, name)
    raise AttributeError(f"module 'rrkit.pytest_plugin' has no attribute {name!r}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rrkit", "rrkit: fake Responses server and cassettes")
    modes = ", ".join(mode.value for mode in RecordMode)
    group.addoption(
        "--rrkit-record-mode",
        default=None,
        help=f"record mode for tests marked with a cassette ({modes}); overrides markers and rrkit_config",
    )
    group.addoption("--rrkit-upstream", default=None, help="Responses base URL to record from (default: the script)")
    group.addoption(
        "--rrkit-serve-url",
        default=None,
        help="a running `rrkit serve` (http://host:port) every test's `rrkit_session` is on, shared by xdist workers "
        "and CI jobs (default: $RRKIT_SERVE_URL, else a server in this process)",
    )
    group.addoption(
        "--rrkit-update",
        action="store_true",
        default=False,
        help="re-record every cassette the tests use (record mode 'rewrite', unless --rrkit-record-mode says "
        "otherwise) and refresh their snapshots (syrupy's --snapshot-update), keeping the snapshots of tests that "
        "fail before asserting them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rrkit(script=None, cassette=None, record_mode=None, upstream=None, match=None, match_preset=None, "
        "allow_repeats=None, assert_all_used=True, assert_all_matched=True, assert_all_played=True, chaos=None): load "
        "a script file (path or fixture:NAME), use a cassette (name, or True for cassettes/<module>/<test>), say how "
        "requests match it, relax teardown checks, and put seeded chaos on the server's streams and requests "
        "('drop=P,stall=P,rate_limit=P,retry_after=S,seed=N')",
    )
    if config.getoption("--rrkit-update", default=False) and hasattr(config.option, "update_snapshots"):
        config.option.update_snapshots = True  # what syrupy's --snapshot-update sets
    mode = config.getoption("--rrkit-record-mode", default=None)
    if mode is not None:
        try:
            parse_record_mode(mode)
        except ValueError as error:  # a SettingError, named without loading rrkit.protocol at start-up
            raise pytest.UsageError(f"--rrkit-record-mode: {error}") from None


@pytest.fixture
def rrkit_config() -> RRKitConfig:
    """Project-wide settings of the rrkit fixtures (`RRKitConfig`); override this fixture in a conftest.py to change
    them: `return {**rrkit_config, "record_mode": "once"}` (or `dataclasses.replace(rrkit_config, ...)`)."""
    from .plugin_options import DEFAULT_CONFIG

    return DEFAULT_CONFIG


@pytest.fixture
def rrkit_server(
    request: pytest.FixtureRequest, rrkit_config: RRKitConfig | Mapping[str, Any]
) -> Iterator[RRKitServer]:
    """A fresh fake Responses server for this test, on a free loopback port, in a background thread."""
    from .plugin_options import options_of
    from .plugin_server import RRKitServer, finish, new_server

    options = options_of(request, rrkit_config)
    server, script, deck = new_server(options)
    with server:
        handle = request.node.stash[_HANDLE] = RRKitServer(server, script, options, deck)
        yield handle
        finish(_release(request.node))


@pytest.fixture(scope="session")
def rrkit_session_server() -> Iterator[FakeServer]:
    """One fake server for the whole session (per xdist worker); use `rrkit_shared_server` in tests."""
    from .script.models import Script
    from .server.runner import FakeServer

    with FakeServer(Script()) as server:
        yield server


@pytest.fixture
def rrkit_shared_server(
    request: pytest.FixtureRequest, rrkit_config: RRKitConfig | Mapping[str, Any], rrkit_session_server: FakeServer
) -> Iterator[RRKitServer]:
    """Like `rrkit_server`, on the session's server: faster, with its state reset for each test."""
    from .plugin_options import options_of, script_of
    from .plugin_server import RRKitServer, finish

    options = options_of(request, rrkit_config)
    if options.cassette is not None:
        raise pytest.UsageError(f"{options.test}: cassettes need `rrkit_server`, not `rrkit_shared_server`")
    script = script_of(options)
    rrkit_session_server.reset(script)
    handle = request.node.stash[_HANDLE] = RRKitServer(rrkit_session_server, script, options, None)
    yield handle
    finish(_release(request.node))


@pytest.fixture(scope="session")
def rrkit_serve_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The root URL (`http://host:port`) of the server the tests' sessions are on: `--rrkit-serve-url` (or
    $RRKIT_SERVE_URL), else a server this process starts for the whole run (per xdist worker)."""
    from .plugin_session import serve_url

    given = serve_url(request.config)
    if given is not None:
        yield given
        return
    from .server.runner import FakeServer

    with FakeServer() as server:  # no script: a session without one plays the built-in default replies
        yield server.http_url.removesuffix("/v1")


@pytest.fixture
def rrkit_session(
    request: pytest.FixtureRequest, rrkit_config: RRKitConfig | Mapping[str, Any], rrkit_serve_url: str
) -> Iterator[RRKitSession]:
    """This test's own isolated session of the run's shared server (`x-rrkit-session`), reset at its start, with
    the marker's script and chaos: `OpenAI(base_url=rrkit_session.http_url, default_headers=rrkit_session.headers)`,
    or `rrkit_session.openai()`. Ended at teardown (kept for a look when the test failed)."""
    from .plugin_session import close_session, open_session

    session, options = open_session(request, rrkit_serve_url, rrkit_config)
    yield session
    close_session(session, failed=request.node.stash.get(_FAILED, False), check_matched=options.assert_all_matched)


@pytest.fixture
def rrkit_explore(tmp_path: Path) -> Callable[..., Exploration]:
    """`rrkit_explore(client, seed=0, transports=("http", "ws"), budget=None, seeds=None)`: explore `client` (a
    command as a list, a callable given the command's environment, a ClientUnderTest; None: rrkit's reference
    client) and fail the test on any finding, each listed with its minimal script (written into the test's
    temporary folder); the exploration when nothing is found."""
    from .explore import check

    return functools.partial(check, out=tmp_path)


def _async_server_fixture() -> Any:
    """`rrkit_async_server`, made on first use (`__getattr__`): importing pytest-asyncio costs ten times the rest
    of the plugin, and a session that has its plugin loaded has imported it already."""
    import pytest_asyncio

    @pytest_asyncio.fixture
    async def rrkit_async_server(
        request: pytest.FixtureRequest, rrkit_config: RRKitConfig | Mapping[str, Any]
    ) -> AsyncIterator[AsyncRRKitServer]:
        """`rrkit_server` running on the test's own event loop (no thread): `await rrkit_async_server.settle()`,
        `await rrkit_async_server.recording()`."""
        from .plugin_options import options_of
        from .plugin_server import AsyncRRKitServer, finish, new_server

        options = options_of(request, rrkit_config)
        server, script, deck = new_server(options)
        async with server:
            handle = request.node.stash[_HANDLE] = AsyncRRKitServer(server, script, options, deck)
            yield handle
            await server.settle_async()
            finish(_release(request.node))

    return rrkit_async_server


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """When the test fails (its setup or call), what rrkit's teardown checks find joins that failure as an `rrkit`
    section, and teardown adds no second error for it: one unmatched request is "1 failed", reported once."""
    report: pytest.TestReport = yield
    failed = report.failed or (call.excinfo is not None and hasattr(report, "wasxfail"))
    if call.when in ("setup", "call") and failed:
        item.stash[_FAILED] = True
        handle = item.stash.get(_HANDLE, None)
        findings = handle.failure_findings(str(report.longrepr)) if handle is not None else None
        if findings:
            _attach(report, findings)
    return report


def _release(item: pytest.Item) -> Handle:
    """The test's handle, no longer kept on the test (its teardown checks run now)."""
    handle = item.stash[_HANDLE]
    del item.stash[_HANDLE]
    return handle


def _attach(report: pytest.TestReport, text: str) -> None:
    longrepr = report.longrepr
    addsection = getattr(longrepr, "addsection", None)
    if callable(addsection):  # a traceback: printed with it, even under --show-capture=no
        addsection("rrkit", text)
    elif isinstance(longrepr, str):  # pytest.fail(..., pytrace=False)
        report.longrepr = f"{longrepr}\n\n{text}"
    else:
        report.sections.append(("rrkit", text))


def __dir__() -> list[str]:
    """pytest finds fixtures through `dir()`: the async one is listed where pytest-asyncio is loaded."""
    names = [*globals()]
    if "pytest_asyncio" in sys.modules:
        names.append("rrkit_async_server")
    return sorted(set(names))


@pytest.fixture
def rrkit_snapshot(
    snapshot: Any, request: pytest.FixtureRequest, rrkit_config: RRKitConfig | Mapping[str, Any]
) -> Iterator[Any]:
    """syrupy's `snapshot` storing normalized cassettes: `assert rrkit_server.recording == rrkit_snapshot`.
    Headers the test's match configuration leaves out (its presets') are left out of the snapshot too; syrupy's
    `exclude` / `include` / `matcher` apply (`rrkit_snapshot(exclude=...)`, `rrkit_snapshot.with_defaults(...)`).
    While updating, the stored snapshots of a test that failed before asserting them are kept, not deleted."""
    from .plugin_options import match_of
    from .snapshot import keep_unasserted, snapshot_extension

    match = match_of(request, rrkit_config)
    assertion = snapshot.use_extension(snapshot_extension(match.ignored_headers))
    yield assertion
    if request.node.stash.get(_FAILED, False):
        keep_unasserted(assertion)
