"""Shared fixtures: `serve`, guarded fake servers on free loopback ports, the pytester a user's project has, and
one bytecode cache for every Python process the suite starts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpcore  # noqa: F401  (see below)
import httpcore2  # noqa: F401
import pytest
import uvicorn.protocols.http.httptools_impl
import uvicorn.protocols.websockets.websockets_sansio_impl  # noqa: F401
from hypothesis import HealthCheck, settings

from .errortrap import Serve
from .hostile import commands_without_traceback, pytest_runtest_makereport  # noqa: F401  (hooks, fixture)

# httpx (and the openai SDK's httpx2) import their httpcore only when a transport is first made. Were that inside a
# pytester run in this process, the run's end would drop the module from sys.modules (pytester restores them) while
# the transports made since keep the old one: their errors would no longer be mapped to httpx's (a ConnectError
# escaping `except httpx.HTTPError`) in every later test of the worker. Imported here, they are in every snapshot.
# Likewise uvicorn's httptools protocol: re-imported after such a run, it would catch a new `HttpParserUpgrade`
# class while the C parser raises the old one, and every later WebSocket upgrade in the worker would fail.
from .rrkit_process import kill_left

# The suite shares two cores with other work: a test's examples are not timed (no deadline), nor its generation.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


@pytest.fixture(scope="session", autouse=True)
def shared_bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's subprocesses (`rrkit` commands, pytest runs under test, servers) write and read their `.pyc`
    files in one folder of the run's temporary root, shared by the xdist workers, even where the environment sets
    PYTHONDONTWRITEBYTECODE (as CI and many containers do): otherwise each of them compiles rrkit from source, and
    a pytest run under test also re-does the assertion rewriting of every plugin's modules (hypothesis's alone is
    a second of CPU), which costs the suite time and makes a subprocess's speed depend on the environment. The
    checkout gets no `__pycache__`."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's base is <run root>/popen-gwN
    cache = root / "pycache"
    cache.mkdir(exist_ok=True)
    saved = {name: os.environ.get(name) for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    yield cache
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """An `rrkit` process a test started (tests/rrkit_process.py) and did not stop is killed when the test ends."""
    yield
    kill_left()


@pytest.fixture
def serve() -> Iterator[Serve]:
    """A guarded fake server per call (see `Serve`): the one way tests start a `FakeServer`."""
    guarded = Serve()
    yield guarded
    guarded.finish()


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester with the ini a user's project would have (pytest-asyncio wants its loop scope set)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester
