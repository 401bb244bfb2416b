"""The load benchmark's client, one asyncio process (pinned to its own CPU): C concurrent streams over pooled
httpx.AsyncClients (`pool` connections each) read with `aiter_lines` (SSE), or C WebSocket connections each sending
`response.create` in a loop.

Run by benchmarks/bench_load.py: `python -m benchmarks.load_client SPEC_JSON`; it prints `go` when its measured
window opens, `stop` when it closes, then its figures as one JSON line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import connect

from benchmarks.common import process_cpu

BODY = json.dumps({"model": "m", "input": "go", "stream": True}).encode()
HEADERS = {"content-type": "application/json"}
CREATE = json.dumps({"type": "response.create", "model": "m", "input": "go"})
DRAIN = 30.0
"""Seconds the streams under way when the window closes may take to end (unless the spec says `drain`); then they
are cancelled (no failure, no response)."""
TICK = os.sysconf("SC_CLK_TCK")
FAILURES = (httpx.HTTPError, websockets.WebSocketException, OSError, asyncio.TimeoutError)


# -- the server's processes, read from /proc ---------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """The process and all its descendants (node's workers, should a server fork one)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                with contextlib.suppress(OSError):
                    todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds the process and its descendants have used so far: the sum of their live threads' run time
    (ns, lost with a thread that ends) and utime + stime (every thread's, ended ones too, in 10 ms ticks)."""
    threads = ticks = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            threads += process_cpu(member)
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += (int(fields[11]) + int(fields[12])) / TICK
    return threads, ticks


def cpu_used(before: tuple[float, float], after: tuple[float, float]) -> float:
    """The fine figure, unless threads that ended took some of it away (then the ticks, coarse but whole)."""
    threads, ticks = after[0] - before[0], after[1] - before[1]
    return ticks if threads < ticks - 0.02 else threads


def tree_rss_mb(pid: int) -> float:
    """The resident memory of the process and its descendants (VmRSS), in MB."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


# -- the load ----------------------------------------------------------------------------------------------


@dataclass
class Load:
    """What the streams counted: events and responses in all, first-event latencies and failures."""

    events: int = 0
    responses: int = 0
    per_response: int = 0
    counting: bool = False
    firsts: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def first(self, sent: float) -> None:
        if self.counting:
            self.firsts.append(time.perf_counter() - sent)

    def ended(self, events: int) -> None:
        self.responses += 1
        self.per_response = self.per_response or events

    def failed(self, error: BaseException | str) -> None:
        self.errors[error if isinstance(error, str) else type(error).__name__] += 1


async def sse_worker(load: Load, client: httpx.AsyncClient, url: str) -> None:
    while not load.stop.is_set():
        sent = time.perf_counter()
        events = 0
        try:
            async with client.stream("POST", url, content=BODY, headers=HEADERS) as response:
                if response.status_code != 200:
                    load.failed(f"HTTP {response.status_code}")
                    await response.aread()
                    continue
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        if not events:
                            load.first(sent)
                        events += 1
                        load.events += 1
        except FAILURES as error:
            load.failed(error)
            continue
        load.ended(events)


async def ws_worker(load: Load, url: str) -> None:
    while not load.stop.is_set():
        try:
            async with connect(url, max_size=None, compression=None, proxy=None, open_timeout=60) as ws:
                while not load.stop.is_set():
                    await ws_response(load, ws)
        except FAILURES as error:
            load.failed(error)


async def ws_response(load: Load, ws: Any) -> None:
    sent = time.perf_counter()
    await ws.send(CREATE)
    events = 0
    while True:
        frame = await ws.recv()
        if not events:
            load.first(sent)
        events += 1
        load.events += 1
        if '"response.completed"' in frame[:200]:
            break
        if '"error"' in frame[:40]:
            load.failed("error event")
            return
    load.ended(events)


def mark(load: Load, pid: int) -> dict[str, Any]:
    return {
        "at": time.perf_counter(),
        "events": load.events,
        "responses": load.responses,
        "client_cpu": time.process_time(),
        "server_cpu": tree_cpu(pid),
    }


async def run_load(spec: dict[str, Any]) -> dict[str, Any]:
    load = Load()
    start = tree_cpu(spec["pid"])
    streams, pool = int(spec["streams"]), int(spec["pool"])
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    async with contextlib.AsyncExitStack() as stack:
        if spec["transport"] == "sse":
            clients = [
                await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=60, trust_env=False))
                for _ in range(0, streams, pool)
            ]
            tasks = [asyncio.create_task(sse_worker(load, clients[n // pool], spec["url"])) for n in range(streams)]
        else:
            tasks = [asyncio.create_task(ws_worker(load, spec["url"])) for _ in range(streams)]
        await asyncio.sleep(spec["warmup"])
        load.counting = True
        begun = mark(load, spec["pid"])
        print("go", flush=True)
        await asyncio.sleep(spec["window"])
        ended = mark(load, spec["pid"])
        load.counting = False
        print("stop", flush=True)
        load.stop.set()
        _, late = await asyncio.wait(tasks, timeout=spec.get("drain", DRAIN))
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
    # the server's CPU over every request, each ended: a slow reader reads in the window what was written before
    whole = {"whole_server_cpu": cpu_used(start, tree_cpu(spec["pid"])), "whole_responses": load.responses}
    server_cpu = cpu_used(begun.pop("server_cpu"), ended.pop("server_cpu"))
    figures = {key: ended[key] - begun[key] for key in begun} | {"server_cpu": server_cpu}
    return {**figures, **whole, "per_response": load.per_response, "firsts": load.firsts, "errors": dict(load.errors)}


# -- one WebSocket connection carrying many responses -------------------------------------------------------


async def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """`count` responses on one WebSocket connection, the server's RSS every `every`; its metrics at the end,
    read while the connection is still open."""
    load = Load()
    rss: list[tuple[int, float]] = [(0, tree_rss_mb(spec["pid"]))]
    begun = time.perf_counter()
    async with connect(spec["url"], max_size=None, compression=None, proxy=None) as ws:
        for done in range(1, spec["count"] + 1):
            await ws_response(load, ws)
            if done % spec["every"] == 0:
                rss.append((done, tree_rss_mb(spec["pid"])))
        seconds = time.perf_counter() - begun
        async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
            metrics = (await client.get(spec["metrics"])).text
    return {
        "rss": rss,
        "seconds": seconds,
        "responses": load.responses,
        "errors": dict(load.errors),
        "metrics": metrics,
    }


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("cpu") is not None:
        os.sched_setaffinity(0, {spec["cpu"]})
    run = run_one if spec["mode"] == "one" else run_load
    print(json.dumps(asyncio.run(run(spec))), flush=True)


if __name__ == "__main__":
    main()
