"""Time to first event: how long a client waits for the first SSE event of a response of N events, from rrkit
(scripted, and replaying a cassette of the same response) beside a bare uvicorn + Starlette endpoint that
streams the same events pre-encoded. Each server runs in its own process; rounds are interleaved and the
medians are printed with the ratio to the bare server.

Run: python benchmarks/bench_first_event.py [--sizes 1000,10000,100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

_SERVER = r"""
import sys
from pathlib import Path

from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

size, mode, cassette = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
script = Script(default=reply(text("x" * size, chunks=size)))
if mode == "record":
    from rrkit.cassette import cassette_from_capture, save_cassette
    import httpx
    with FakeServer(script) as server:
        body = {"model": "m", "input": "go", "stream": True}
        with httpx.stream("POST", server.http_url + "/responses", json=body, timeout=120) as response:
            response.read()
        server.settle()
        save_cassette(cassette_from_capture(server.exchanges, server.connections), cassette)
    sys.exit(0)
if mode == "replay":
    from rrkit.cassette import CassetteSource, load_cassette
    from rrkit.cassette.match import MatchConfig
    source = CassetteSource(load_cassette(cassette), MatchConfig(), allow_repeats=True)
    server = FakeServer(source=source)
else:
    server = FakeServer(script)
with server:
    print(server.http_url.rsplit(':', 1)[1].split('/')[0], flush=True)
    sys.stdin.read()
"""

_BARE = r"""
import asyncio
import socket
import sys

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

size = int(sys.argv[1])
events = [
    b"event: response.output_text.delta\ndata: "
    + orjson.dumps({"type": "response.output_text.delta", "sequence_number": i, "delta": "x"})
    + b"\n\n"
    for i in range(size)
]


async def responses(request):
    await request.body()

    async def stream():
        for frame in events:
            yield frame

    return StreamingResponse(stream(), media_type="text/event-stream")


app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
config = uvicorn.Config(app, log_level="warning", lifespan="off")
server = uvicorn.Server(config)


async def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    stop = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    stop.add_done_callback(lambda _: setattr(server, "should_exit", True))
    await server.serve(sockets=[sock])


asyncio.run(main())
"""


def _start(code: str, *args: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def first_event_ms(client: httpx.Client, port: int) -> float:
    """Milliseconds from sending the request to having the first whole SSE event (the rest is read and
    dropped, so that the next round starts on an idle server)."""
    body = {"model": "m", "input": "go", "stream": True}
    start = time.perf_counter()
    with client.stream("POST", f"http://127.0.0.1:{port}/v1/responses", json=body) as response:
        buffered = b""
        first = None
        for chunk in response.iter_raw():
            if first is None:
                buffered += chunk
                if b"\n\n" in buffered:
                    first = (time.perf_counter() - start) * 1000
        assert first is not None
    return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'events':>8} {'bare ms':>9} {'script ms':>10} {'ratio':>6} {'replay ms':>10} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp, httpx.Client(timeout=300) as client:
        for size in (int(n) for n in args.sizes.split(",")):
            cassette = Path(tmp) / f"{size}.json"
            subprocess.run([sys.executable, "-c", _SERVER, str(size), "record", str(cassette)], check=True)
            servers = {
                "bare": _start(_BARE, str(size)),
                "script": _start(_SERVER, str(size), "script", str(cassette)),
                "replay": _start(_SERVER, str(size), "replay", str(cassette)),
            }
            try:
                times: dict[str, list[float]] = {name: [] for name in servers}
                for _, port in servers.values():
                    first_event_ms(client, port)  # warm up
                for _ in range(args.rounds):
                    for name, (_, port) in servers.items():
                        times[name].append(first_event_ms(client, port))
            finally:
                for process, _ in servers.values():
                    assert process.stdin is not None
                    process.stdin.close()
                    process.wait(timeout=30)
            bare, script, replay = (statistics.median(times[name]) for name in ("bare", "script", "replay"))
            print(f"{size:>8} {bare:>9.2f} {script:>10.2f} {script / bare:>6.2f} {replay:>10.2f} {replay / bare:>6.2f}")
    print(f"medians of {args.rounds} interleaved rounds per size; each server in its own process")


if __name__ == "__main__":
    main()
