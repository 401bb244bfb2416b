"""Fault tests: a fake server per test that must not log an error, whatever the clients and faults do."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from faultclient import Serve

from rrkit.script import Script
from rrkit.server import FakeServer

# uvicorn reconfigures its loggers (dropping their handlers) each time a server is configured,
# so the error trap is attached after every start.
_TRAPPED_LOGGERS = ("uvicorn.error", "uvicorn.asgi", "rrkit")


class _ErrorTrap(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def attach(self) -> None:
        for name in _TRAPPED_LOGGERS:
            logger = logging.getLogger(name)
            if self not in logger.handlers:
                logger.addHandler(self)

    def detach(self) -> None:
        for name in _TRAPPED_LOGGERS:
            logging.getLogger(name).removeHandler(self)


@pytest.fixture
def serve() -> Iterator[Serve]:
    """`serve(script)` starts a server playing `script`; at teardown all are stopped, and the test fails
    if a server logged an error (an exception in the app, an unfinished handshake, ...)."""
    started: list[FakeServer] = []
    trap = _ErrorTrap()

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
