"""Soak and load, loopback only: `rrkit serve` as a subprocess answering 10,000 SSE requests, its RSS
(/proc/<pid>/status VmRSS) at 1k and 10k requests, without recording (a bounded window of exchanges, `--keep`
default), with Codex-sized requests of 1 MB under `--limit memory=64MiB` (RSS flat once the budget is full),
and with `--cassette C --record-mode all` (every exchange kept and recorded: RSS grows with the
recording); 200 SSE and 200 WebSocket streams at once, all events in order; 2,000 connects/disconnects of every
kind (clean, abort mid-stream, client gone with a reset, bare TCP, WebSocket left mid-stream) against a server
process whose open file descriptors (/proc/<pid>/fd) and asyncio tasks must come back to their baseline.

Run: python -m benchmarks.bench_soak [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

from benchmarks.common import Profile, Row, at_least, at_most, run_main

BODY: dict[str, Any] = {"model": "gpt-soak", "input": "hi", "stream": True}
FAST = """\
name: fast
responses:
  - repeat: true
    output:
      - text: "Hello from the soak."
        chunks: 5
"""
SLOW = """\
name: slow
responses:
  - repeat: true
    output:
      - text: "abcdefghij"
        chunks: 5
    fault: {delay_each: 0.01}
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if match := re.search(r"HTTP base URL:\s+(\S+)", line):
            return process, match.group(1)
    raise SystemExit(f"rrkit serve did not start: {process.stderr.read() if process.stderr else ''}")


def stop(process: subprocess.Popen[str]) -> tuple[float, str, str]:
    begun = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    return time.monotonic() - begun, out, err


# -- 1. RSS over 10,000 requests --------------------------------------------------------------------------


def soak(
    requests: int, *args: str, body: dict[str, Any] = BODY, marks_at: tuple[int, ...] = (1_000,)
) -> dict[str, Any]:
    process, url = serve(*args)
    marks: dict[str, float] = {"start": rss_mb(process.pid)}
    content = json.dumps(body).encode()
    begun = time.monotonic()
    with httpx.Client(trust_env=False, timeout=30) as client:
        for count in range(1, requests + 1):
            headers = {"content-type": "application/json"}
            with client.stream("POST", url + "/responses", content=content, headers=headers) as response:
                for _ in response.iter_bytes():
                    pass
            if count in (*marks_at, requests):
                marks[f"{count}"] = rss_mb(process.pid)
        health = client.get(url.removesuffix("/v1") + "/__rrkit/health").json()
    elapsed = time.monotonic() - begun
    stopped, out, err = stop(process)
    return {
        "rss": marks,
        "rate": requests / elapsed,
        "stop": stopped,
        "rc": process.returncode,
        "out": out,
        "err": err,
        "health": health,
    }


CODEX_SIZED: dict[str, Any] = {
    "model": "gpt-soak",
    "input": [{"role": "user", "content": "x" * 1000} for _ in range(1000)],
    "stream": True,
}
"""A request of about 1 MB, as Codex's are late in a session (the whole history in each)."""
MEMORY_BUDGET_MB = 64
BIG_BOUND_MB = 16.0
"""How much `rrkit serve --limit memory=64MiB` may grow once its budget is full, however many 1 MB requests."""


# -- 2. concurrent streams ---------------------------------------------------------------------------------


async def sse_types(client: httpx.AsyncClient, url: str) -> list[str]:
    types = []
    async with client.stream("POST", url + "/responses", json=BODY) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                types.append(json.loads(line[6:])["type"])
    return types


async def ws_types(url: str) -> list[str]:
    types: list[str] = []
    async with websockets.connect(url.replace("http://", "ws://") + "/responses", proxy=None) as websocket:
        await websocket.send(json.dumps({"type": "response.create", **BODY}))
        while not types or types[-1] != "response.completed":
            types.append(json.loads(await websocket.recv())["type"])
    return types


def concurrent(url: str, streams: int) -> dict[str, Any]:
    async def run() -> tuple[list[list[str]], float]:
        begun = time.monotonic()
        limits = httpx.Limits(max_connections=streams)
        async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=60) as client:
            results = await asyncio.gather(
                *(sse_types(client, url) for _ in range(streams)), *(ws_types(url) for _ in range(streams))
            )
        return list(results), time.monotonic() - begun

    results, elapsed = asyncio.run(run())
    expected = results[0]
    in_order = sum(1 for result in results if result == expected and expected[-1] == "response.completed")
    return {"streams": len(results), "in_order": in_order, "seconds": elapsed, "events": len(expected)}


# -- 3. churn, against a server process that reports its task count -----------------------------------------

CHILD = """
import asyncio, sys
from rrkit.script.loader import load_script
from rrkit.server import FakeServer
server = FakeServer(load_script(sys.argv[1]), keep=100).start_in_thread()
print(server.http_url, flush=True)
async def count():
    return len(asyncio.all_tasks()) - 1
for line in sys.stdin:
    if line.strip() == "tasks":
        print(asyncio.run_coroutine_threadsafe(count(), server._loop).result(5), flush=True)
    else:
        break
server.stop_in_thread()
"""


class Child:
    def __init__(self, script: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self.url = self.process.stdout.readline().strip()
        host, port = self.url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        self.address = (host, int(port))

    def tasks(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("tasks\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        self.process.wait(10)


def churn(child: Child, total: int) -> dict[str, Any]:
    url, address = child.url, child.address
    payload = json.dumps(BODY).encode()

    def clean() -> None:
        with httpx.Client(trust_env=False, timeout=10) as client:
            client.post(url + "/responses", json=BODY)

    def abort_mid_stream() -> None:
        with (
            httpx.Client(trust_env=False, timeout=10) as client,
            client.stream("POST", url + "/responses", json=BODY) as response,
        ):
            next(response.iter_bytes())

    def client_gone() -> None:
        sock = socket.create_connection(address)
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (len(payload), payload)
        )
        sock.recv(10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()

    def bare_tcp() -> None:
        socket.create_connection(address).close()

    def ws_left() -> None:
        from websockets.sync.client import connect

        with connect(url.replace("http://", "ws://") + "/responses", proxy=None) as websocket:
            websocket.send(json.dumps({"type": "response.create", **BODY}))
            websocket.recv(timeout=10)

    kinds = [clean, abort_mid_stream, client_gone, bare_tcp, ws_left]
    clean()
    time.sleep(0.3)
    base_fds, base_tasks = fds(child.process.pid), child.tasks()
    peak_fds = base_fds
    begun = time.monotonic()
    for start in range(0, total, 50):
        threads = [threading.Thread(target=kinds[i % len(kinds)]) for i in range(start, min(total, start + 50))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        peak_fds = max(peak_fds, fds(child.process.pid))
    elapsed = time.monotonic() - begun
    for _ in range(100):
        if fds(child.process.pid) <= base_fds and child.tasks() <= base_tasks:
            break
        time.sleep(0.05)
    return {
        "total": total,
        "seconds": elapsed,
        "fds": (base_fds, peak_fds, fds(child.process.pid)),
        "tasks": (base_tasks, child.tasks()),
    }


KEEP_BOUND_MB = 16.0
"""How much `rrkit serve` (default `--keep 100`) may grow over its start-up RSS, however many requests."""


def rows(profile: Profile) -> list[Row]:
    """Figures against what they must come back to: start-up RSS, the requests sent, the fd and task baseline."""
    requests, streams, churns = (1_000, 50, 300) if profile.quick else (10_000, 200, 2_000)
    plain = soak(requests)
    start, end = plain["rss"]["start"], list(plain["rss"].values())[-1]
    found = [
        Row(
            f"`rrkit serve` RSS after {requests:,} SSE requests (--keep 100)",
            end,
            start,
            "MB",
            target=at_most(KEEP_BOUND_MB, of="added"),
            baseline_name="its RSS at start-up",
            note=f"{plain['rate']:.0f} req/s; stopped {plain['stop']:.2f} s after SIGINT, exit {plain['rc']}",
        )
    ]
    big_requests, full_at = (150, 75) if profile.quick else (400, 150)
    big = soak(big_requests, "--limit", f"memory={MEMORY_BUDGET_MB}MiB", body=CODEX_SIZED, marks_at=(full_at,))
    memory = big["health"]["memory"]
    kept = big["health"]["exchanges"]
    found.append(
        Row(
            f"`rrkit serve --limit memory={MEMORY_BUDGET_MB}MiB` RSS after {big_requests} requests of 1 MB",
            big["rss"][str(big_requests)],
            big["rss"][str(full_at)],
            "MB",
            target=at_most(BIG_BOUND_MB, of="added"),
            baseline_name=f"its RSS after {full_at} (budget full)",
            note=f"start {big['rss']['start']:.0f} MB; {kept} exchanges kept in "
            f"{memory['kept']['exchanges'] / 2**20:.1f} MiB ({memory['kept']['exchanges'] / max(kept, 1) / 1e6:.2f} MB "
            f"each), {memory['evicted']['exchanges']} evicted; responses {memory['kept']['responses'] / 2**20:.1f} MiB",
        )
    )
    with tempfile.TemporaryDirectory() as folder:
        cassette, fast = Path(folder) / "soak.json", Path(folder) / "fast.yaml"
        fast.write_text(FAST)
        recorded = soak(requests, "--cassette", str(cassette), "--record-mode", "all", "--script", str(fast))
        count = len(json.loads(cassette.read_text())["exchanges"]) if cassette.exists() else 0
        grown = list(recorded["rss"].values())[-1] - recorded["rss"]["start"]
        found.append(
            Row(
                "`rrkit serve --record-mode all`: exchanges recorded",
                count,
                requests,
                "exchanges",
                target=at_least(1.0),
                baseline_name="requests answered",
                note=f"RSS +{grown:.0f} MB ({grown * 1024 / max(count, 1):.1f} KB per exchange); "
                f"stop with the cassette write {recorded['stop']:.2f} s",
            )
        )
        script = Path(folder) / "slow.yaml"
        script.write_text(SLOW)
        process, url = serve("--script", str(script))
        try:
            together = concurrent(url, streams)
        finally:
            stop(process)
        found.append(
            Row(
                f"{streams} SSE + {streams} WS streams at once, complete and in order",
                together["in_order"],
                together["streams"],
                "streams",
                target=at_least(1.0),
                baseline_name="streams started",
                note=f"{together['events']} events each, {together['seconds']:.2f} s",
            )
        )
        child = Child(script)
        try:
            churned = churn(child, churns)
        finally:
            child.close()
    base, peak, after = churned["fds"]
    found.append(
        Row(
            f"open fds after {churned['total']:,} connects/disconnects (5 kinds)",
            after,
            base,
            "fds",
            target=at_most(0, of="added"),
            baseline_name="fds before",
            note=f"peak {peak}",
        )
    )
    found.append(
        Row(
            f"asyncio tasks after {churned['total']:,} connects/disconnects",
            churned["tasks"][1],
            churned["tasks"][0],
            "tasks",
            target=at_most(0, of="added"),
            baseline_name="tasks before",
        )
    )
    return found


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
