"""Under chaos, the server counts what the clients saw: every stream the server cut itself is `dropped` in its
metrics, its exchanges and the cassette it records (never `disconnected`, as if the client had left), with
2,000 streams at once."""

from __future__ import annotations

import asyncio
import re
import resource
from pathlib import Path

import httpx
import pytest

from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.store import load_cassette
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

pytestmark = pytest.mark.hostile

STREAMS = 2_000
"""Streams at once, as the issue saw the miscount (the engine test `test_engine_ending.py` holds the cause on its
own, whatever the load)."""
SHORT = reply(text("hi"))
"""Nine events: at drop=0.3 before each, about one stream in 25 comes through whole."""
FILES_NEEDED = 2 * STREAMS + 512  # each stream's two ends are in this process, and pytest's own files


@pytest.fixture
def enough_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= FILES_NEEDED:
        return
    if hard != resource.RLIM_INFINITY and hard < FILES_NEEDED:
        pytest.skip(f"{STREAMS} streams need {FILES_NEEDED} open files; this machine allows {hard} (ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILES_NEEDED, hard))


async def _client_saw_a_cut(client: httpx.AsyncClient, url: str) -> bool:
    """One stream read to its end; True when it ended without response.completed (the server cut it)."""
    body = {"model": "gpt-test", "input": "hi", "stream": True}
    try:
        async with client.stream("POST", url, json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:") and '"response.completed"' in line:
                    return False
    except httpx.TransportError:
        return True
    return True


async def _streams(url: str) -> list[bool]:
    limits = httpx.Limits(max_connections=STREAMS, max_keepalive_connections=0)
    # Generous bounds: on a busy 2-core machine 2,000 streams queue for the loop; none may time out.
    timeout = httpx.Timeout(300.0, pool=300.0)
    async with httpx.AsyncClient(limits=limits, timeout=timeout, trust_env=False) as client:
        return await asyncio.gather(*(_client_saw_a_cut(client, url) for _ in range(STREAMS)))


def _metric(server: FakeServer, outcome: str) -> float:
    metrics = httpx.get(server.http_url.removesuffix("/v1") + "/__rrkit/metrics", trust_env=False).text
    found = re.search(rf'rrkit_exchanges_total\{{outcome="{outcome}",transport="http"\}} (\d+)', metrics) or re.search(
        rf'rrkit_exchanges_total\{{transport="http",outcome="{outcome}"\}} (\d+)', metrics
    )
    return float(found.group(1)) if found else 0.0


@pytest.mark.load
@pytest.mark.usefixtures("enough_open_files")
def test_every_chaos_drop_is_counted_dropped_as_the_clients_saw_it(serve: Serve, tmp_path: Path) -> None:
    deck = CassetteDeck.open(tmp_path / "chaos.json", "all", upstream=Script(default=SHORT))
    server: FakeServer = serve(source=deck.source(), chaos="drop=0.3,seed=11")
    deck.journal_to(server.state.capture)
    cut = sum(asyncio.run(_streams(server.http_url + "/responses")))
    exchanges = server.settle(120.0).exchanges
    outcomes = [exchange.outcome.kind.value for exchange in exchanges if exchange.outcome is not None]
    assert len(outcomes) == STREAMS and 0 < cut < STREAMS
    assert outcomes.count("dropped") == cut and "disconnected" not in outcomes
    assert _metric(server, "dropped") == cut and _metric(server, "disconnected") == 0

    saved = deck.save(server.exchanges, server.connections)
    assert saved is not None
    recorded = [exchange.outcome.kind.value for exchange in load_cassette(saved).exchanges if exchange.outcome]
    assert len(recorded) == STREAMS
    assert recorded.count("dropped") == cut and "disconnected" not in recorded
