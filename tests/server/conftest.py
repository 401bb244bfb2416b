"""Fault tests: a fake server per test that must not log an error, whatever the clients and faults do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from faultclient import Serve

from errortrap import ErrorTrap
from rrkit.script import Script
from rrkit.server import FakeServer


@pytest.fixture
def serve() -> Iterator[Serve]:
    """`serve(script)` starts a server playing `script`; at teardown all are stopped, and the test fails
    if a server logged an error (an exception in the app, an unfinished handshake, ...)."""
    started: list[FakeServer] = []
    trap = ErrorTrap()

    def start(script: Script | None = None) -> FakeServer:
        running = FakeServer(script).start_in_thread()
        started.append(running)
        trap.attach()
        return running

    try:
        yield start
    finally:
        for running in started:
            running.stop_in_thread()
        trap.detach()
    errors = [trap.format(record) for record in trap.records]
    assert not errors, "the fake server logged errors:\n" + "\n".join(errors)
