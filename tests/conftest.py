"""Shared fixtures: a fake server per test on a free loopback port, and SDK clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rrkit.script import Script
from rrkit.server import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as running:
        yield running


@pytest.fixture
def serve() -> Iterator[object]:
    """`serve(script)` starts a server for this test playing `script`; all are stopped at teardown."""
    started: list[FakeServer] = []

    def start(script: Script | None = None) -> FakeServer:
        running = FakeServer(script).start_in_thread()
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop_in_thread()


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester with the ini a user's project would have (pytest-asyncio wants its loop scope set)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester
