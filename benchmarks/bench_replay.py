"""Replay cost at cassette size: cassettes of 100, 1,000 and 10,000 distinct exchanges (HTTP SSE, small replies)
replayed in order by an httpx client, beside the same requests answered by a scripted server (one `repeat`
step), measured in the same run, interleaved. Prints per-request wall time, server CPU time per request (the
server's thread, its CPU clock), the replay/script ratios (medians of the rounds) and the index build time.

Also one response of 10k deltas replayed from a cassette beside the same response scripted, over SSE and WS, each
server in its own process: the server's CPU time per event (/proc/<pid>/stat) and events/s.

Run: python -m benchmarks.bench_replay [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    Profile,
    Row,
    ServerProcess,
    at_most,
    interleaved,
    median,
    run_main,
    sse_stream,
    ws_stream,
)
from rrkit.cassette import Cassette, CassetteSource, cassette_from_capture
from rrkit.protocol.incremental import logical_from_wire
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

INSTRUCTIONS = "You are a terse assistant. " * 20  # a request of about 1 kB, like a small real one
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
REPLY = reply(text("Sunny and mild.", chunks=3))
BENCH = "replay"


def request(index: int) -> dict[str, Any]:
    question = {"role": "user", "content": [{"type": "input_text", "text": f"Question number {index}?"}]}
    return {"model": "gpt-test", "instructions": INSTRUCTIONS, "tools": TOOLS, "input": [question], "stream": True}


def cassette_of(size: int) -> Cassette:
    """One exchange recorded for real, then copied with `size` distinct requests."""
    with FakeServer(Script().add(REPLY, repeat=True)) as server:
        httpx.post(server.http_url + "/responses", json=request(0)).raise_for_status()
        server.settle()
        recorded = cassette_from_capture(server.exchanges, server.connections)
    template = recorded.exchanges[0]
    exchanges = []
    for index in range(size):
        body = request(index)
        update = {"id": index, "wire_request": body, "logical_request": logical_from_wire(body)}
        exchanges.append(template.model_copy(update=update))
    return recorded.model_copy(update={"exchanges": exchanges})


def start_watched(stack: contextlib.ExitStack, server: FakeServer) -> FakeServer:
    """Start `server` in the background and remember the thread of its event loop, whose CPU clock `server_cpu`
    reads (background servers may share that thread: the interleaved runs never overlap)."""
    stack.enter_context(server)
    (thread,) = [thread for thread in threading.enumerate() if thread.name == "rrkit-server"]
    assert thread.ident is not None
    _THREADS[id(server)] = time.pthread_getcpuclockid(thread.ident)
    return server


_THREADS: dict[int, int] = {}


def server_cpu(server: FakeServer) -> float:
    """CPU seconds the server's thread (its event loop) has used so far."""
    return time.clock_gettime(_THREADS[id(server)])


def run(server: FakeServer, client: httpx.Client, requests: list[dict[str, Any]]) -> tuple[float, float]:
    """(wall seconds, server CPU seconds) per request for the requests in order."""
    server.reset()
    cpu, start = server_cpu(server), time.perf_counter()
    for body in requests:
        response = client.post(server.http_url + "/responses", json=body)
        if response.status_code != 200 or "response.completed" not in response.text:
            raise SystemExit(f"unexpected answer: {response.status_code} {response.text[:500]}")
    wall = time.perf_counter() - start
    return wall / len(requests), (server_cpu(server) - cpu) / len(requests)


def exchange_rows(size: int, rounds: int) -> list[Row]:
    """Per-request wall and server-thread CPU, replaying `size` distinct exchanges in order vs a script."""
    cassette, requests = cassette_of(size), [request(index) for index in range(size)]
    start = time.perf_counter()
    source = CassetteSource(cassette)
    build = time.perf_counter() - start
    with contextlib.ExitStack() as stack:
        replay = start_watched(stack, FakeServer(source=source))
        scripted = start_watched(stack, FakeServer(Script().add(REPLY, repeat=True)))
        client = stack.enter_context(httpx.Client())
        for server in (replay, scripted):  # warm up: connections, imports, caches
            run(server, client, requests[: min(size, 50)])
        timings = interleaved(
            {"replay": lambda: run(replay, client, requests), "script": lambda: run(scripted, client, requests)},
            rounds,
            warmup=0,
        )
    wall = {name: median(t[0] * 1000 for t in values) for name, values in timings.items()}
    cpu = {name: median(t[1] * 1000 for t in values) for name, values in timings.items()}
    name = f"replay of {size:,} exchanges in order"
    return [
        Row(f"{name}, ms per request", wall["replay"], wall["script"], "ms", baseline_name="scripted", bench=BENCH),
        Row(
            f"{name}, server CPU per request",
            cpu["replay"],
            cpu["script"],
            "ms",
            baseline_name="scripted",
            note=f"index built in {build * 1000:.0f} ms",
            bench=BENCH,
        ),
    ]


def stream_rows(size: int, rounds: int) -> list[Row]:
    """One response of `size` deltas replayed from a cassette (`rrkit serve --cassette`'s source) vs scripted,
    SSE and WS, each server in its own process: server CPU per event and events/s."""
    with tempfile.TemporaryDirectory() as tmp:
        cassette = Path(tmp) / "stream.json"
        recorder = ServerProcess("record", str(size), str(cassette))
        recorder.stop()
        with (
            ServerProcess("replay", str(cassette)) as replayed,
            ServerProcess("script", str(size)) as scripted,
            httpx.Client(timeout=600) as client,
        ):
            runs = {
                "replay sse": lambda: sse_stream(client, replayed.base_url, [replayed]),
                "script sse": lambda: sse_stream(client, scripted.base_url, [scripted]),
                "replay ws": lambda: ws_stream(replayed.ws_url, [replayed]),
                "script ws": lambda: ws_stream(scripted.ws_url, [scripted]),
            }
            got = interleaved(runs, rounds)
    cpu = {name: median(r.cpu[0] / r.events * 1e6 for r in samples) for name, samples in got.items()}
    rate = {name: median(r.rate for r in samples) for name, samples in got.items()}
    out = []
    for transport in ("sse", "ws"):
        name = f"replay (cassette), {transport.upper()} {size // 1000}k events"
        replayed_, scripted_ = f"replay {transport}", f"script {transport}"
        out += [
            Row(
                f"{name}, server CPU per event",
                cpu[replayed_],
                cpu[scripted_],
                "us",
                target=at_most(1.2),
                baseline_name="scripted",
                bench=BENCH,
            ),
            Row(f"{name}, events/s", rate[replayed_], rate[scripted_], "ev/s", baseline_name="scripted", bench=BENCH),
        ]
    return out


def rows(profile: Profile) -> list[Row]:
    got = stream_rows(10_000, profile.rounds + (0 if profile.quick else 2))
    for size in (200,) if profile.quick else (100, 1000):
        got += exchange_rows(size, profile.rounds)
    return got


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
