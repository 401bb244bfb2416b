"""Catches errors the servers log (uvicorn, rrkit), so that tests can require a server that never broke: `Serve`,
the `serve` fixture (tests/conftest.py), guards every fake server a test starts with it."""

from __future__ import annotations

import logging
import re
from typing import Any, TypeVar

from rrkit.script import Script
from rrkit.server import FakeServer
from rrkit.server.runner import LoopbackServer

LOGGERS = ("uvicorn.error", "uvicorn.asgi", "rrkit")

_Server = TypeVar("_Server", bound=LoopbackServer)


class ErrorTrap(logging.Handler):
    """uvicorn reconfigures its loggers (dropping their handlers) each time a server is configured,
    so attach the trap after every start."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def attach(self) -> None:
        for name in LOGGERS:
            logger = logging.getLogger(name)
            if self not in logger.handlers:
                logger.addHandler(self)

    def detach(self) -> None:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(self)


class Serve:
    """The `serve` fixture. `serve(script)` (or `serve(source=...)`, any `FakeServer` option) starts a fake server
    in a background thread, stopped at teardown; `with serve.running(...) as server:` (or `async with`, on the
    test's event loop) starts one for a block instead. Either way the server is guarded: if any server logged an
    error while the test ran (an exception in the app, an unfinished handshake, ...), the test fails at teardown
    with the record and its traceback. A test that provokes a server error on purpose says so with
    `serve.allow_errors(pattern)`: logged errors matching the regex are then expected, and at least one must occur."""

    def __init__(self) -> None:
        self.trap = ErrorTrap()
        self.allowed: list[re.Pattern[str]] = []
        self._started: list[LoopbackServer] = []

    def __call__(self, script: Script | None = None, **options: Any) -> FakeServer:
        return self.guard(FakeServer(script, **self._checked(options)).start_in_thread())

    def running(self, script: Script | None = None, **options: Any) -> _Running:
        """A server for a `with` (background thread) or `async with` (this event loop) block, guarded like all."""
        return _Running(self, FakeServer(script, **self._checked(options)))

    def guard(self, server: _Server) -> _Server:
        """Guard a server the test started itself (a `RecordingProxy`, ...): its errors fail the test too.
        Call it right after the start (uvicorn drops the loggers' handlers whenever a server is configured)."""
        self.trap.attach()
        if server not in self._started:
            self._started.append(server)
        return server

    def allow_errors(self, pattern: str) -> None:
        """This test provokes server errors matching `pattern` (a regex searched in the formatted record)."""
        self.allowed.append(re.compile(pattern))

    @staticmethod
    def _checked(options: dict[str, Any]) -> dict[str, Any]:
        level = str(options.get("log_level", "warning")).lower()
        if level in ("critical", "fatal"):
            raise ValueError(f"log_level={level!r} would hide the errors the serve fixture fails on: allow_errors")
        return options

    def finish(self) -> None:
        """At teardown: stop every server, then fail on errors logged (and not allowed) while the test ran."""
        try:
            self.trap.attach()  # a server started after ours may have dropped the trap: stop under its watch
            for server in reversed(self._started):
                server.stop_in_thread()
        finally:
            self.trap.detach()
        logged = [self.trap.format(record) for record in self.trap.records]
        unexpected = [text for text in logged if not any(allowed.search(text) for allowed in self.allowed)]
        assert not unexpected, "the fake server logged errors:\n" + "\n".join(unexpected)
        for allowed in self.allowed:
            assert any(allowed.search(text) for text in logged), f"allowed server error never logged: {allowed.pattern}"


class _Running:
    def __init__(self, serve: Serve, server: FakeServer) -> None:
        self.serve, self.server = serve, server

    def __enter__(self) -> FakeServer:
        return self.serve.guard(self.server.start_in_thread())

    def __exit__(self, *exc: object) -> None:
        self.serve.trap.attach()
        self.server.stop_in_thread()

    async def __aenter__(self) -> FakeServer:
        return self.serve.guard(await self.server.start())

    async def __aexit__(self, *exc: object) -> None:
        self.serve.trap.attach()
        await self.server.stop()
