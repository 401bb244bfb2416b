"""The memory budget in bytes: with Codex-sized (1 MB) requests, the exchange window, the stored HTTP responses
and the near misses each stay within their share of `--limit memory=...`, the oldest evicted first; an evicted
response is answered `previous_response_not_found`, as the real service answers one it no longer has; health says
what is kept; a background run is counted as it grows."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import Any

import httpx

from rrkit.protocol.errors import PREVIOUS_RESPONSE_NOT_FOUND
from rrkit.protocol.limits import Limits, MiB
from rrkit.protocol.plan import ResponsePlan, events_of
from rrkit.protocol.wire_events import planned
from rrkit.script import Match, Script, reply
from rrkit.server.background import GROWTH_STEP, BackgroundRun
from rrkit.server.capture import exchange_size

from ..errortrap import Serve

BUDGET = Limits(memory=8 * MiB)


def codex_sized(n: int) -> dict[str, Any]:
    """A request carrying about 1 MB of history, as Codex's do late in a session."""
    history = [{"role": "user", "content": f"turn {n}: " + "x" * 1000} for _ in range(1000)]
    return {"model": "gpt-test", "input": history, "stream": True}


def test_codex_sized_requests_keep_each_store_within_its_share_evicting_the_oldest(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), keep=100, limits=BUDGET)
    with httpx.Client(timeout=60, trust_env=False) as client:
        for n in range(20):
            with client.stream("POST", server.http_url + "/responses", json=codex_sized(n)) as response:
                assert response.status_code == 200
                response.read()
        server.settle()
        health = client.get(server.admin_url + "/health").json()
    capture, store = server.state.capture, server.state.http_store
    assert capture.kept_bytes <= BUDGET.share("exchanges") and store.kept_bytes <= BUDGET.share("responses")
    kept = server.exchanges
    assert 1 < len(kept) < 20 and capture.evicted == 20 - len(kept)
    assert [exchange.id for exchange in kept] == list(range(20 - len(kept), 20))  # the newest ones
    assert capture.kept_bytes == sum(exchange_size(exchange) for exchange in kept)
    assert all(exchange_size(exchange) > 1_000_000 for exchange in kept)
    assert 1 <= len(store) < 20 and store.evicted == 20 - len(store)
    assert health["memory"]["budget"] == BUDGET.memory
    assert health["memory"]["kept"]["exchanges"] == capture.kept_bytes
    assert health["memory"]["evicted"]["responses"] == store.evicted


def test_an_evicted_response_is_answered_previous_response_not_found(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), keep=10, limits=BUDGET)
    with httpx.Client(timeout=60, trust_env=False) as client:
        first = client.post(server.http_url + "/responses", json={**codex_sized(0), "stream": False}).json()
        for n in range(1, 10):
            assert client.post(server.http_url + "/responses", json={**codex_sized(n), "stream": False}).is_success
        follow_up = {"model": "gpt-test", "previous_response_id": first["id"], "input": "and then?"}
        refused = client.post(server.http_url + "/responses", json=follow_up)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == PREVIOUS_RESPONSE_NOT_FOUND
        last = server.state.http_store
        assert first["id"] not in last and len(last) >= 1


def test_near_misses_of_codex_sized_requests_stay_within_their_share(serve: Serve) -> None:
    server = serve(Script().add(reply("never"), when=Match(model="another-model")), limits=BUDGET)
    with httpx.Client(timeout=60, trust_env=False) as client:
        for n in range(6):
            assert client.post(server.http_url + "/responses", json=codex_sized(n)).status_code == 400
    log = server.state.unmatched
    assert log.total == 6 and 1 <= len(log.recent()) < 6 and log.kept_bytes <= BUDGET.share("unmatched")


def test_a_server_that_keeps_every_exchange_has_no_window_budget(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), limits=BUDGET)  # keep=None: a test reads every exchange
    with httpx.Client(timeout=60, trust_env=False) as client:
        for n in range(12):
            assert client.post(server.http_url + "/responses", json=codex_sized(n)).status_code == 200
    server.settle()
    assert len(server.exchanges) == 12 and server.state.capture.evicted == 0


async def test_a_background_run_is_counted_in_the_budget_as_it_grows_not_only_at_its_end() -> None:
    """A run that has made 200 KB of events and waits before its last one has been counted again (its store entry
    re-sized, `on_grow`) at every GROWTH_STEP of the way, before it ends."""
    delta = {"type": "response.output_text.delta", "delta": "x" * 1000}
    deltas = [planned({**delta, "sequence_number": n}, "http") for n in range(200)]
    final = {"type": "response.completed", "sequence_number": 200, "response": {"id": "resp_1", "status": "completed"}}
    grown: list[int] = []
    run = BackgroundRun({"id": "resp_1"}, on_grow=lambda made: grown.append(made.wire_bytes))
    stopping = asyncio.Event()
    run.start(ResponsePlan(events_of([*deltas, planned(final, "http", delay=60.0)])), stopping)
    while len(run.wires) < len(deltas):
        await asyncio.sleep(0.01)
    assert not run.ended and run.wire_bytes > 200_000
    assert len(grown) == run.wire_bytes // GROWTH_STEP and all(b - a >= GROWTH_STEP for a, b in pairwise([0, *grown]))
    stopping.set()
    await run.aclose()
