"""Cassettes made for tests by a scripted fake server, answering plain HTTP requests."""

from __future__ import annotations

from typing import Any

import httpx

from rrkit.cassette import Cassette, cassette_from_capture
from rrkit.script import Script, reply, text

from ..errortrap import Serve


def record(serve: Serve, requests: list[dict[str, Any]], *, lenient: bool = False) -> Cassette:
    """A cassette where the i-th request is answered with `answer i`, by a server `serve` guards (`lenient`: one
    that takes requests the API would refuse, as trimmed recordings of real clients are)."""
    script = Script().queue(*(reply(text(f"answer {i}")) for i in range(len(requests))))
    with serve.running(script, lenient=lenient) as server, httpx.Client() as client:
        for request in requests:
            client.post(server.http_url + "/responses", json=request).raise_for_status()
        server.settle()
        return cassette_from_capture(server.exchanges, server.connections)
