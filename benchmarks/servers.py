"""The servers the benchmarks measure, each run in its own process: `python -m benchmarks.servers KIND ARGS...`.

Each prints its port on its first line and serves until its stdin closes (`common.ServerProcess`), so that its
CPU time is its own (/proc/<pid>/stat). Kinds:

- `script N`: rrkit's FakeServer, one scripted reply of N text deltas to every request (SSE and WebSocket);
- `default`: FakeServer on its built-in default script, what `rrkit serve` answers with no script;
- `replay CASSETTE`: FakeServer replaying a cassette (repeats allowed);
- `record N CASSETTE`: records one SSE and one WebSocket response of N deltas into CASSETTE, then exits;
- `proxy BASE_URL`: FakeServer(source=UpstreamSource(BASE_URL)), the recording proxy in front of BASE_URL;
- `record-proxy BASE_URL`: the same with a cassette deck journaling each exchange as it ends, what `rrkit record`
  runs (the cassette, in a temporary folder, is never saved);
- `bare-sse N`: a bare uvicorn + Starlette endpoint streaming the same events, pre-encoded, as SSE;
- `bare-ws N`: a bare `websockets` server sending the same events, pre-encoded, as text frames;
- `limit-sse N`: the same pre-encoded SSE bytes in the runs rrkit's engine writes (`runs_of`), one body chunk per
  run: the limit of what a server can do for this stream over uvicorn;
- `limit-ws N`: the same events as pre-serialized WebSocket frames, one transport write per run, under a bare
  `websockets` server: the limit over WebSocket;
- `limit-relay BASE_URL`: each client connection piped to one of its own to BASE_URL's upstream, bytes as they come
  (no parsing, nothing kept): the limit of what a proxy adds;
- `bare-app PORT`: uvicorn + Starlette (+ websockets for WS) on PORT answering `POST /v1/responses` with a short
  pre-encoded SSE reply: the baseline of `rrkit serve`'s launch (prints nothing, the caller polls the port).

Imports are made per kind, so that a launch measures only what that server needs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def events_of(size: int) -> list[dict[str, Any]]:
    """The events rrkit's scripted server sends for `reply(text("x" * size, chunks=size))`, built once."""
    from rrkit.protocol import ResponseEvents

    builder = ResponseEvents({"model": "m", "input": "go"})
    builder.start()
    builder.message("x" * size, chunks=size)
    builder.completed()
    return list(builder.events)


def sse_frames(size: int) -> list[bytes]:
    import orjson

    return [
        b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n" for event in events_of(size)
    ]


def runs_of(wires: list[bytes]) -> list[bytes]:
    """The wires joined in the runs rrkit's engine writes for a stream with no pauses (`protocol.plan.events_of`:
    the first run one event, each next at most RUN_EVENTS events or RUN_BYTES)."""
    from rrkit.protocol.plan import RUN_BYTES, RUN_EVENTS

    runs: list[bytes] = []
    run: list[bytes] = []
    size, limit = 0, 1
    for wire in wires:
        run.append(wire)
        size += len(wire)
        if len(run) >= limit or size >= RUN_BYTES:
            runs.append(b"".join(run))
            run, size, limit = [], 0, RUN_EVENTS
    if run:
        runs.append(b"".join(run))
    return runs


def ws_frames(size: int) -> list[bytes]:
    """The events as server-to-client WebSocket text frames, serialized once (unmasked, uncompressed)."""
    import orjson
    from websockets.frames import Frame, Opcode

    return [Frame(Opcode.TEXT, orjson.dumps(event)).serialize(mask=False) for event in events_of(size)]


def _wait_for_stdin() -> None:
    sys.stdin.read()


def _serve_fake(server: Any) -> None:
    with server:
        print(server.http_url.rsplit(":", 1)[1].split("/")[0], flush=True)
        _wait_for_stdin()


def script(size: str) -> None:
    from rrkit.script import Script, reply, text
    from rrkit.server import FakeServer

    n = int(size)
    _serve_fake(FakeServer(Script(default=reply(text("x" * n, chunks=n)))))


def default() -> None:
    from rrkit.server import FakeServer

    _serve_fake(FakeServer())  # the built-in default script, as `rrkit serve` with no script serves it


def replay(cassette: str) -> None:
    from rrkit.cassette import CassetteSource, load_cassette
    from rrkit.server import FakeServer

    _serve_fake(FakeServer(source=CassetteSource(load_cassette(cassette), allow_repeats=True)))


def record(size: str, cassette: str) -> None:
    import httpx
    from websockets.sync.client import connect

    from rrkit.cassette import cassette_from_capture, save_cassette
    from rrkit.protocol import response_create
    from rrkit.script import Script, reply, text
    from rrkit.server import FakeServer

    n = int(size)
    with FakeServer(Script(default=reply(text("x" * n, chunks=n)))) as server:
        body = {"model": "m", "input": "go", "stream": True}
        with httpx.stream("POST", server.http_url + "/responses", json=body, timeout=300) as response:
            response.read()
        with connect(server.responses_ws_url, max_size=None, compression=None) as ws:
            import json

            ws.send(json.dumps(response_create({"model": "m", "input": "go"})))
            while '"response.completed"' not in ws.recv()[:200]:
                pass
        server.settle()
        save_cassette(cassette_from_capture(server.exchanges, server.connections), cassette)
    print(0, flush=True)


def record_proxy(base_url: str) -> None:
    import tempfile
    from pathlib import Path

    from rrkit.cassette.modes import CassetteDeck
    from rrkit.relay import UpstreamSource
    from rrkit.server import FakeServer

    with tempfile.TemporaryDirectory() as folder:
        cassette = Path(folder) / "recorded.json"
        deck = CassetteDeck.open(cassette, "rewrite", upstream=UpstreamSource(base_url), source_name="proxy")
        server = FakeServer(source=deck.source())
        deck.journal_to(server.state.capture)  # as `rrkit record` does: each exchange journaled as it ends
        _serve_fake(server)


def proxy(base_url: str) -> None:
    from rrkit.relay import UpstreamSource
    from rrkit.server import FakeServer

    _serve_fake(FakeServer(source=UpstreamSource(base_url)))


def _uvicorn_serve(app: Any, port: int = 0, announce: bool = True, ws: str = "none") -> None:
    import asyncio
    import socket

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", ws=ws))

    async def main() -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        if announce:
            print(sock.getsockname()[1], flush=True)
        stop = asyncio.get_running_loop().run_in_executor(None, _wait_for_stdin)
        stop.add_done_callback(lambda _: setattr(server, "should_exit", True))
        await server.serve(sockets=[sock])

    asyncio.run(main())


def _sse_app(frames: list[bytes]) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def responses(request: Any) -> Any:
        await request.body()

        async def stream() -> Any:
            for frame in frames:
                yield frame

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])


def bare_sse(size: str) -> None:
    _uvicorn_serve(_sse_app(sse_frames(int(size))))


def bare_ws(size: str) -> None:
    import asyncio

    import orjson
    from websockets.asyncio.server import serve

    frames = [orjson.dumps(event).decode() for event in events_of(int(size))]

    async def handler(ws: Any) -> None:
        async for _message in ws:
            for frame in frames:
                await ws.send(frame)

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
            print(next(iter(server.sockets)).getsockname()[1], flush=True)
            await asyncio.get_running_loop().run_in_executor(None, _wait_for_stdin)

    asyncio.run(main())


def limit_sse(size: str) -> None:
    _uvicorn_serve(_sse_app(runs_of(sse_frames(int(size)))))


def limit_ws(size: str) -> None:
    import asyncio

    from websockets.asyncio.server import serve

    runs = runs_of(ws_frames(int(size)))

    async def handler(ws: Any) -> None:
        async for _message in ws:
            transport = ws.transport
            for run in runs:
                transport.write(run)
                await ws.drain()  # the write's flow control, as any server's send

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
            print(next(iter(server.sockets)).getsockname()[1], flush=True)
            await asyncio.get_running_loop().run_in_executor(None, _wait_for_stdin)

    asyncio.run(main())


def limit_relay(base_url: str) -> None:
    """Each client connection piped to a connection of its own to the upstream of `base_url`, bytes as they come
    either way (asyncio protocols, no parsing, nothing kept): the limit of what a proxy adds to a stream."""
    import asyncio
    from urllib.parse import urlsplit

    upstream = urlsplit(base_url)
    host, port = upstream.hostname or "127.0.0.1", upstream.port or 80
    connecting: set[asyncio.Task[Any]] = set()

    class Pipe(asyncio.Protocol):
        def __init__(self, peer: Pipe | None = None) -> None:
            self.peer = peer
            self.transport: asyncio.Transport | None = None
            self.held = bytearray()

        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            if self.peer is None:  # the client's side: open the upstream's
                peer = self.peer = Pipe(self)
                task = loop.create_task(loop.create_connection(lambda: peer, host, port))
                connecting.add(task)
                task.add_done_callback(connecting.discard)
            elif self.held:
                transport.write(bytes(self.held))

        def data_received(self, data: bytes) -> None:
            assert self.peer is not None
            if self.peer.transport is None:
                self.peer.held += data
            else:
                self.peer.transport.write(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self.peer is not None and self.peer.transport is not None:
                self.peer.transport.close()

    async def main() -> None:
        server = await loop.create_server(Pipe, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await loop.run_in_executor(None, _wait_for_stdin)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())


def bare_app(port: str) -> None:
    import orjson

    frames = [b"data: " + orjson.dumps({"type": "response.completed", "sequence_number": 0}) + b"\n\n"]
    _uvicorn_serve(_sse_app(frames), int(port), announce=False, ws="websockets-sansio")  # as rrkit's server


KINDS: dict[str, Callable[..., None]] = {
    "script": script,
    "default": default,
    "replay": replay,
    "record": record,
    "proxy": proxy,
    "record-proxy": record_proxy,
    "bare-sse": bare_sse,
    "bare-ws": bare_ws,
    "limit-sse": limit_sse,
    "limit-ws": limit_ws,
    "limit-relay": limit_relay,
    "bare-app": bare_app,
}

if __name__ == "__main__":
    KINDS[sys.argv[1]](*sys.argv[2:])
