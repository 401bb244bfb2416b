"""Fake-server streaming speed beside the bare servers: one response of N text deltas (10k and 100k) over SSE,
from rrkit's scripted FakeServer and from a bare uvicorn + Starlette endpoint streaming the same events
pre-encoded, and over WebSocket, from rrkit and from a bare `websockets` server sending the same pre-encoded
frames; and beside the limits: a bare server writing the same bytes in the same runs as rrkit's engine (over
uvicorn for SSE, over `websockets` for WebSocket), and the reading client's own ceiling, its parse of the same
stream held in memory. Each server runs in its own process; the runs are interleaved; events/s (wall) and the
server's CPU time per event (/proc/<pid>/stat, the steadier figure on a shared machine) are medians of the
rounds. Also the cost of starting and stopping a FakeServer in a background thread.

Run: python -m benchmarks.bench_server_stream [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from benchmarks.common import (
    ROOT,
    STREAM_BODY,
    PeerProcess,
    Profile,
    Row,
    ServerProcess,
    StreamRun,
    at_least,
    at_most,
    interleaved,
    median,
    run_main,
    sse_ceiling,
    sse_stream,
    ws_ceiling,
    ws_stream,
)
from benchmarks.servers import runs_of, ws_frames

BENCH = "server_stream"


def repeated(once: Callable[[], StreamRun], repeats: int) -> StreamRun:
    """`repeats` responses in a row as one sample (the CPU clock ticks every 10 ms: more events, finer figure)."""
    runs = [once() for _ in range(repeats)]
    return StreamRun(
        sum(r.events for r in runs),
        sum(r.wall for r in runs),
        min(r.first for r in runs),
        [sum(r.cpu[0] for r in runs)] if runs[0].cpu else [],
    )


def stream_rows(size: int, rounds: int, repeats: int) -> list[Row]:
    """events/s and server CPU per event, rrkit vs bare, SSE and WS, for one response of `size` deltas.
    A sample is `repeats` responses in a row (the CPU clock ticks every 10 ms)."""
    label = f"{size // 1000}k"
    with (
        ServerProcess("script", str(size)) as rrkit,
        ServerProcess("bare-sse", str(size)) as bare_sse,
        ServerProcess("bare-ws", str(size)) as bare_ws,
        ServerProcess("limit-sse", str(size)) as limit_sse,
        ServerProcess("limit-ws", str(size)) as limit_ws,
        httpx.Client(timeout=600) as client,
    ):
        bare_ws_url = f"ws://127.0.0.1:{bare_ws.port}/"
        limit_ws_url = f"ws://127.0.0.1:{limit_ws.port}/"
        with client.stream("POST", rrkit.base_url + "/responses", json=STREAM_BODY) as response:
            sse_body = list(response.iter_raw())  # as the client read it: its chunks, for its own ceiling
        ws_body = b"".join(runs_of(ws_frames(size)))

        def sse(server: ServerProcess) -> StreamRun:
            def once() -> StreamRun:
                return sse_stream(client, server.base_url, [server])

            return repeated(once, repeats)

        def ws(server: ServerProcess, url: str) -> StreamRun:
            def once() -> StreamRun:
                return ws_stream(url, [server])

            return repeated(once, repeats)

        runs = {
            "rrkit sse": lambda: sse(rrkit),
            "bare sse": lambda: sse(bare_sse),
            "limit sse": lambda: sse(limit_sse),
            "ceiling sse": lambda: repeated(lambda: sse_ceiling(sse_body), repeats),
            "rrkit ws": lambda: ws(rrkit, rrkit.ws_url),
            "bare ws": lambda: ws(bare_ws, bare_ws_url),
            "limit ws": lambda: ws(limit_ws, limit_ws_url),
            "ceiling ws": lambda: repeated(lambda: ws_ceiling(ws_body), repeats),
        }
        got = interleaved(runs, rounds, warmup=1 if size <= 20_000 else 0)
    rate = {name: median(r.rate for r in samples) for name, samples in got.items()}
    cpu = {
        name: median(r.cpu[0] / r.events * 1e6 for r in samples)
        for name, samples in got.items()
        if not name.startswith("ceiling")
    }
    rows = []
    for transport in ("sse", "ws"):
        rows += limit_rows(transport, label, rate, cpu)
    for transport, bare in (("sse", "bare uvicorn + Starlette"), ("ws", "bare websockets")):
        rows.append(
            Row(
                f"{transport.upper()} {label} events, server CPU per event",
                cpu[f"rrkit {transport}"],
                cpu[f"bare {transport}"],
                "us",
                target=at_most(1.3),
                baseline_name=bare,
                bench=BENCH,
            )
        )
        rows.append(
            Row(
                f"{transport.upper()} {label} events, events/s",
                rate[f"rrkit {transport}"],
                rate[f"bare {transport}"],
                "ev/s",
                target=at_least(0.8),
                baseline_name=bare,
                bench=BENCH,
            )
        )
    return rows


LIMIT = {
    "sse": "limit: the same bytes in the same runs, uvicorn",
    "ws": "limit: the same frames in the same runs, websockets",
}


def limit_rows(transport: str, label: str, rate: dict[str, float], cpu: dict[str, float]) -> list[Row]:
    """rrkit beside the limits of the same run: a bare server writing the same bytes in rrkit's runs, and the
    reading client's own ceiling (its parse of the stream from memory)."""
    ceiling = "the client parsing the stream from memory, no server"
    compared = (
        ("server CPU per event vs the limit", cpu, "limit", "us", LIMIT[transport]),
        ("events/s vs the limit", rate, "limit", "ev/s", LIMIT[transport]),
        ("events/s vs the client's ceiling", rate, "ceiling", "ev/s", ceiling),
    )
    return [
        Row(
            f"{transport.upper()} {label} events, {what}",
            figures[f"rrkit {transport}"],
            figures[f"{baseline} {transport}"],
            unit,
            baseline_name=named,
            bench=BENCH,
        )
        for what, figures, baseline, unit, named in compared
    ]


AIMOCK_ENV = "RRKIT_AIMOCK"
"""The `@copilotkit/aimock` package folder to measure (default: .ci/node-aimock's, which .ci/run installs)."""
AIMOCK = ROOT / ".ci" / "node-aimock" / "node_modules" / "@copilotkit" / "aimock"


def aimock_cli() -> list[str] | None:
    """node and aimock's command-line program (its `llmock`), or None when node or the package is missing."""
    package = Path(os.environ.get(AIMOCK_ENV) or AIMOCK)
    node = shutil.which("node")
    if node is None or not (package / "dist" / "cli.js").exists():
        return None
    return [node, str(package / "dist" / "cli.js")]


def aimock_command(fixtures: Path) -> list[str] | None:
    """aimock's own documented command (`llmock -h HOST -p PORT -f FIXTURES`), one character a delta (`-c 1`),
    or None when node or the package is missing."""
    cli = aimock_cli()
    return None if cli is None else [*cli, "-h", "127.0.0.1", "-p", "{port}", "-f", str(fixtures), "-c", "1"]


def aimock_rows(size: int, rounds: int, repeats: int) -> list[Row]:
    """rrkit's scripted server beside the fake Responses server a user would otherwise pick, aimock, on the
    same reply (`size` one-character text deltas) over SSE, interleaved."""
    name = f"SSE {size // 1000}k events beside aimock"
    with tempfile.TemporaryDirectory() as folder:
        fixtures = Path(folder) / "fixtures.json"
        fixtures.write_text(json.dumps({"fixtures": [{"match": {}, "response": {"content": "x" * size}}]}))
        command = aimock_command(fixtures)
        if command is None:
            install = "npm install --prefix .ci/node-aimock @copilotkit/aimock"
            skipped = f"aimock NOT INSTALLED: baseline skipped ({install}, or set {AIMOCK_ENV})"
            return [Row(f"{name}, events/s", None, None, "ev/s", baseline_name=skipped, bench=BENCH)]
        with (
            ServerProcess("script", str(size)) as rrkit,
            PeerProcess(command) as aimock,
            httpx.Client(timeout=600) as client,
        ):

            def sample(server: ServerProcess | PeerProcess) -> Callable[[], StreamRun]:
                return lambda: repeated(lambda: sse_stream(client, server.base_url, [server]), repeats)

            got = interleaved({"rrkit": sample(rrkit), "aimock": sample(aimock)}, rounds)
    rate = {who: median(r.rate for r in samples) for who, samples in got.items()}
    first = {who: median(r.first * 1000 for r in samples) for who, samples in got.items()}
    cpu = {who: median(r.cpu[0] / r.events * 1e6 for r in samples) for who, samples in got.items()}
    named = "@copilotkit/aimock, the same reply (its own events: no sequence numbers)"
    return [
        Row(f"{name}, events/s", rate["rrkit"], rate["aimock"], "ev/s", baseline_name=named, bench=BENCH),
        Row(f"{name}, time to first event", first["rrkit"], first["aimock"], "ms", baseline_name=named, bench=BENCH),
        Row(f"{name}, server CPU per event", cpu["rrkit"], cpu["aimock"], "us", baseline_name=named, bench=BENCH),
    ]


def start_stop_ms(count: int) -> float:
    from rrkit.script import Script, reply, text
    from rrkit.server import FakeServer

    script = Script(default=reply(text("hi")))
    start = time.perf_counter()
    for _ in range(count):
        with FakeServer(script):
            pass
    return (time.perf_counter() - start) / count * 1000


def rows(profile: Profile) -> list[Row]:
    got = stream_rows(10_000, profile.rounds, repeats=2 if profile.quick else 3)
    got += stream_rows(100_000, 1 if profile.quick else 3, repeats=1)
    got += aimock_rows(10_000, profile.rounds, repeats=2 if profile.quick else 3)
    starts = 10 if profile.quick else 30
    got.append(
        Row(
            "FakeServer start + stop in a thread",
            start_stop_ms(starts),
            None,
            "ms",
            note=f"mean of {starts}",
            bench=BENCH,
        )
    )
    return got


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
