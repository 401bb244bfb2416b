"""Servers run in the background (`with FakeServer(...)`) share one event loop thread: each starts and stops on its
own (listening once its start returns, serving once the loop gets to it), a stopped one lets go of its connections,
a failed start is the caller's error, and uvicorn's log output goes to the stderr in place when each server starts."""

from __future__ import annotations

import asyncio
import http.client
import io
import logging
import socket
import sys
import threading
from typing import Any

import httpx
import pytest

from rrkit.protocol import OutcomeKind
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer, uvicorn_adapter

from .faultclient import BODY, WAIT, Serve, finished, post_sse, wait_until, ws_connect, ws_request


def said(events: list[dict[str, Any]]) -> str:
    return "".join(event.get("delta", "") for event in events if event["type"] == "response.output_text.delta")


def server_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "rrkit-server"]


def test_background_servers_start_and_stop_without_a_thread_of_their_own(serve: Serve) -> None:
    with serve.running():
        pass
    assert len(server_threads()) == 1
    with serve.running() as first, serve.running() as second:
        assert post_sse(first).status == post_sse(second).status == 200
        assert len(server_threads()) == 1


def test_stopping_one_background_server_leaves_another_streaming(serve: Serve) -> None:
    streaming = serve(Script(default=reply(text("abcdefgh", chunks=4)).delayed(each=0.05)))
    results = []
    thread = threading.Thread(target=lambda: results.append(post_sse(streaming)))
    thread.start()
    wait_until(lambda: streaming.exchanges, what="the stream to begin")
    with serve.running() as other:
        assert post_sse(other).status == 200
    thread.join(WAIT)
    assert results and results[0].types[-1] == "response.completed"
    outcome = finished(streaming).outcome
    assert outcome is not None and outcome.kind is OutcomeKind.COMPLETED


def test_an_idle_keep_alive_connection_is_closed_with_its_server_and_reaches_no_later_one(serve: Serve) -> None:
    with serve.running() as first:
        host, port = first.http_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        kept = http.client.HTTPConnection(host, int(port), timeout=WAIT)
        kept.request("GET", "/__rrkit/health")
        assert kept.getresponse().read()  # answered in full; the connection stays open, idle
    with serve.running() as later:
        assert kept.sock is not None
        assert kept.sock.recv(1) == b"", "the stopped server's idle connection is still open"
        assert later.exchanges == [] and later.connections == []
    kept.close()


def test_a_port_in_use_fails_the_start_in_the_callers_thread_and_later_servers_still_start(serve: Serve) -> None:
    taken = serve()
    port = int(taken.http_url.removesuffix("/v1").rsplit(":", 1)[1])
    with pytest.raises(OSError):
        FakeServer(port=port).start_in_thread()
    with serve.running() as later:
        assert post_sse(later).status == 200


def test_a_background_server_listens_when_its_start_returns_and_a_start_that_failed_is_raised_by_its_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def failing_start(server: Any, sock: Any) -> None:
        raise RuntimeError("the loop could not begin serving")

    monkeypatch.setattr(uvicorn_adapter, "start", failing_start)
    server = FakeServer().start_in_thread()
    address = server.http_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
    with socket.create_connection((address[0], int(address[1])), timeout=WAIT):
        pass  # the kernel took the connection: the socket listened before the loop served
    with pytest.raises(RuntimeError, match="could not begin serving"):
        server.stop_in_thread()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address[0], int(address[1])), timeout=WAIT)


def test_starting_a_background_server_from_the_servers_loop_is_refused_not_a_deadlock(serve: Serve) -> None:
    running = serve()
    assert running._loop is not None

    async def start_from_the_loop() -> None:
        FakeServer().start_in_thread()

    with pytest.raises(RuntimeError, match="await start"):
        asyncio.run_coroutine_threadsafe(start_from_the_loop(), running._loop).result(WAIT)
    assert httpx.post(running.http_url + "/responses", json=BODY, trust_env=False).status_code == 200


def test_uvicorn_logs_go_to_the_stderr_in_place_when_each_server_starts(
    serve: Serve, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uvicorn_log = logging.getLogger("uvicorn.error")
    with serve.running():
        uvicorn_log.warning("to capsys")
    assert "to capsys" in capsys.readouterr().err
    swapped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", swapped)
    with serve.running():
        uvicorn_log.warning("to the swapped stderr")
    assert "to the swapped stderr" in swapped.getvalue()


def test_servers_running_at_once_answer_from_their_own_scripts_and_keep_their_own_exchanges(serve: Serve) -> None:
    first = serve(Script(default=reply(text("from the first"))))
    second = serve(Script(default=reply(text("from the second"))))
    assert said(post_sse(second).events) == "from the second"
    with ws_connect(first) as websocket:
        assert said(ws_request(websocket).events) == "from the first"
    assert said(post_sse(first).events) == "from the first"
    for server, count in ((first, 2), (second, 1)):
        admin = httpx.get(server.admin_url + "/health").json()
        assert admin["exchanges"] == len(server.settle(WAIT).exchanges) == count
