"""Fuzz fixtures: the hypothesis profiles (registered on import of the package, see tests/fuzz/__init__.py) and one
guarded fake server per test module.

A module-scoped server cannot use the function-scoped `serve` fixture, so it has its own `Serve` (the same error
trap, tests/errortrap.py). uvicorn drops the trap's handlers whenever any server is configured, so `check()`
attaches it again, and each example checks that nothing was logged since the last one: a traceback fails the
example that caused it (and hypothesis shrinks it), not the module's teardown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rrkit.script import Script, reply

from ..errortrap import Serve
from . import PROFILE

SCRIPT = Script(default=reply("Hi there."))
"""What every fuzzed server plays: a plain text reply, so a 500 or a cut stream is never scripted."""
KEEP = 32
"""The exchanges a fuzzed server keeps: thousands of examples must not grow the worker's memory."""


def pytest_report_header() -> str:
    return f"rrkit fuzz profile: {PROFILE} (HYPOTHESIS_PROFILE=ci|deep)"


class GuardedServer:
    """A fake server under an error trap for a whole module; `check()` after each example."""

    def __init__(self, lenient: bool = False, **options: Any) -> None:
        self.serve = Serve()
        self.server = self.serve(SCRIPT, keep=KEEP, lenient=lenient, **options)
        self.lenient = lenient
        self._seen = 0

    def attach(self) -> None:
        """Before each example: a server started since (by another module's test) dropped the trap's handlers."""
        self.serve.trap.attach()

    def check(self) -> None:
        """Every exchange has its outcome, and the server logged no error since the last check."""
        self.server.settle()
        self.attach()
        records = self.serve.trap.records[self._seen :]
        self._seen = len(self.serve.trap.records)
        logged = [self.serve.trap.format(record) for record in records]
        assert not logged, "the fake server logged errors:\n" + "\n".join(logged)

    def finish(self) -> None:
        self.serve.finish()


@pytest.fixture(scope="module", params=[False, True], ids=["strict", "lenient"])
def guarded(request: pytest.FixtureRequest) -> Iterator[GuardedServer]:
    """One fake server per module (and per mode: strict, the default, and `lenient=True`), guarded like `serve`."""
    server = GuardedServer(lenient=request.param)
    yield server
    server.finish()
