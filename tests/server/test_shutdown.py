"""Stopping is prompt and quiet: `rrkit serve` / `rrkit record` on SIGINT or SIGTERM, and `FakeServer`'s stop, end
stalled, open and idle connections at once with no traceback; a server error is reported as one, not as a client
that left or a stream still running.

"At once" is proved by structure, not by a stopwatch: what is stopped would last far longer than the stop may take
(streams stall forever or pause `HOLD` seconds between events, clients wait `HOLD` seconds, and `FakeServer`'s grace
for running answers is raised to `HOLD` too), so a stop that waited on any of them would outlast `CEILING`, a
safety net far above what an idle machine needs (0.1-0.2 s: `python -m benchmarks --only stop`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from rrkit.protocol import OutcomeKind
from rrkit.protocol.plan import ResponsePlan
from rrkit.script import Script, reply, text
from rrkit.script.select import ScriptState
from rrkit.server import FakeServer, runner
from rrkit.server.respond import ResponseStore

from ..rrkit_process import start
from .faultclient import BODY, Serve, finished, post_sse, ws_connect, ws_request

STALL = Path(__file__).parents[2] / "toolkit" / "rrkit" / "fixtures" / "stall.yaml"
HOLD = 600.0  # seconds what is stopped would otherwise last: a pause between events, a client's read timeout
CEILING = 30.0  # seconds a stop may take, from the signal to the process's exit: far below HOLD
QUIET = ("Traceback", "Exception in ASGI", "CancelledError", "ERROR")

OPEN_SCRIPT = """\
name: open
responses:
  - repeat: true
    output:
      - text: "A stream that stays open a long while."
        chunks: 6
    fault: {delay_first: 0.1, delay_each: 600}
"""


STALLED_AFTER = 3  # events before the stall of `stall.yaml` and `stalled_script()`


def stalled_script() -> Script:
    return Script(default=reply(text("abcdef", chunks=3)).stall_after(STALLED_AFTER))


def open_script() -> Script:
    return Script(default=reply(text("abcdef", chunks=3)).delayed(first=0.05, each=HOLD))


# -- the command line ------------------------------------------------------------------------------


def hold_sse(base_url: str, started: threading.Event, events: int) -> None:
    """A client waiting on a stream (it reads until the server ends it); `started` is set once it has the first
    `events` events, after which the server stalls or pauses."""
    try:
        with (
            httpx.Client(timeout=HOLD, trust_env=False) as client,
            client.stream("POST", base_url + "/responses", json=BODY) as response,
        ):
            lines = response.iter_lines()
            for _ in range(events):
                while not next(lines).startswith("data:"):
                    pass
            started.set()
            for _ in lines:
                pass
    except httpx.HTTPError:
        pass
    finally:
        started.set()


def hold_ws(base_url: str, started: threading.Event, events: int, *, request: bool = True) -> None:
    try:
        with connect(base_url.replace("http://", "ws://") + "/responses", open_timeout=CEILING) as websocket:
            if request:
                websocket.send(
                    json.dumps({"type": "response.create", **{k: v for k, v in BODY.items() if k != "stream"}})
                )
                for _ in range(events):
                    websocket.recv(timeout=HOLD)
            started.set()
            while True:
                websocket.recv(timeout=HOLD)
    except Exception:
        pass
    finally:
        started.set()


def hold_idle_http(base_url: str, started: threading.Event, release: threading.Event) -> None:
    """A keep-alive connection after a completed request, idle."""
    with httpx.Client(timeout=10, trust_env=False) as client:
        client.post(base_url + "/responses", json={**BODY, "stream": False})
        started.set()
        release.wait(10)


def stop_with(process: subprocess.Popen[str], sig: signal.Signals, *, twice: bool = False) -> tuple[float, str, str]:
    begun = time.monotonic()
    process.send_signal(sig)
    if twice:
        time.sleep(0.02)
        if process.poll() is None:
            process.send_signal(sig)
    try:
        out, err = process.communicate(timeout=CEILING)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(
            f"the server did not stop within {CEILING:g} s after {sig.name}: it waits on what it should end; "
            f"stderr:\n{err}"
        ) from None
    return time.monotonic() - begun, out, err


def assert_stopped_quietly(elapsed: float, code: int | None, err: str) -> None:
    assert code == 0, f"exit {code} {elapsed:.2f} s after the signal; stderr:\n{err}"
    for word in QUIET:
        assert word not in err, err


@contextmanager
def clients(base_url: str, kind: str, events: int = 0) -> Iterator[None]:
    """A client of `kind` holding a connection: a stream it has the first `events` events of (then the server
    stalls or pauses), or an idle socket."""
    started, release = threading.Event(), threading.Event()
    target: Callable[[], None] = {
        "sse": lambda: hold_sse(base_url, started, events),
        "ws": lambda: hold_ws(base_url, started, events),
        "idle-ws": lambda: hold_ws(base_url, started, 0, request=False),
        "idle-http": lambda: hold_idle_http(base_url, started, release),
    }[kind]
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    assert started.wait(CEILING), "the client never got going"
    try:
        yield
    finally:
        release.set()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("transport", ["sse", "ws"])
def test_a_stop_signal_ends_a_stalled_stream_at_once_and_exits_0_quietly(transport: str, sig: signal.Signals) -> None:
    process, base_url = start("--script", str(STALL))
    with clients(base_url, transport, STALLED_AFTER):
        elapsed, out, err = stop_with(process, sig)
    assert_stopped_quietly(elapsed, process.returncode, err)
    assert "rrkit: stopped" in out


@pytest.mark.parametrize("kind", ["sse", "ws", "idle-http", "idle-ws"])
def test_a_stop_signal_ends_open_and_idle_connections_at_once(tmp_path: Path, kind: str) -> None:
    script = tmp_path / "open.yaml"
    script.write_text(OPEN_SCRIPT)
    process, base_url = start(*(("--script", str(script)) if kind in ("sse", "ws") else ()))
    with clients(base_url, kind):
        elapsed, _, err = stop_with(process, signal.SIGTERM)
    assert_stopped_quietly(elapsed, process.returncode, err)


@pytest.mark.parametrize("transport", ["sse", "ws"])
def test_a_second_ctrl_c_right_after_the_first_prints_no_traceback(transport: str) -> None:
    process, base_url = start("--script", str(STALL))
    with clients(base_url, transport, STALLED_AFTER):
        elapsed, _, err = stop_with(process, signal.SIGINT, twice=True)
    assert_stopped_quietly(elapsed, process.returncode, err)


def test_rrkit_record_stops_at_once_on_sigterm_with_a_stalled_upstream_and_writes_the_cassette(
    serve: Serve, tmp_path: Path
) -> None:
    upstream = serve(stalled_script())
    cassette = tmp_path / "session.json"
    process, base_url = start("--upstream", upstream.http_url, "--cassette", str(cassette), command="record")
    with clients(base_url, "sse", STALLED_AFTER):
        elapsed, out, err = stop_with(process, signal.SIGTERM)
    assert_stopped_quietly(elapsed, process.returncode, err)
    assert cassette.exists(), out
    recorded = json.loads(cassette.read_text())
    assert len(recorded["exchanges"]) == 1


# -- FakeServer's stop (the Python API and the pytest fixtures) ---------------------------------------


@pytest.fixture
def long_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """FakeServer's grace for running answers (0.5 s, then their connections are cut) raised to `HOLD`: a stop that
    returns within `CEILING` ended the stalls, pauses and idle connections itself instead of outwaiting them."""
    monkeypatch.setattr(runner, "_GRACE", HOLD)


def stop_within_ceiling(server: FakeServer) -> None:
    begun = time.monotonic()
    server.stop_in_thread()
    elapsed = time.monotonic() - begun
    assert elapsed < CEILING, f"stop took {elapsed:.2f} s: it waited on what it should end"


@pytest.mark.parametrize("kind", ["sse", "ws", "idle-http", "idle-ws", "bare-tcp"])
@pytest.mark.parametrize("make", [stalled_script, open_script], ids=["stalled", "open"])
@pytest.mark.usefixtures("long_grace")
def test_leaving_a_fake_server_block_is_prompt_with_streams_stalled_open_or_idle(
    serve: Serve, make: Callable[[], Script], kind: str
) -> None:
    with serve.running(make() if kind in ("sse", "ws") else None) as server:
        base_url = server.http_url
        if kind == "bare-tcp":
            bare = socket.create_connection(server._socket.getsockname()[:2] if server._socket else ("", 0))
            bare.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
            context: Any = contextlib_closing(bare)
        else:
            context = clients(base_url, kind, STALLED_AFTER if make is stalled_script else 0)
        with context:
            stop_within_ceiling(server)
    assert all(exchange.outcome is not None for exchange in server.exchanges)
    if kind in ("sse", "ws") and make is stalled_script:
        assert server.exchanges[0].outcome is not None
        assert server.exchanges[0].outcome.kind is OutcomeKind.STALLED


@contextmanager
def contextlib_closing(sock: socket.socket) -> Iterator[None]:
    try:
        yield
    finally:
        sock.close()


@pytest.mark.usefixtures("long_grace")
def test_a_server_with_only_idle_keep_alive_connections_stops_at_once(serve: Serve) -> None:
    with serve.running() as server, httpx.Client(trust_env=False) as client:
        for _ in range(3):
            client.post(server.http_url + "/responses", json={**BODY, "stream": False})
        host, port = server._socket.getsockname()[:2] if server._socket else ("", 0)
        with socket.create_connection((host, port), timeout=CEILING) as idle:
            idle.sendall(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n")
            with idle.makefile("rb") as answer:  # read the whole answer: the connection is idle after it
                assert answer.readline().startswith(b"HTTP/1.1 ")
                length = 0
                while (line := answer.readline()) not in (b"\r\n", b""):
                    name, _, value = line.partition(b":")
                    length = int(value) if name.strip().lower() == b"content-length" else length
                answer.read(length)
            stop_within_ceiling(server)
            assert idle.recv(65536) == b"", "the idle keep-alive connection was closed by the stop, not left open"


@pytest.mark.usefixtures("long_grace")
async def test_an_async_server_stops_at_once_with_a_stalled_stream(serve: Serve) -> None:
    async with serve.running(stalled_script()) as server:
        started = threading.Event()
        thread = threading.Thread(target=hold_sse, args=(server.http_url, started, STALLED_AFTER), daemon=True)
        thread.start()
        await asyncio.wait_for(asyncio.to_thread(started.wait), CEILING)  # the server is on this loop: never block it
        begun = time.monotonic()
    assert time.monotonic() - begun < CEILING
    assert server.exchanges[0].outcome is not None
    assert server.exchanges[0].outcome.kind is OutcomeKind.STALLED


# -- a server error is reported as one ---------------------------------------------------------------


class BrokenSelect(ScriptState):
    """A reply source whose `select` raises: a bug in a source."""

    async def select(self, view: Any) -> ResponsePlan:
        raise ValueError("the source broke")


class BrokenStream(ScriptState):
    """A reply source whose plan's events raise after two events."""

    async def select(self, view: Any) -> Any:
        plan = await super().select(view)
        assert isinstance(plan, ResponsePlan)
        events = plan.events

        async def breaking() -> AsyncGenerator[Any, None]:
            count = 0
            async for run in events:
                for planned in run:
                    if count == 2:
                        raise RuntimeError("the stream broke")
                    count += 1
                    yield [planned]

        return dataclasses.replace(plan, events=breaking())


def test_a_source_that_raises_is_answered_500_and_recorded_as_a_server_error_over_http(serve: Serve) -> None:
    serve.allow_errors("ValueError: the source broke")
    server = serve(source=BrokenSelect(Script(default=reply("hi"))))
    result = post_sse(server)
    assert result.status == 500
    assert result.json["error"]["type"] == "server_error"
    assert "ValueError: the source broke" in result.json["error"]["message"]
    server.settle(1.0)  # an outcome is recorded: nothing still streaming
    outcome = finished(server).outcome
    assert outcome is not None
    assert (outcome.kind, outcome.status, outcome.code) == (OutcomeKind.REFUSED, 500, "server_error")
    assert "ValueError: the source broke" in (outcome.message or "")
    assert len(serve.trap.records) == 1, "the traceback is logged once"
    assert post_sse(server).status == 500  # and the server goes on answering


def test_a_source_that_raises_gets_an_error_frame_over_websocket_and_the_socket_stays_usable(serve: Serve) -> None:
    serve.allow_errors("ValueError: the source broke")
    server = serve(source=BrokenSelect(Script(default=reply("hi"))))
    with ws_connect(server) as websocket:
        first = ws_request(websocket)
        second = ws_request(websocket)
    for answer in (first, second):
        assert answer.events[0]["type"] == "error"
        assert answer.events[0]["status"] == 500
    server.settle(1.0)
    outcome = finished(server, 0).outcome
    assert outcome is not None and (outcome.kind, outcome.code) == (OutcomeKind.REFUSED, "server_error")


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_stream_that_raises_midway_is_cut_and_recorded_as_dropped_by_a_server_error(
    serve: Serve, transport: str
) -> None:
    serve.allow_errors("RuntimeError: the stream broke")
    server = serve(source=BrokenStream(Script(default=reply(text("abcdef", chunks=3)))))
    if transport == "http":
        result = post_sse(server)
        assert len(result.events) == 2 and result.error is not None
    else:
        with ws_connect(server) as websocket:
            answer = ws_request(websocket)
        assert len(answer.events) == 2
        assert answer.close_code == 1011
    server.settle(1.0)
    outcome = finished(server).outcome
    assert outcome is not None
    assert (outcome.kind, outcome.events_sent, outcome.code) == (OutcomeKind.DROPPED, 2, "server_error")
    assert "RuntimeError: the stream broke" in (outcome.message or "")


class BrokenStore(ResponseStore):
    """A response store that fails on lookup: a bug inside the handler, past every expected error."""

    def get(self, key: str, default: Any = None) -> Any:
        raise LookupError("the handler broke")


def test_an_error_escaping_the_handler_is_recorded_on_its_exchange_not_as_a_disconnect(serve: Serve) -> None:
    serve.allow_errors("the handler broke")
    server = serve()
    server.state.http_store = BrokenStore()
    response = httpx.post(
        server.http_url + "/responses", json={**BODY, "previous_response_id": "resp_x"}, trust_env=False
    )
    assert response.status_code == 500
    server.settle(1.0)
    outcome = finished(server).outcome
    assert outcome is not None
    assert (outcome.kind, outcome.status, outcome.code) == (OutcomeKind.REFUSED, 500, "server_error")
    assert "LookupError: the handler broke" in (outcome.message or "")


def test_fake_server_keeps_every_exchange_by_default() -> None:
    assert FakeServer().state.capture.keep is None
