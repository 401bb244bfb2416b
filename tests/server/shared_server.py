"""One guarded fake server (a default text answer) and one httpx client for a whole test module: import the fixtures
`server` and `client` into a module whose tests change nothing of the server's but what they make."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from rrkit.script import parse_script
from rrkit.server import FakeServer

from ..errortrap import Serve


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    """The module's server; its errors (logged while any test of the module ran) fail the module's last test."""
    serve = Serve()
    yield serve(parse_script({"default": {"output": [{"text": "hi"}]}}))
    serve.finish()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30, trust_env=False) as opened:
        yield opened
