"""More than one core: responses/s of one, two and three `rrkit serve` processes behind HAProxy
(deploy/haproxy/haproxy.cfg, started by deploy/haproxy/fleet.py), beside one process reached directly, measured
interleaved in one run with an asyncio httpx client at C = 64 whose requests spread over many sessions.

Each fleet is a real deployment's shape: the balancer hashes x-rrkit-session, so a session's requests all reach one
process. On a 2-core machine the client, HAProxy and the servers share the cores: each row reports the CPU the
client, HAProxy and the servers used per wall second, so that what limits the figure is visible (a process near
1.0 core is saturated).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx

from benchmarks.common import ROOT, Profile, Row, interleaved, median, process_cpu, run_main

CONCURRENCY = 64
SESSIONS = 192
"""Session names the requests cycle through: many more than processes, as a test fleet's are."""
BODY = {"model": "m", "input": "go", "stream": True}
SERVE_ARGS = ["--quiet", "--keep", "10"]


def fleet_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rrkit_deploy_fleet", ROOT / "deploy" / "haproxy" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Cell:
    """One timed run against one setup: responses per wall second and CPU cores used by each party."""

    rate: float
    client: float
    balancer: float
    servers: float
    failures: int


POOL = 8
"""Streams per httpx.AsyncClient: httpcore's pool spends time growing with its connections (64 in one pool took about
6.6 ms of client CPU a response here, 8 pools of 8 about 1 ms), so C = 64 is 8 clients of 8 streams each."""


async def _drive(url: str, seconds: float) -> tuple[int, list[str]]:
    """Responses read whole in `seconds`, and what each answer other than a 200 said."""
    failures: list[str] = []
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(client: httpx.AsyncClient, index: int) -> None:
        nonlocal done
        n = index
        while time.perf_counter() < deadline:
            headers = {"x-rrkit-session": f"bench-{n % SESSIONS}"}
            async with client.stream("POST", "/v1/responses", json=BODY, headers=headers) as answer:
                body = b"".join([chunk async for chunk in answer.aiter_raw()])
            if answer.status_code != 200:
                failures.append(f"{answer.status_code} {body[:300]!r}")
            else:
                done += 1
            n += CONCURRENCY

    async def pool(first: int) -> None:
        limits = httpx.Limits(max_connections=POOL, max_keepalive_connections=POOL)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60, trust_env=False) as client:
            await asyncio.gather(*(worker(client, first + i) for i in range(POOL)))

    await asyncio.gather(*(pool(first) for first in range(0, CONCURRENCY, POOL)))
    return done, failures


def _cell(url: str, balancer: int | None, servers: list[int], seconds: float) -> Cell:
    pids = [os.getpid(), *([balancer] if balancer else []), *servers]
    before, start = [process_cpu(pid) for pid in pids], time.perf_counter()
    done, failures = asyncio.run(_drive(url, seconds))
    wall = time.perf_counter() - start
    if failures:
        print(f"bench_fleet: {url}: {len(failures)} answers not 200, the first: {failures[0]}", file=sys.stderr)
    used = [(process_cpu(pid) - cpu) / wall for pid, cpu in zip(pids, before, strict=True)]
    servers_used = sum(used[2 if balancer else 1 :])
    return Cell(done / wall, used[0], used[1] if balancer else 0.0, servers_used, len(failures))


def _setups(fleet: Any, stack: list[Any]) -> dict[str, Any]:
    """Fleets of 1, 2 and 3 processes behind HAProxy, started (the one-process fleet is also reached directly)."""
    setups = {}
    for count in (1, 2, 3):
        running = fleet.Fleet(count, SERVE_ARGS).start()
        stack.append(running)
        setups[f"{count} behind HAProxy"] = running
    return setups


def rows(profile: Profile) -> list[Row]:
    fleet = fleet_module()
    if fleet.find_haproxy() is None:
        return [Row("fleet: skipped (no haproxy: apt-get install haproxy)", None, None, "")]
    seconds = 2.0 if profile.quick else 4.0
    stack: list[Any] = []
    try:
        setups = _setups(fleet, stack)
        one = setups["1 behind HAProxy"]
        direct_url = f"http://127.0.0.1:{one.servers[0]['port']}"
        runs = {
            "1 direct": lambda: _cell(direct_url, None, [one.servers[0]["pid"]], seconds),
            **{
                name: (lambda s=setup: _cell(s.url, s.balancer.pid, [f["pid"] for f in s.servers], seconds))
                for name, setup in setups.items()
            },
        }
        cells = interleaved(runs, profile.rounds)
    finally:
        for running in stack:
            running.stop()
    return _rows(cells)


def _rows(cells: dict[str, list[Cell]]) -> list[Row]:
    rate = {name: median(cell.rate for cell in runs) for name, runs in cells.items()}
    out = []
    for name, runs in cells.items():
        cpu = ", ".join(
            f"{party} {median(getattr(cell, party) for cell in runs):.2f}"
            for party in ("client", "balancer", "servers")
            if party != "balancer" or "HAProxy" in name
        )
        failed = sum(cell.failures for cell in runs)
        cpu += f"; {failed} answers not 200" if failed else ""
        baseline = "1 direct" if name.startswith("1 ") else "1 behind HAProxy"
        out.append(
            Row(
                f"fleet: {name}, SSE responses/s at C={CONCURRENCY} over {SESSIONS} sessions",
                rate[name],
                rate[baseline] if name != baseline else None,
                "resp/s",
                baseline_name=baseline if name != baseline else "",
                note=f"cores used: {cpu} ({os.cpu_count()} CPUs shared by client, HAProxy and servers)",
            )
        )
    return out


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
