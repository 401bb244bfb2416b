"""A test fleet on one `rrkit serve`: 8 pytest-xdist workers x 50 tests, each test on its own session (its own
script and chaos, reset at its start) sees exactly its own exchanges, none fails, and once the sessions have
expired the server's memory is back within 10% of where it started."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.load, pytest.mark.timeout(1800)]

WORKERS, TESTS_PER_WORKER = 8, 50
SERVE = (sys.executable, "-m", "rrkit", "serve", "--quiet", "--session-idle", "2", "--max-sessions", "32")
"""Sessions end 2 s after their last request, and at most 32 live at once (the least recently used idle ones end
first): what bounds the heap a fleet takes, so that it returns once the fleet is done."""
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")

FLEET = """
import httpx
import pytest
from rrkit.protocol.plan import Chaos
from rrkit.script import Script, reply

TESTS = {tests}


@pytest.fixture(scope="session")
def http():
    with httpx.Client(timeout=120, trust_env=False) as client:
        yield client


@pytest.mark.parametrize("index", range(TESTS))  # spread over the workers: about TESTS / workers each
def test_a_session_of_its_own(rrkit_session, http, worker_id, index):
    tag = f"{{worker_id}}-{{index}}"
    rrkit_session.load(Script(default=reply(f"answer {{tag}}")))
    chaos = Chaos(rate_limit=0.5, retry_after=0.001, seed=index)  # this test's own: refusals known in advance
    rrkit_session.set_chaos(chaos)
    for n in range(4):
        answer = http.post(
            rrkit_session.http_url + "/responses",
            json={{"model": "m", "input": f"{{tag}} #{{n}}"}},
            headers=rrkit_session.headers,
        )
        if chaos.rate_limited(n):
            assert answer.status_code == 429 and answer.headers["retry-after-ms"] == "1"
        else:
            assert answer.status_code == 200, answer.text
            assert answer.json()["output"][0]["content"][0]["text"] == f"answer {{tag}}"
    seen = rrkit_session.exchanges(full=1)
    assert [e["id"] for e in seen] == [0, 1, 2, 3]
    assert {{e["session"] for e in seen}} == {{rrkit_session.name}}
    assert [e["wire_request"]["input"] for e in seen] == [f"{{tag}} #{{n}}" for n in range(4)]
"""

CONFTEST = """
from rrkit.plugin_session import RRKitSession

RRKitSession.end = lambda self: None  # the fleet's sessions are left to expire, as a killed job's would be
"""


WARM_UP: list[tuple[str, str, object]] = [
    ("POST", "/__rrkit/reset", None),
    ("POST", "/__rrkit/script", {"default": {"output": [{"text": "warm"}]}}),
    ("PUT", "/__rrkit/chaos", {"rate_limit": 0.5, "retry_after": 0.001, "seed": 1}),
    *[("POST", "/v1/responses", {"model": "m", "input": "x"})] * 4,
    ("GET", "/__rrkit/exchanges?full=1", None),
    ("GET", "/__rrkit/unmatched", None),
    ("DELETE", "/__rrkit/session", None),
]
"""A fleet test's calls, made by a warm-up round before the start is measured: the code they load, and the heap that
eight sessions at once take, are no session's leak."""


def run_fleet(folder: Path, url: str, workers: int, tests: int, *, timeout: float) -> None:
    """The fleet program (`tests` tests, each on a session of its own) run by pytest with `workers` xdist workers
    against the server (or balancer) at `url`; every test passes."""
    (folder / "test_fleet.py").write_text(FLEET.format(tests=tests))
    (folder / "conftest.py").write_text(CONFTEST)
    run = subprocess.run(
        [*PYTEST, "-n", str(workers), f"--rrkit-serve-url={url}", "test_fleet.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{tests} passed" in run.stdout


def _warm_up(root: str, number: int) -> None:
    """One test's calls, on a session of its own, ended at its end."""
    with httpx.Client(base_url=root, timeout=120, trust_env=False) as client:
        for method, path, body in WARM_UP:
            client.request(method, path, json=body, headers={"x-rrkit-session": f"warm-up-{number}"})


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc")
def test_eight_workers_of_fifty_tests_share_one_server_each_test_on_its_own_session(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    server = subprocess.Popen(
        [*SERVE, "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        root = json.loads(ready.read_text())["http_url"].removesuffix("/v1")
        with httpx.Client(base_url=root, timeout=120, trust_env=False) as client:
            with ThreadPoolExecutor(WORKERS) as pool:  # a round of what the workers' tests run, side by side
                list(pool.map(lambda n: _warm_up(root, n), range(WORKERS * 2)))
            time.sleep(2)  # the warm-up's sessions ended: the server's next sweep gives their memory back
            start = _rss(server.pid)  # its code loaded and its heap sized for eight sessions at once
            run_fleet(tmp_path, root, WORKERS, WORKERS * TESTS_PER_WORKER, timeout=1500)
            peak = _rss(server.pid)
            deadline = time.monotonic() + 120
            while (listed := client.get("/__rrkit/sessions").json())["live"] and time.monotonic() < deadline:
                time.sleep(0.5)
            assert listed["live"] == 0 and listed["kept_bytes"] == 0
            assert listed["created"] == WORKERS * TESTS_PER_WORKER + WORKERS * 2
            assert listed["ended"]["expired"] + listed["ended"]["evicted"] == WORKERS * TESTS_PER_WORKER
            time.sleep(1)  # the dropped sessions' releases run on the server's loop
            end = _rss(server.pid)
        mib = [f"{size / 2**20:.1f}" for size in (start, peak, end)]
        print(f"server RSS (MiB): at the start {mib[0]}, after the fleet {mib[1]}, its sessions expired {mib[2]}")
        assert end <= start * 1.10, f"RSS {end} is more than 10% above the start {start} (peak {peak})"
    finally:
        server.terminate()
        server.wait(60)
