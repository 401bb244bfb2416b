"""Shared fixtures: `serve`, guarded fake servers on free loopback ports, and the pytester a user's project has."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .errortrap import Serve


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
