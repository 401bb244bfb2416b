"""Load, loopback only (issue 62): `rrkit serve` (the real command, a script whose one repeated reply is a text of
200 deltas) beside aimock 1.43 (`llmock -c 1`, the same text) and the bare servers (uvicorn + Starlette for SSE,
`websockets` for WebSocket, the same events pre-encoded), each in its own process pinned to CPU 0, under one
asyncio client process pinned to CPU 1 (benchmarks/load_client.py): C = 1, 16, 64, 256 concurrent streams over
one pooled httpx.AsyncClient read line by line (SSE), or C WebSocket connections each sending `response.create`
in a loop, for a fixed window a cell, servers interleaved, medians of the rounds. A row a measure and cell:
responses/s, first-event p50 and p99, server CPU per response (its process tree, /proc), server RSS (peak in
the cell), the client's own CPU use (a saturated client shows) and failed requests (resets and the like).
Also: each server's RSS fresh; one WebSocket connection carrying 20,000 responses (`--keep` default and 0), RSS
every 1,000 and the kept bytes `/__rrkit/metrics` reports; the RSS of a warm `rrkit serve` (its response store and
window of exchanges full) before a C = 256 burst, at its peak and 5 s after.

Run: python -m benchmarks.bench_load [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from benchmarks.bench_server_stream import aimock_command
from benchmarks.common import (
    ROOT,
    PeerProcess,
    Profile,
    Row,
    ServerProcess,
    Target,
    at_least,
    at_most,
    child_env,
    interleaved,
    median,
    run_main,
    until_idle,
)
from benchmarks.load_client import tree_rss_mb
from rrkit.server.store import HTTP_STORE_SIZE

SIZE = 200
"""Text deltas in each response."""
STREAMS = (1, 16, 64, 256)
POOL = 16
"""Connections an httpx.AsyncClient pools in the load cells: httpcore 1.0's pool walks all its connections for
each idle one on every request and response (quadratic), so that one pool of 256 caps the client near 100
responses/s; C/16 pools of 16 in the one process leave the client the server's pace. One pool of 256 has a cell
of its own, for the resets a slow reader meets."""
WARM = HTTP_STORE_SIZE + 100
"""Responses that fill a server's response store and `rrkit serve`'s default window of 100 exchanges."""
GROWTH_MB = 16.0
"""How much `rrkit serve` may grow once warm, on one WebSocket connection or after a burst (bench_soak's bound)."""
SCRIPT = json.dumps({"name": "load", "responses": [{"repeat": True, "output": [{"text": "x" * SIZE, "chunks": SIZE}]}]})
AIMOCK = "@copilotkit/aimock (llmock -c 1)"
BARE = {"sse": "bare uvicorn + Starlette", "ws": "bare websockets"}


@dataclass(frozen=True)
class Timing:
    """How long a cell runs: `warmup` seconds not counted, then the measured `window`."""

    warmup: float
    window: float
    rounds: int
    one_ws: int


def timing_of(profile: Profile) -> Timing:
    if profile.quick:
        return Timing(warmup=0.4, window=0.8, rounds=1, one_ws=5_000)
    return Timing(warmup=0.4, window=0.8, rounds=min(profile.rounds, 3), one_ws=20_000)


ONE_POOL_WARMUP, ONE_POOL_WINDOW = 4.0, 3.0
"""One pool of 256: its first requests alone take seconds (httpcore's quadratic pool), hence the longer warm-up."""


def cpus() -> tuple[int, int] | None:
    """The server's CPU and the client's, or None where there is only one."""
    mine = sorted(os.sched_getaffinity(0))
    return (mine[0], mine[1]) if len(mine) >= 2 else None


def pin(pid: int) -> None:
    """Every thread of the process (node's started with it) on the server's CPU, where there are two; threads
    started later inherit it."""
    placed = cpus()
    if placed is not None:
        for task in Path(f"/proc/{pid}/task").iterdir():
            os.sched_setaffinity(int(task.name), {placed[0]})


@dataclass
class Server:
    """A server measured: its process, its SSE and WebSocket URLs (None: not that transport)."""

    name: str
    process: PeerProcess | ServerProcess
    sse: str | None
    ws: str | None

    @property
    def pid(self) -> int:
        return self.process.process.pid


def rrkit_serve(folder: Path, *args: str) -> PeerProcess:
    script = folder / "load.json"
    script.write_text(SCRIPT)
    command = [sys.executable, "-m", "rrkit", "serve", "--quiet", "--port", "{port}", "--script", str(script)]
    return PeerProcess([*command, *args])


@contextmanager
def servers(folder: Path) -> Iterator[list[Server]]:
    """rrkit serve, aimock (when installed) and the bare servers, started, each pinned to the server's CPU."""
    fixtures = folder / "fixtures.json"
    fixtures.write_text(json.dumps({"fixtures": [{"match": {}, "response": {"content": "x" * SIZE}}]}))
    aimock = aimock_command(fixtures)
    with ExitStack() as stack:
        rrkit = stack.enter_context(rrkit_serve(folder))
        found = [Server("rrkit", rrkit, rrkit.base_url + "/responses", rrkit.ws_url)]
        if aimock is not None:
            peer = stack.enter_context(PeerProcess(aimock))
            found.append(Server("aimock", peer, peer.base_url + "/responses", peer.ws_url))
        bare_sse = stack.enter_context(ServerProcess("bare-sse", str(SIZE)))
        found.append(Server("bare sse", bare_sse, bare_sse.base_url + "/responses", None))
        bare_ws = stack.enter_context(ServerProcess("bare-ws", str(SIZE)))
        found.append(Server("bare ws", bare_ws, None, f"ws://127.0.0.1:{bare_ws.port}/"))
        for server in found:
            pin(server.pid)
        until_idle([server.process for server in found])
        yield found


# -- one cell: a client process, the server's RSS sampled meanwhile ----------------------------------------


class Peak:
    """The highest RSS of a process tree, sampled every 50 ms in a thread until `close()`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = tree_rss_mb(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            self.peak = max(self.peak, tree_rss_mb(self.pid))

    def close(self) -> float:
        self._done.set()
        self._thread.join()
        return max(self.peak, tree_rss_mb(self.pid))


@dataclass
class Sample:
    """A cell's figures: responses/s, first-event p50 and p99 (ms), server CPU per response (ms), peak RSS (MB),
    the client's CPU use (% of one CPU) and the failed requests with their kinds."""

    rate: float
    p50: float
    p99: float
    cpu: float
    rss: float
    client: float
    failed: int
    kinds: dict[str, int]


def client(spec: dict[str, Any], pinned: bool = True) -> subprocess.Popen[str]:
    placed = cpus() if pinned else None
    spec = {**spec, "cpu": None if placed is None else placed[1]}
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.load_client", json.dumps(spec)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=child_env(),
    )


def expect(process: subprocess.Popen[str], word: str) -> None:
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if line != word:
        process.kill()
        raise RuntimeError(f"the load client printed {line!r} where it prints {word!r} (exit {process.wait()})")


def alive(server: Server) -> None:
    """A server that died under the load is an error naming it, with the end of its log where it has one."""
    code = server.process.process.poll()
    if code is not None:
        log = getattr(server.process, "_log", None)
        said = ""
        if log is not None:
            log.seek(0)
            said = ": " + log.read()[-800:]
        raise RuntimeError(f"{server.name} exited with {code} under the load{said}")


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def cell(server: Server, transport: str, streams: int, timing: Timing, pool: int = POOL) -> Sample:
    """`streams` concurrent streams at `server` over `transport` for the window, after the warm-up; the streams
    under way then end (one pool of `streams`: cut after 1 s, its CPU figure is not used)."""
    url = server.sse if transport == "sse" else server.ws
    spec: dict[str, Any] = {"mode": "load", "transport": transport, "url": url, "streams": streams, "pid": server.pid}
    spec["pool"] = pool
    spec |= {"drain": 1.0} if pool >= streams > POOL else {}
    until_idle([server.process])
    peak = Peak(server.pid)
    process = client({**spec, "warmup": timing.warmup, "window": timing.window})
    expect(process, "go")
    expect(process, "stop")
    assert process.stdout is not None
    got = json.loads(process.stdout.readline())
    process.wait()
    rss = peak.close()
    alive(server)
    responses = got["events"] / max(got["per_response"], 1)
    firsts = [first * 1000 for first in got["firsts"]]
    return Sample(
        rate=responses / got["at"],
        p50=percentile(firsts, 0.5),
        p99=percentile(firsts, 0.99),
        cpu=got["whole_server_cpu"] / got["whole_responses"] * 1000 if got["whole_responses"] else float("nan"),
        rss=rss,
        client=got["client_cpu"] / got["at"] * 100,
        failed=sum(got["errors"].values()),
        kinds=got["errors"],
    )


# -- the rows ----------------------------------------------------------------------------------------------

MEASURES: tuple[tuple[str, str, str, Target | None], ...] = (
    ("responses/s", "rate", "resp/s", at_least(1.0)),
    ("first event p50", "p50", "ms", None),
    ("first event p99", "p99", "ms", None),
    ("server CPU per response", "cpu", "ms", at_most(1.0)),
    ("server RSS, peak", "rss", "MB", at_most(2.0)),
    ("client CPU (one CPU = 100)", "client", "%", None),
)


def load_rows(transport: str, streams: int, got: dict[str, list[Sample]]) -> list[Row]:
    """The rows of one cell: rrkit beside aimock (or, without aimock, the bare server), the bare figure noted."""
    bare = f"bare {transport}"
    base = "aimock" if "aimock" in got else bare
    named = AIMOCK if base == "aimock" else BARE[transport] + " (aimock NOT INSTALLED)"
    label = f"load {transport.upper()} C={streams}"
    rows = []
    for what, field, unit, target in MEASURES:
        figure = {who: median(getattr(sample, field) for sample in samples) for who, samples in got.items()}
        rows.append(
            Row(
                f"{label}: {what}",
                figure["rrkit"],
                figure[base],
                unit,
                target=target if base == "aimock" else None,
                baseline_name=named,
                note=f"{BARE[transport]}: {figure[bare]:.3g}" if base != bare else "",
            )
        )
    failed = {who: sum(sample.failed for sample in samples) for who, samples in got.items()}
    kinds = ", ".join(f"{kind} {count}" for sample in got["rrkit"] for kind, count in sample.kinds.items())
    rows.append(
        Row(
            f"{label}: failed requests (resets, ...), all rounds",
            failed["rrkit"],
            failed[base],
            "requests",
            target=at_most(0, of="value") if streams == max(STREAMS) else None,
            baseline_name=named,
            note="; ".join(filter(None, [f"rrkit: {kinds}" if kinds else "", f"{BARE[transport]}: {failed[bare]}"])),
        )
    )
    return rows


def one_pool_row(serving: Sequence[Server], timing: Timing) -> Row:
    """C = 256 SSE streams over ONE httpx pool of 256, one round: the slow reader under which a server that
    closes a kept-alive connection too soon resets requests."""
    streams = max(STREAMS)
    slow = replace(timing, warmup=ONE_POOL_WARMUP, window=ONE_POOL_WINDOW)
    runs = {server.name: measured(server, "sse", streams, slow, pool=streams) for server in serving[:2]}
    got = {who: samples[0] for who, samples in interleaved(runs, 1, warmup=0).items()}
    base = "aimock" if "aimock" in got else "bare sse"
    seen = "; ".join(
        f"{who}: {sample.rate:.0f} resp/s, client CPU {sample.client:.0f}%"
        + "".join(f", {kind} {count}" for kind, count in sample.kinds.items())
        for who, sample in got.items()
    )
    return Row(
        f"load SSE C={streams}, one pooled client: failed requests (resets, ...)",
        got["rrkit"].failed,
        got[base].failed,
        "requests",
        target=at_most(0, of="value"),
        baseline_name=AIMOCK if base == "aimock" else BARE["sse"],
        note=seen,
    )


def fresh_row(rss: dict[str, float]) -> Row:
    bare = f"bare SSE {rss['bare sse']:.0f} MB, bare WS {rss['bare ws']:.0f} MB"
    if "aimock" not in rss:
        return Row("load: server RSS fresh (idle after start)", rss["rrkit"], None, "MB", note=bare)
    return Row(
        "load: server RSS fresh (idle after start)",
        rss["rrkit"],
        rss["aimock"],
        "MB",
        target=at_most(2.0),
        baseline_name=AIMOCK,
        note=bare,
    )


def kept(metrics: str) -> str:
    """What `/__rrkit/metrics` says is kept: bytes by store and the WebSocket connections."""
    found = re.findall(r'^rrkit_kept_bytes\{store="(\w+)"\} (\S+)$', metrics, re.MULTILINE)
    stores = ", ".join(f"{store} {float(size) / 1024:,.0f} KiB" for store, size in found)
    connections = re.search(r"^rrkit_connections (\S+)$", metrics, re.MULTILINE)
    return f"kept {stores}; connections {float(connections.group(1)) if connections else 0:.0f}"


def one_ws_rows(folder: Path, count: int) -> list[Row]:
    """One WebSocket connection carrying `count` responses to `rrkit serve` (--keep default, and 0; the two at
    once and unpinned, since the figure is memory, not speed): RSS at 1,000 and at the end, the metrics read with
    it open."""
    keeps: tuple[tuple[str, ...], ...] = ((), ("--keep", "0"))
    with ExitStack() as stack:
        served = [stack.enter_context(started(folder, *keep, pinned=False)) for keep in keeps]
        processes = [
            client(
                {
                    "mode": "one",
                    "url": rrkit.ws_url,
                    "count": count,
                    "every": 1_000,
                    "pid": rrkit.process.pid,
                    "metrics": rrkit.base_url.removesuffix("/v1") + "/__rrkit/metrics",
                },
                pinned=False,
            )
            for rrkit in served
        ]
        results = [json.loads(process.communicate()[0]) for process in processes]
    found = []
    for keep, got in zip(keeps, results, strict=True):
        rss = dict(got["rss"])
        end, warm = rss[count], rss[1_000]
        found.append(
            Row(
                f"one WebSocket connection, {count:,} responses: rrkit serve RSS (--keep {keep[1] if keep else 100})",
                end,
                warm,
                "MB",
                target=at_most(GROWTH_MB, of="added"),
                baseline_name="its RSS at 1,000 responses",
                note=f"start {rss[0]:.0f} MB, growth {end - warm:+.1f} MB (most {max(rss.values()) - warm:+.1f}); "
                f"{kept(got['metrics'])}; {got['responses']:,} responses, failed {sum(got['errors'].values())}",
            )
        )
    return found


def started(folder: Path, *args: str, pinned: bool = True) -> PeerProcess:
    """A fresh `rrkit serve`, pinned to the server's CPU (unless not `pinned`), idle."""
    rrkit = rrkit_serve(folder, *args)
    if pinned:
        pin(rrkit.process.pid)
    until_idle([rrkit])
    return rrkit


def burst_row(folder: Path, timing: Timing) -> Row:
    """A warm rrkit serve's RSS before a C = 256 SSE burst (WARM responses made one at a time: its response store
    and its window of exchanges full, as a server in use has them), at its peak and 5 s after: what the burst
    leaves beyond what the server keeps by design."""
    with started(folder) as rrkit:
        url = rrkit.base_url + "/responses"
        server = Server("rrkit", rrkit, url, None)
        fresh = tree_rss_mb(server.pid)
        with httpx.Client(timeout=60) as client:
            for _ in range(WARM):
                client.post(url, json={"model": "m", "input": "go", "stream": True}).raise_for_status()
        warm = tree_rss_mb(server.pid)
        sample = cell(server, "sse", max(STREAMS), timing)
        time.sleep(5)
        after = tree_rss_mb(server.pid)
    return Row(
        f"rrkit serve RSS 5 s after a C={max(STREAMS)} SSE burst",
        after,
        warm,
        "MB",
        target=at_most(GROWTH_MB, of="added"),
        baseline_name=f"its RSS warm, before the burst ({WARM:,} responses made one at a time)",
        note=f"fresh {fresh:.0f} MB; peak {sample.rss:.0f} MB; {sample.rate:.0f} resp/s in the burst",
    )


def rows(profile: Profile) -> list[Row]:
    timing = timing_of(profile)
    found: list[Row] = []
    with tempfile.TemporaryDirectory() as name, servers(Path(name)) as running:
        found.append(fresh_row({server.name: tree_rss_mb(server.pid) for server in running}))
        for transport in ("sse", "ws"):
            serving = [server for server in running if getattr(server, transport) is not None]
            for server in serving:  # warm (node's JIT, the pools), not kept
                cell(server, transport, 16, replace(timing, warmup=0.2, window=0.2))
            for streams in STREAMS:
                runs = {server.name: measured(server, transport, streams, timing) for server in serving}
                found += load_rows(transport, streams, interleaved(runs, timing.rounds, warmup=0))
            if transport == "sse":
                found.append(one_pool_row(serving, timing))
    with tempfile.TemporaryDirectory() as name:
        found.append(burst_row(Path(name), timing))
        found += one_ws_rows(Path(name), timing.one_ws)
    if cpus() is None:
        for row in found:
            row.note = "; ".join(filter(None, [row.note, "NOT PINNED: one CPU, server and client share it"]))
    return found


def measured(server: Server, transport: str, streams: int, timing: Timing, pool: int = POOL) -> Callable[[], Sample]:
    return lambda: cell(server, transport, streams, timing, pool)


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
