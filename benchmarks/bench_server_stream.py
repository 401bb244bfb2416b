"""Fake-server streaming speed: one response of N small events over WebSocket and over SSE, and the cost of
starting and stopping a server. Prints events per second and milliseconds per start+stop.

Run: python benchmarks/bench_server_stream.py [--events 10000] [--starts 50]
"""

from __future__ import annotations

import argparse
import json
import time

import httpx
from websockets.sync.client import connect

from rrkit.protocol import SSEDecoder, response_create
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer


def over_websocket(server: FakeServer) -> int:
    with connect(server.responses_ws_url, max_size=None, compression=None) as ws:
        ws.send(json.dumps(response_create({"model": "m", "input": "go"})))
        count = 0
        while True:
            count += 1
            if json.loads(ws.recv())["type"] == "response.completed":
                return count


def over_sse(server: FakeServer) -> int:
    decoder, count = SSEDecoder(), 0
    with httpx.stream("POST", server.http_url + "/responses", json={"model": "m", "input": "go", "stream": True}) as r:
        for chunk in r.iter_raw():
            count += len(decoder.feed(chunk))
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=50)
    args = parser.parse_args()
    script = Script(default=reply(text("x" * args.events, chunks=args.events)))
    with FakeServer(script) as server:
        for name, run in (("websocket", over_websocket), ("sse", over_sse)):
            run(server)  # warm up
            start = time.perf_counter()
            count = run(server)
            elapsed = time.perf_counter() - start
            print(f"{name:>9}: {count} events in {elapsed:.3f} s = {count / elapsed:,.0f} events/s")
    start = time.perf_counter()
    for _ in range(args.starts):
        with FakeServer(script):
            pass
    per_start = (time.perf_counter() - start) / args.starts
    print(f"start + stop in a background thread: {per_start * 1000:.1f} ms (mean of {args.starts})")


if __name__ == "__main__":
    main()
