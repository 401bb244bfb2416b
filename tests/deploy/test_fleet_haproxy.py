"""Three `rrkit serve` processes behind Debian's HAProxy with deploy/haproxy/haproxy.cfg, started by
deploy/haproxy/fleet.py: a test fleet's sessions (each its own script, chaos and journal) pass through the balancer,
each session's exchanges all on one process and the sessions spread over more than one; the admin API (header or
?session=) reaches the session's process; a sessionless request is the default session, on one process; a
WebSocket session passes through."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from rrkit.protocol.headers import SESSION_HEADER as SESSION

from ..server.test_sessions_fleet import run_fleet
from .recipes import fleet_module, needs_haproxy

pytestmark = [needs_haproxy, pytest.mark.timeout(600)]

PROCESSES, WORKERS, TESTS = 3, 2, 24
# the fleet's test program, its conftest and pytest's command line are the one-server fleet test's: its sessions are
# never ended, so that each process's list shows where each one ran


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    workdir = tmp_path_factory.mktemp("fleet")
    serve_args = ["--quiet", "--journal", str(workdir / "journal-{n}.jsonl")]
    with fleet_module().Fleet(PROCESSES, serve_args, workdir=workdir) as running:
        yield running


def _direct(fleet: Any, path: str, **options: Any) -> list[Any]:
    """`GET path` on each process itself, not through the balancer."""
    answers = []
    for facts in fleet.servers:
        with httpx.Client(base_url=f"http://127.0.0.1:{facts['port']}", trust_env=False, timeout=60) as client:
            answer = client.get(path, **options)
            assert answer.status_code == 200, answer.text
            answers.append(answer.json())
    return answers


def _holders(fleet: Any) -> dict[str, list[int]]:
    """Each live session's name: the processes (0-based) that hold it."""
    held: dict[str, list[int]] = {}
    for index, listing in enumerate(_direct(fleet, "/__rrkit/sessions")):
        for session in listing["data"]:
            held.setdefault(session["name"], []).append(index)
    return held


def test_a_test_fleet_through_the_balancer_has_each_session_on_exactly_one_process(fleet: Any, tmp_path: Path) -> None:
    run_fleet(tmp_path, fleet.url, WORKERS, TESTS, timeout=500)

    fleet_sessions = {name: where for name, where in _holders(fleet).items() if "test_a_session_of_its_own" in name}
    assert len(fleet_sessions) == TESTS
    assert all(len(where) == 1 for where in fleet_sessions.values()), fleet_sessions
    spread = Counter(where[0] for where in fleet_sessions.values())
    assert len(spread) > 1, f"every session on one process: {spread}"
    # the journals agree: a session's four exchanges are all in the journal of the process that holds it
    journaled: dict[str, Counter[int]] = {}
    for index in range(PROCESSES):
        journal = fleet.workdir / f"journal-{index + 1}.jsonl"
        lines = journal.read_text().splitlines() if journal.exists() else []
        for line in lines:
            journaled.setdefault(json.loads(line)["session"], Counter())[index] += 1
    for name, (holder,) in fleet_sessions.items():
        assert journaled[name] == Counter({holder: 4}), name
    print(f"sessions per process: {dict(sorted(spread.items()))}")


def test_the_admin_api_through_the_balancer_reaches_the_process_of_the_session_by_header_or_query(fleet: Any) -> None:
    names = [f"admin-routing-{n}" for n in range(12)]
    with httpx.Client(base_url=fleet.url, trust_env=False, timeout=60) as client:
        for count, name in enumerate(names, 1):
            script = {"default": {"output": [{"text": f"from {name}"}]}}
            assert client.post("/__rrkit/script", params={"session": name}, json=script).status_code == 200
            for _ in range(count % 3 + 1):
                answer = client.post("/v1/responses", json={"model": "m", "input": "hi"}, headers={SESSION: name})
                assert answer.json()["output"][0]["content"][0]["text"] == f"from {name}"
        for count, name in enumerate(names, 1):
            by_query = client.get("/__rrkit/exchanges", params={"session": name}).json()["data"]
            by_header = client.get("/__rrkit/exchanges", headers={SESSION: name}).json()["data"]
            assert len(by_query) == len(by_header) == count % 3 + 1
            assert {e["session"] for e in by_query + by_header} == {name}
    holders = _holders(fleet)
    assert all(len(holders[name]) == 1 for name in names), {name: holders[name] for name in names}
    assert len({holders[name][0] for name in names}) > 1


def test_requests_without_a_session_are_the_default_session_on_one_process(fleet: Any) -> None:
    before = [health["exchanges"] for health in _direct(fleet, "/__rrkit/health")]
    with httpx.Client(base_url=fleet.url, trust_env=False, timeout=60) as client:
        for n in range(6):
            headers = {SESSION: ""} if n % 2 else {}  # an empty header names the default session too
            assert client.post("/v1/responses", json={"model": "m", "input": "x"}, headers=headers).status_code == 200
        assert client.get("/__rrkit/health").json()["session"] is None
    after = [health["exchanges"] for health in _direct(fleet, "/__rrkit/health")]
    assert sorted(b - a for a, b in zip(before, after, strict=True)) == [0] * (PROCESSES - 1) + [6]


def test_a_websocket_session_through_the_balancer_keeps_its_socket_and_its_process(fleet: Any) -> None:
    name = "websocket-through-haproxy"
    url = fleet.url.replace("http", "ws", 1) + "/v1/responses"
    for _socket in range(2):  # a second socket of the session reaches the same process
        with connect(url, additional_headers={SESSION: name}, open_timeout=60, proxy=None) as websocket:
            previous = None
            for turn in range(3):
                body = {"model": "m", "input": f"turn {turn}", "previous_response_id": previous}
                websocket.send(json.dumps({"type": "response.create", **body}))
                while (event := json.loads(websocket.recv(timeout=60)))["type"] != "response.completed":
                    assert event["type"] not in ("error", "response.failed"), event
                previous = event["response"]["id"]
    (holder,) = _holders(fleet)[name]
    port = fleet.servers[holder]["port"]
    direct = httpx.get(f"http://127.0.0.1:{port}/__rrkit/exchanges", params={"session": name}, trust_env=False)
    through = httpx.get(f"{fleet.url}/__rrkit/exchanges", headers={SESSION: name}, trust_env=False)
    assert direct.json()["data"] == through.json()["data"]
    assert [e["transport"] for e in direct.json()["data"]] == ["ws"] * 6
    assert len({e["connection"] for e in direct.json()["data"]}) == 2
