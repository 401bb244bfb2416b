"""The recording proxy: real clients in front, a fake server as upstream, the cassette in between.

Everything runs on 127.0.0.1: the upstream is a `FakeServer`, the proxy a `RecordingProxy` forwarding to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from click.testing import CliRunner
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from rrkit.cassette import Cassette, cassette_from_capture, load_cassette
from rrkit.cassette.modes import FallbackSource
from rrkit.cassette.proxy import RecordingProxy
from rrkit.cassette.replay import CassetteSource
from rrkit.cli import main as cli
from rrkit.protocol import OutcomeKind
from rrkit.protocol.sse import SSEDecoder, iter_events
from rrkit.script import Script, accept_upgrade, function_call, refuse_upgrade, reject, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

TERMINAL = ("response.completed", "response.failed", "response.incomplete", "error")
CONTEXT = [{"role": "user", "content": "You are in a proxy test."}]
SECRET = "sk-secret-3f9a7c21d4e5b6a8c0d2e4f6"


@contextmanager
def proxied(serve: Serve, script: Script) -> Iterator[tuple[FakeServer, RecordingProxy]]:
    """An upstream fake server playing `script`, and a recording proxy in front of it, both guarded by `serve`:
    neither may log an error, stopping included."""
    with serve.running(script) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        yield upstream, proxy


def sdk(proxy: RecordingProxy, api_key: str = "sk-test") -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.http_url, api_key=api_key, max_retries=0)


def until_terminal(events: Iterator[Any]) -> list[dict[str, Any]]:
    """SDK events as the JSON they arrived as, up to and including the terminal one."""
    seen = []
    for event in events:
        seen.append(event.to_dict())
        if event.type in TERMINAL:
            break
    return seen


def sent_by(exchange: Any) -> list[dict[str, Any]]:
    return [sent.event for sent in exchange.events]


def sse_events(proxy: RecordingProxy, body: dict[str, Any], on_event: Callable[[dict[str, Any]], None]) -> None:
    """POST through the proxy with a plain HTTP client, calling `on_event` as each event arrives."""
    decoder = SSEDecoder()
    with (
        httpx.Client(trust_env=False, timeout=10) as client,
        client.stream("POST", proxy.http_url + "/responses", json=body) as response,
    ):
        assert response.status_code == 200
        for chunk in response.iter_raw():
            for event in iter_events(decoder.feed(chunk)):
                on_event(event)


def ws_frames(socket: ClientConnection) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = json.loads(socket.recv(timeout=10))
        frames.append(frame)
        if frame["type"] in TERMINAL:
            return frames


def sdk_ws(server: FakeServer) -> Any:
    return openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0).responses.connect()


def proxy_ws(proxy: RecordingProxy, **headers: str) -> ClientConnection:
    return ws_connect(proxy.responses_ws_url, additional_headers=headers, proxy=None, open_timeout=10)


# ---------------------------------------------------------------------------------------------
# Real clients through the proxy see what the upstream sent; the cassette keeps wire and logical requests


def test_sdk_over_sse_sees_upstream_events_and_cassette_keeps_wire_and_logical_request(serve: Serve) -> None:
    script = Script().add(reply(text("Hello through the proxy.", chunks=3), function_call("lookup", {"q": 1})))
    with proxied(serve, script) as (upstream, proxy):
        events = until_terminal(iter(sdk(proxy).responses.create(model="gpt-test", input=CONTEXT, stream=True)))
        cassette = proxy.cassette("sse")
        upstream.settle()

    (sent,) = upstream.exchanges
    assert events == sent_by(sent)
    assert events[-1]["type"] == "response.completed"
    assert cassette.source == "proxy"
    (recorded,) = cassette.exchanges
    assert recorded.transport == "http"
    assert recorded.wire_request == sent.wire_request
    assert recorded.logical_request == sent.logical_request
    assert [e.event for e in recorded.events] == events
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.COMPLETED


def test_sdk_over_websocket_warmup_then_incremental_request_records_the_rebuilt_logical_requests(serve: Serve) -> None:
    with proxied(serve, Script().add(reply(text("Hello over WebSocket.", chunks=2)))) as (upstream, proxy):
        with sdk(proxy).responses.connect() as connection:
            connection.response.create(model="gpt-test", input=CONTEXT, generate=False)
            warmup = until_terminal(iter(connection))
            question = {"role": "user", "content": "Say hello."}
            connection.response.create(
                model="gpt-test", input=[question], previous_response_id=warmup[-1]["response"]["id"]
            )
            answer = until_terminal(iter(connection))
        cassette = proxy.cassette("ws")
        upstream.settle()

    sent_warmup, sent_answer = upstream.exchanges
    assert [warmup, answer] == [sent_by(sent_warmup), sent_by(sent_answer)]
    assert [e["type"] for e in warmup] == ["response.created", "response.completed"]
    # The upstream socket completed the warmup itself, so the delta went upstream as the client sent it.
    assert sent_answer.incremental and sent_answer.wire_request == cassette.exchanges[1].wire_request
    assert [e.logical_request for e in cassette.exchanges] == [e.logical_request for e in upstream.exchanges]
    assert cassette.exchanges[1].logical_request is not None
    assert cassette.exchanges[1].logical_request["input"] == [*CONTEXT, question]
    assert [e.connection for e in cassette.exchanges] == [0, 0]
    assert cassette.connections[0].handshake.status == 101


def test_websocket_delta_on_a_response_upstream_never_saw_is_sent_as_the_full_logical_request(serve: Serve) -> None:
    """A warmup replayed from a cassette, then a new request recorded through the upstream (new_episodes)."""
    with serve.running() as earlier:
        with sdk_ws(earlier) as connection:
            connection.response.create(model="gpt-test", input=CONTEXT, generate=False)
            until_terminal(iter(connection))
        earlier.settle()
        recorded = cassette_from_capture(earlier.exchanges, earlier.connections)

    with proxied(serve, Script().add(reply(text("Fresh from upstream.")))) as (upstream, proxy):
        proxy.use(FallbackSource(CassetteSource(recorded), proxy.upstream))
        with sdk_ws(proxy) as connection:
            connection.response.create(model="gpt-test", input=CONTEXT, generate=False)
            warmup = until_terminal(iter(connection))
            question = {"role": "user", "content": "Something new."}
            connection.response.create(
                model="gpt-test", input=[question], previous_response_id=warmup[-1]["response"]["id"]
            )
            answer = until_terminal(iter(connection))
        proxy.settle()
        upstream.settle()

    assert answer[-1]["type"] == "response.completed"
    (sent,) = upstream.exchanges
    assert not sent.incremental, "the upstream never saw the warmup: it must get the whole request"
    assert sent.logical_request == proxy.exchanges[1].logical_request
    assert sent.logical_request is not None and sent.logical_request["input"] == [*CONTEXT, question]


def test_http_turn_state_and_upstream_response_headers_pass_both_ways(serve: Serve) -> None:
    upstream_reply = reply("ok", headers={"x-ratelimit-remaining-requests": "99"}).with_turn_state("ts-http")
    with proxied(serve, Script(default=upstream_reply)) as (upstream, proxy):
        with httpx.Client(trust_env=False, timeout=10) as client:
            response = client.post(
                proxy.http_url + "/responses",
                json={"model": "gpt-test", "input": "hi", "stream": True},
                headers={"x-codex-turn-state": "ts-sent-back", "session-id": "s-1"},
            )
        upstream.settle()

    sent = upstream.exchanges[0]
    assert sent.request_headers["x-codex-turn-state"] == "ts-sent-back" and sent.request_headers["session-id"] == "s-1"
    assert response.headers["x-codex-turn-state"] == "ts-http"
    assert response.headers["x-request-id"] == sent.response_headers["x-request-id"]
    assert response.headers["x-ratelimit-remaining-requests"] == "99"
    assert response.headers["content-type"].startswith("text/event-stream")


# ---------------------------------------------------------------------------------------------
# No buffering: each event reaches the client when the upstream sends it


def test_first_sse_event_reaches_the_client_before_the_upstream_finished_the_stream(serve: Serve) -> None:
    upstream_progress: list[tuple[int, bool]] = []
    with proxied(serve, Script().add(reply(text("a b c", chunks=3)).delayed(each=0.1))) as (upstream, proxy):

        def on_event(event: dict[str, Any]) -> None:
            if not upstream_progress:
                running = upstream.exchanges[0]
                upstream_progress.append((len(running.events), running.outcome is None))

        sse_events(proxy, {"model": "gpt-test", "input": "hi", "stream": True}, on_event)
        upstream.settle()
        total = len(upstream.exchanges[0].events)

    sent_when_client_got_first, still_running = upstream_progress[0]
    assert still_running and sent_when_client_got_first < total


def test_first_websocket_event_reaches_the_client_before_the_upstream_finished_the_stream(serve: Serve) -> None:
    with proxied(serve, Script().add(reply(text("a b c", chunks=3)).delayed(each=0.1))) as (upstream, proxy):
        with proxy_ws(proxy) as socket:
            socket.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi"}))
            first = json.loads(socket.recv(timeout=10))
            running = upstream.exchanges[0]
            sent_then, still_running = len(running.events), running.outcome is None
            rest = ws_frames(socket)
        upstream.settle()

    assert first["type"] == "response.created" and rest[-1]["type"] == "response.completed"
    assert still_running and sent_then < 1 + len(rest)


# ---------------------------------------------------------------------------------------------
# Faults pass through


def test_upstream_429_with_retry_after_reaches_the_sdk_client_and_is_recorded_as_refused(serve: Serve) -> None:
    script = Script().add(reject(429, "rate_limit_exceeded", "Slow down.", retry_after=7))
    with proxied(serve, script) as (_upstream, proxy):
        with pytest.raises(openai.RateLimitError) as raised:
            sdk(proxy).responses.create(model="gpt-test", input="hi", stream=True)
        cassette = proxy.cassette()

    assert raised.value.status_code == 429
    assert raised.value.response.headers["retry-after"] == "7"
    assert raised.value.code == "rate_limit_exceeded"
    (recorded,) = cassette.exchanges
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.REFUSED
    assert recorded.outcome.status == 429 and recorded.response_headers["retry-after"] == "7"


def test_http_mid_stream_drop_reaches_the_client_as_an_incomplete_body(serve: Serve) -> None:
    seen: list[dict[str, Any]] = []
    with proxied(serve, Script().add(reply(text("never finished", chunks=4)).drop_after(3))) as (_upstream, proxy):
        with pytest.raises(httpx.HTTPError):
            sse_events(proxy, {"model": "gpt-test", "input": "hi", "stream": True}, seen.append)
        cassette = proxy.cassette()

    assert [e["type"] for e in seen] == ["response.created", "response.in_progress", "response.output_item.added"]
    (recorded,) = cassette.exchanges
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.DROPPED
    assert recorded.outcome.events_sent == 3


@pytest.mark.parametrize(("close", "expected_code"), [("frame", 1011), ("tcp", 1006)])
def test_websocket_mid_stream_drop_reaches_the_client_with_the_same_close(
    serve: Serve, close: str, expected_code: int
) -> None:
    script = Script().add(reply(text("never finished", chunks=4)).drop_after(2, close=close, code=1011))
    with proxied(serve, script) as (_upstream, proxy):
        with proxy_ws(proxy) as socket:
            socket.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi"}))
            got = [json.loads(socket.recv(timeout=10)) for _ in range(2)]
            with pytest.raises(ConnectionClosed) as closed:
                socket.recv(timeout=10)
        cassette = proxy.cassette()

    assert [e["type"] for e in got] == ["response.created", "response.in_progress"]
    received = closed.value.rcvd
    assert (received.code if received is not None else 1006) == expected_code
    (recorded,) = cassette.exchanges
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.DROPPED


def test_websocket_426_upgrade_refusal_reaches_the_client_with_its_body(serve: Serve) -> None:
    with proxied(serve, Script().add_handshake(refuse_upgrade(426))) as (_upstream, proxy):
        with pytest.raises(InvalidStatus) as refused:
            proxy_ws(proxy)
        cassette = proxy.cassette()

    response = refused.value.response
    assert response.status_code == 426
    assert json.loads(response.body)["error"]["code"] == "upgrade_required"
    assert cassette.connections[0].handshake.status == 426


def test_websocket_upgrade_turn_state_from_upstream_reaches_the_client(serve: Serve) -> None:
    with proxied(serve, Script().add_handshake(accept_upgrade(turn_state="ts-42"))) as (_upstream, proxy):
        with proxy_ws(proxy) as socket:
            assert socket.response is not None
            assert socket.response.headers["x-codex-turn-state"] == "ts-42"
        cassette = proxy.cassette()
    assert cassette.connections[0].handshake.response_headers["x-codex-turn-state"] == "ts-42"


def test_websocket_error_frame_with_status_reaches_the_client_and_the_socket_stays_usable(serve: Serve) -> None:
    script = Script().queue(reject(429, "rate_limit_exceeded", "Slow down.", retry_after=2), reply("After the error."))
    with proxied(serve, script) as (_upstream, proxy):
        with proxy_ws(proxy) as socket:
            socket.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi"}))
            error = json.loads(socket.recv(timeout=10))
            socket.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "again"}))
            after = ws_frames(socket)
        cassette = proxy.cassette()

    assert error["type"] == "error" and error["status"] == 429
    assert error["error"]["code"] == "rate_limit_exceeded" and error["error"]["message"] == "Slow down."
    assert error["headers"] == {"retry-after": "2"}
    assert after[-1]["type"] == "response.completed"
    refused, completed = cassette.exchanges
    assert refused.outcome is not None and refused.outcome.kind is OutcomeKind.REFUSED
    assert completed.outcome is not None and completed.outcome.kind is OutcomeKind.COMPLETED


def test_unreachable_upstream_is_a_502_for_the_client(serve: Serve) -> None:
    with serve.running() as gone:
        dead_url = gone.http_url
    with RecordingProxy(dead_url, connect_timeout=2) as proxy:
        with pytest.raises(openai.InternalServerError) as raised:
            sdk(proxy).responses.create(model="gpt-test", input="hi", stream=True)
        with pytest.raises(InvalidStatus) as refused:
            proxy_ws(proxy)
    assert raised.value.status_code == 502
    assert refused.value.response.status_code == 502


# ---------------------------------------------------------------------------------------------
# Secrets and the command line


def test_bearer_secret_through_the_proxy_leaves_no_trace_in_the_cassette_file(serve: Serve, tmp_path: Path) -> None:
    with proxied(serve, Script(default=reply("ok"))) as (upstream, proxy):
        client = sdk(proxy, api_key=SECRET)
        until_terminal(iter(client.responses.create(model="gpt-test", input="hi", stream=True)))
        with client.responses.connect() as connection:
            connection.response.create(model="gpt-test", input="hi")
            until_terminal(iter(connection))
        proxy.save(tmp_path / "secret.json")
        upstream.settle()

    assert upstream.exchanges[0].request_headers["authorization"] == f"Bearer {SECRET}"  # it was forwarded
    assert upstream.connections[0].handshake_headers["authorization"] == f"Bearer {SECRET}"
    written = (tmp_path / "secret.json").read_text()
    assert SECRET not in written and SECRET[3:] not in written
    assert "[REDACTED]" in written
    assert [path.name for path in tmp_path.iterdir()] == ["secret.json"]


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_record_command_forwards_until_stopped_then_writes_the_cassette(
    serve: Serve, tmp_path: Path, stop_signal: signal.Signals
) -> None:
    target = tmp_path / "recorded.json"
    with serve.running(Script().add(reply(text("Recorded by the CLI.")))) as upstream:
        command = [sys.executable, "-m", "rrkit", "record", "--upstream", upstream.http_url]
        command += ["--cassette", str(target), "--port", "0", "--redact-header", "x-my-token"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert process.stdout is not None
            lines = []
            while not any("HTTP base URL:" in line for line in lines):
                line = process.stdout.readline()
                assert line, f"rrkit record exited early: {process.stderr.read() if process.stderr else ''}"
                lines.append(line)
            base_url = next(line for line in lines if "HTTP base URL:" in line).split()[-1]
            assert base_url.startswith("http://127.0.0.1:")
            client = openai.OpenAI(
                base_url=base_url, api_key="sk-test", max_retries=0, default_headers={"x-my-token": "tok-123456789"}
            )
            events = until_terminal(iter(client.responses.create(model="gpt-test", input="hi", stream=True)))
            process.send_signal(stop_signal)
            out, err = process.communicate(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()

    assert process.returncode == 0, err
    assert "(1 exchange recorded)" in out
    cassette: Cassette = load_cassette(target)
    assert cassette.source == "proxy" and cassette.name == "recorded"
    (recorded,) = cassette.exchanges
    assert [e.event for e in recorded.events] == events
    assert recorded.logical_request == upstream.exchanges[0].logical_request
    assert recorded.request_headers["x-my-token"] == "[REDACTED]"
    assert "tok-123456789" not in target.read_text()


@pytest.mark.parametrize("url", ["ftp://example.invalid/v1", "not a url", "http://"])
def test_record_command_rejects_a_bad_upstream_url(tmp_path: Path, url: str) -> None:
    result = CliRunner().invoke(cli, ["record", "--upstream", url, "--cassette", str(tmp_path / "c.json")])
    assert result.exit_code != 0
    assert "invalid upstream URL" in result.output
    assert not (tmp_path / "c.json").exists()


def test_proxy_is_usable_on_the_current_event_loop(serve: Serve) -> None:
    """`async with RecordingProxy(...)` serves on the test's own loop and writes with `cassette_async`."""

    async def scenario(upstream_url: str) -> Cassette:
        async with RecordingProxy(upstream_url) as proxy:
            async with httpx.AsyncClient(trust_env=False) as client:
                response = await client.post(
                    proxy.http_url + "/responses", json={"model": "gpt-test", "input": "hi", "stream": True}
                )
                assert response.status_code == 200
            return await proxy.cassette_async("async")

    with serve.running(Script().add(reply("async"))) as upstream:
        cassette = asyncio.run(scenario(upstream.http_url))
    (recorded,) = cassette.exchanges
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.COMPLETED
