"""The recording proxy in front of the fake server, with the reference client: the cassette's logical
requests are the ones the client logged, over SSE and over WebSocket (warmup, incremental, drop, retry)."""

from __future__ import annotations

import pytest

from rrkit.cassette import RecordingProxy
from rrkit.client.check import view_mismatches

from ..errortrap import Serve
from .client_session import request_kinds, run_session, session_script


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_proxy_records_the_reference_client_with_the_logical_requests_it_logged(
    serve: Serve, transport: str
) -> None:
    async with serve.running(session_script()) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        trace = await run_session(proxy.http_url, transport)
        cassette = await proxy.cassette_async(name=f"client-{transport}")
        await upstream.settle_async()
        upstream_exchanges = upstream.exchanges
    assert view_mismatches(trace, cassette.exchanges) == []
    assert view_mismatches(trace, upstream_exchanges) == []
    kinds = request_kinds(trace)
    if transport == "ws":
        assert kinds[0] == "ws warmup" and "ws incremental" in kinds
    else:
        assert set(kinds) == {"http full"}
    outcomes = [exchange.outcome.kind.value for exchange in cassette.exchanges if exchange.outcome]
    assert "dropped" in outcomes and outcomes[-1] == "completed"
