"""Replay cost at cassette size: cassettes of 100, 1,000 and 10,000 distinct exchanges (HTTP SSE, small replies)
replayed in order by an httpx client, beside the same requests answered by a scripted server (one `repeat`
step), measured in the same run, interleaved. Prints per-request wall time, server CPU time per request (the
server's thread, `time.thread_time`), the replay/script ratios (medians of the rounds) and the index build time.

Run: python benchmarks/bench_replay.py [--sizes 100,1000,10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

import httpx

from rrkit.cassette import Cassette, CassetteSource, cassette_from_capture
from rrkit.protocol.incremental import logical_from_wire
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

INSTRUCTIONS = "You are a terse assistant. " * 20  # a request of about 1 kB, like a small real one
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
REPLY = reply(text("Sunny and mild.", chunks=3))


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


def server_cpu(server: FakeServer) -> float:
    """CPU seconds the server's thread (its event loop) has used so far."""
    done, seen = threading.Event(), []

    def read() -> None:
        seen.append(time.thread_time())
        done.set()

    server.call_in_loop(read)
    done.wait()
    return seen[0]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'exchanges':>9}  {'replay ms/req':>13}  {'script ms/req':>13}  {'ratio':>5}  "
        f"{'replay CPU':>10}  {'script CPU':>10}  {'ratio':>5}  {'index build':>11}"
    )
    first: float | None = None
    for size in (int(value) for value in args.sizes.split(",")):
        cassette, requests = cassette_of(size), [request(index) for index in range(size)]
        start = time.perf_counter()
        source = CassetteSource(cassette)
        build = time.perf_counter() - start
        timings: dict[str, list[tuple[float, float]]] = {"replay": [], "script": []}
        with (
            FakeServer(source=source) as replay,
            FakeServer(Script().add(REPLY, repeat=True)) as scripted,
            httpx.Client() as client,
        ):
            servers = {"replay": replay, "script": scripted}
            for server in servers.values():  # warm up: connections, imports, caches
                run(server, client, requests[: min(size, 50)])
            for round_ in range(args.rounds):
                for name in ("replay", "script") if round_ % 2 == 0 else ("script", "replay"):
                    timings[name].append(run(servers[name], client, requests))
        wall = {name: statistics.median(t[0] for t in values) for name, values in timings.items()}
        cpu = {name: statistics.median(t[1] for t in values) for name, values in timings.items()}
        first = first or wall["replay"]
        print(
            f"{size:>9,}  {wall['replay'] * 1000:>13.3f}  {wall['script'] * 1000:>13.3f}  "
            f"{wall['replay'] / wall['script']:>5.2f}  {cpu['replay'] * 1000:>10.3f}  {cpu['script'] * 1000:>10.3f}  "
            f"{cpu['replay'] / cpu['script']:>5.2f}  {build * 1000:>8.1f} ms"
        )
    print("(ms per request: medians of the rounds; CPU is the server thread's; ratio is replay / script)")


if __name__ == "__main__":
    main()
