"""Isolated sessions of one server: a request naming a session (`x-rrkit-session`, on HTTP and on the WebSocket
upgrade; `?session=` on admin calls) is answered by the session's own script, journal, store, chaos and counters;
a session is made on first use, ends when idle, deleted, or evicted for room, and never touches another."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from rrkit.protocol.limits import Limits
from rrkit.protocol.plan import Chaos
from rrkit.relay.source import UpstreamSource
from rrkit.script import Script, reply
from rrkit.server.runner import FakeServer

from ..errortrap import Serve

HEADER = "x-rrkit-session"
BODY = {"model": "m", "input": "hi", "stream": True}


def _client() -> httpx.Client:
    return httpx.Client(timeout=30, trust_env=False)


def _create(server: FakeServer, session: str | None, body: dict[str, Any] | None = None) -> httpx.Response:
    headers = {HEADER: session} if session is not None else {}
    with _client() as client:
        return client.post(server.http_url + "/responses", json=body or BODY, headers=headers)


def _admin(server: FakeServer, method: str, path: str, session: str | None = None, **kwargs: Any) -> httpx.Response:
    headers = {HEADER: session} if session is not None else {}
    with _client() as client:
        return client.request(method, server.admin_url + path, headers=headers, **kwargs)


def _texts(response: httpx.Response) -> str:
    return "".join(
        json.loads(line[6:]).get("delta", "") for line in response.text.splitlines() if line.startswith("data: ")
    )


def _script(text: str) -> str:
    return json.dumps({"responses": [{"output": [{"text": text}], "repeat": True}]})


def test_each_session_plays_its_own_script_and_sees_only_its_own_exchanges(serve: Serve) -> None:
    server = serve(Script(default=reply("default")))
    for name in ("a", "b"):
        loaded = _admin(server, "POST", "/script", name, content=_script(f"from {name}"))
        assert loaded.status_code == 200, loaded.text
    assert _texts(_create(server, "a")) == "from a"
    assert _texts(_create(server, "b")) == "from b"
    assert _texts(_create(server, "a")) == "from a"
    assert _texts(_create(server, None)) == "default"
    server.settle()
    seen = {name: _admin(server, "GET", "/exchanges", name).json()["data"] for name in ("a", "b")}
    assert [e["id"] for e in seen["a"]] == [0, 1] and {e["session"] for e in seen["a"]} == {"a"}
    assert [e["id"] for e in seen["b"]] == [0] and seen["b"][0]["session"] == "b"
    assert [e["session"] for e in _admin(server, "GET", "/exchanges").json()["data"]] == [None]
    # a session named in the query, as a browser would
    assert len(_admin(server, "GET", "/exchanges?session=a").json()["data"]) == 2


def test_a_sessions_reset_never_touches_another_session_nor_the_default_one(serve: Serve) -> None:
    server = serve(Script(default=reply("x")))
    for session in ("a", "b", None):
        assert _create(server, session).status_code == 200
    server.settle()
    reset = _admin(server, "POST", "/reset", "a")
    assert reset.json()["forgot"]["exchanges"] == 1
    assert _admin(server, "GET", "/exchanges", "a").json()["data"] == []
    assert len(_admin(server, "GET", "/exchanges", "b").json()["data"]) == 1
    assert len(_admin(server, "GET", "/exchanges").json()["data"]) == 1


def test_a_session_named_on_the_websocket_upgrade_answers_its_frames(serve: Serve) -> None:
    server = serve(Script(default=reply("default")))
    _admin(server, "POST", "/script", "ws-one", content=_script("over the socket"))
    with connect(server.responses_ws_url, additional_headers={HEADER: "ws-one"}, proxy=None, open_timeout=30) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        deltas = []
        while (event := json.loads(ws.recv(timeout=30)))["type"] != "response.completed":
            deltas.append(event.get("delta", ""))
    assert "".join(deltas) == "over the socket"
    server.settle()
    session = server.sessions.state_of("ws-one")
    assert [e.transport for e in session.capture.exchanges] == ["ws"] and server.exchanges == []


def test_a_session_keeps_its_own_responses_so_another_session_cannot_continue_them(serve: Serve) -> None:
    server = serve(Script(default=reply("x")))
    created = _create(server, "a", {"model": "m", "input": "hi"}).json()
    follow = {"model": "m", "input": "more", "previous_response_id": created["id"]}
    assert _create(server, "a", follow).status_code == 200
    refused = _create(server, "b", follow)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "previous_response_not_found"


def test_a_session_name_that_is_no_name_is_refused_naming_the_header(serve: Serve) -> None:
    server = serve(Script(default=reply("x")))
    refused = _create(server, "two words")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "invalid_session" and HEADER in error["message"]
    with pytest.raises(InvalidStatus) as denied:
        connect(server.responses_ws_url, additional_headers={HEADER: "x" * 201}, proxy=None, open_timeout=30)
    assert denied.value.response.status_code == 400
    assert len(server.sessions) == 0


def test_a_server_that_relays_an_upstream_refuses_sessions_saying_why() -> None:
    with FakeServer(source=UpstreamSource("http://127.0.0.1:9/v1")) as server:
        refused = _create(server, "a")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "sessions_not_supported"
    assert "UpstreamSource" in refused.json()["error"]["message"]


def test_an_idle_session_ends_by_itself_without_a_request_and_releases_its_stores(serve: Serve) -> None:
    server = serve(Script(default=reply("x")), session_idle=0.2)
    assert _create(server, "short-lived").status_code == 200
    assert len(server.sessions) == 1
    deadline = time.monotonic() + 30
    while len(server.sessions) and time.monotonic() < deadline:
        time.sleep(0.05)  # no request meanwhile: the server's own sweep ends it
    assert len(server.sessions) == 0 and server.sessions.ended["expired"] == 1
    listed = _admin(server, "GET", "/sessions").json()
    assert listed["live"] == 0 and listed["ended"]["expired"] == 1 and listed["created"] == 1


def test_beyond_the_session_limit_the_least_recently_used_idle_session_makes_room(serve: Serve) -> None:
    server = serve(Script(default=reply("x")), max_sessions=2)
    for name in ("first", "second", "third"):
        assert _create(server, name).status_code == 200
    server.settle()
    names = [s["name"] for s in _admin(server, "GET", "/sessions").json()["data"]]
    assert names == ["second", "third"] and server.sessions.ended["evicted"] == 1


def test_when_every_session_is_busy_a_new_one_is_refused_503_not_an_evicted_busy_one(serve: Serve) -> None:
    server = serve(Script(default=reply("x")), max_sessions=1)
    with connect(server.responses_ws_url, additional_headers={HEADER: "holding"}, proxy=None, open_timeout=30):
        refused = _create(server, "another")
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "too_many_sessions"
        assert [s.name for s in server.sessions.sessions()] == ["holding"]
    assert server.sessions.ended["evicted"] == 0


def test_deleting_a_session_ends_it_and_the_default_session_cannot_be_deleted(serve: Serve) -> None:
    server = serve(Script(default=reply("x")))
    assert _create(server, "gone-soon").status_code == 200
    server.settle()
    ended = _admin(server, "DELETE", "/session", "gone-soon")
    assert ended.json() == {"session": "gone-soon", "ended": True} and len(server.sessions) == 0
    refused = _admin(server, "DELETE", "/session")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "no_session_named"


def test_a_sessions_chaos_set_at_run_time_applies_from_its_next_request_and_to_no_other_session(serve: Serve) -> None:
    server = serve(Script(default=reply("hello there")))
    put = _admin(server, "PUT", "/chaos", "a", json={"drop": 1.0, "seed": 3})
    assert put.status_code == 200 and put.json()["chaos"]["drop"] == 1.0
    assert _admin(server, "GET", "/chaos", "a").json()["chaos"]["drop"] == 1.0
    assert _admin(server, "GET", "/chaos", "b").json()["chaos"] is None
    with pytest.raises(httpx.RemoteProtocolError):  # cut: the body ends short
        _create(server, "a")
    _create(server, "b")
    server.settle()
    outcome = {s: server.sessions.state_of(s).capture.exchanges[-1].outcome for s in ("a", "b")}
    assert outcome["a"] is not None and outcome["a"].kind.value == "dropped"
    assert outcome["b"] is not None and outcome["b"].kind.value == "completed"
    assert _admin(server, "DELETE", "/chaos", "a").json()["chaos"] is None
    assert _texts(_create(server, "a")) == "hello there"
    bad = _admin(server, "PUT", "/chaos", "a", json={"drop": 2})
    assert bad.status_code == 400 and "drop" in bad.json()["error"]["message"]
    not_json = _admin(server, "PUT", "/chaos", "a", content=b"{nope")
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_chaos"


def test_the_default_sessions_chaos_is_where_new_sessions_start_and_sessions_change_only_their_own(
    serve: Serve,
) -> None:
    server = serve(Script(default=reply("x")), chaos="stall=0.5,seed=1")
    assert _admin(server, "GET", "/chaos", "fresh").json()["chaos"]["stall"] == 0.5
    _admin(server, "DELETE", "/chaos", "fresh")
    assert _admin(server, "GET", "/chaos").json()["chaos"]["stall"] == 0.5


def test_sessions_are_counted_in_the_metrics_one_series_per_live_session(serve: Serve) -> None:
    server = serve(Script(default=reply("x")))
    for session in ("a", "a", "b"):
        _create(server, session)
    server.settle()
    seen = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(_admin(server, "GET", "/metrics").text)
        for sample in family.samples
    }
    key = "rrkit_session_exchanges_total"
    assert seen[key, (("outcome", "completed"), ("session", "a"), ("transport", "http"))] == 2
    assert seen[key, (("outcome", "completed"), ("session", "b"), ("transport", "http"))] == 1
    assert seen["rrkit_sessions", ()] == 2
    own = _admin(server, "GET", "/metrics", "a").text  # a session's scrape: its own figures, no other's
    assert 'rrkit_exchanges_total{outcome="completed",transport="http"} 2.0' in own and "rrkit_sessions" not in own


def test_the_health_of_a_session_names_it_and_the_default_health_counts_the_sessions(serve: Serve) -> None:
    server = serve(Script(default=reply("x")), max_sessions=7)
    _create(server, "a")
    assert _admin(server, "GET", "/health", "a").json()["session"] == "a"
    health = _admin(server, "GET", "/health").json()
    assert health["session"] is None and health["sessions"]["live"] == 1 and health["sessions"]["max"] == 7


def test_the_sdk_waits_the_retry_after_of_a_sessions_run_time_rate_limit_and_other_sessions_are_not_refused(
    serve: Serve,
) -> None:
    server = serve(Script(default=reply("after the wait")))
    draws = ((seed, Chaos(rate_limit=0.5, seed=seed)) for seed in range(10_000))
    seed = next(seed for seed, chaos in draws if chaos.rate_limited(0) and not chaos.rate_limited(1))  # refused once
    chaos = {"rate_limit": 0.5, "retry_after": 0.5, "seed": seed}
    assert _admin(server, "PUT", "/chaos", "limited", json=chaos).status_code == 200
    limited = openai.OpenAI(
        base_url=server.http_url, api_key="sk-x", max_retries=2, default_headers={HEADER: "limited"}
    )
    assert limited.responses.create(model="m", input="hi").output_text == "after the wait"
    other = openai.OpenAI(base_url=server.http_url, api_key="sk-x", max_retries=0, default_headers={HEADER: "free"})
    for _ in range(3):
        assert other.responses.create(model="m", input="hi").output_text == "after the wait"
    server.settle()
    refused, retried = server.sessions.state_of("limited").capture.exchanges
    assert refused.outcome is not None and refused.outcome.status == 429 and refused.ended_at is not None
    assert retried.started_at - refused.ended_at >= 0.5 - 0.05  # the SDK waited the Retry-After it was given
    assert all(
        e.outcome and e.outcome.kind.value == "completed" for e in server.sessions.state_of("free").capture.exchanges
    )


def test_sessions_count_against_the_memory_budget_the_least_recently_used_idle_one_ending_for_room(
    serve: Serve,
) -> None:
    server = serve(Script(default=reply("y" * 20_000)), keep=100, limits=Limits(memory=400_000))
    for name in ("s1", "s2", "s3", "s4"):
        for _ in range(3):
            assert _create(server, name, {"model": "m", "input": "x"}).status_code == 200
        server.settle()
    budget = 400_000
    kept = sum(session.kept_bytes() for session in server.sessions.sessions())
    assert server.sessions.ended["evicted"] >= 1 and "s4" in [s.name for s in server.sessions.sessions()]
    assert kept <= budget + max(session.kept_bytes() for session in server.sessions.sessions())
