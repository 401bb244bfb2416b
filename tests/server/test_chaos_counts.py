"""Under chaos, the server counts what the clients saw: every stream the server cut itself is `dropped` in its
metrics and its exchanges (never `disconnected`, as if the client had left), however many streams run at once."""

from __future__ import annotations

import asyncio
import re

import httpx

from rrkit.protocol.plan import Chaos
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

STREAMS = 400
"""Streams at once: enough that the server is busy while its own cuts land (the issue saw the miscount at 2,000;
the engine test `test_engine_ending.py` holds the cause on its own, whatever the load)."""
LONG = reply(text("a b c d e f g h i j k l m n o p", chunks=16))


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
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120.0), trust_env=False) as client:
        return await asyncio.gather(*(_client_saw_a_cut(client, url) for _ in range(STREAMS)))


def test_every_chaos_drop_is_counted_dropped_as_the_clients_saw_it(serve: Serve) -> None:
    server: FakeServer = serve(Script(default=LONG), chaos=Chaos(drop=0.03, seed=11))
    cut = sum(asyncio.run(_streams(server.http_url + "/responses")))
    exchanges = server.settle(60.0).exchanges
    outcomes = [exchange.outcome.kind.value for exchange in exchanges if exchange.outcome is not None]
    assert len(outcomes) == STREAMS and 0 < cut < STREAMS
    assert outcomes.count("dropped") == cut and "disconnected" not in outcomes
    metrics = httpx.get(server.http_url.removesuffix("/v1") + "/__rrkit/metrics", trust_env=False).text
    counted = re.search(r'rrkit_exchanges_total\{outcome="dropped",transport="http"\} (\d+)', metrics) or re.search(
        r'rrkit_exchanges_total\{transport="http",outcome="dropped"\} (\d+)', metrics
    )
    assert counted is not None, metrics
    assert float(counted.group(1)) == cut
