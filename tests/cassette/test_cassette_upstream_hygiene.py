"""Upstreams that misbehave: a redirect is handed to the client as it came and never followed (the key never goes
on to the host it names) unless same-origin 307/308s are asked for, and then never to another origin; an `https`
upstream whose certificate does not verify is a clear 502, never a silent downgrade; an upstream that accepts the
connection and never answers the WebSocket handshake is given up on after the connect timeout (`rrkit record` and
`rrkit serve --upstream` take these settings as options)."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from rrkit.cassette.proxy import RecordingProxy
from rrkit.protocol import OutcomeKind
from rrkit.relay.http import MAX_REDIRECTS

from ..errortrap import Serve
from ..rrkit_process import start
from .rawupstream import Handler, RawUpstream, whole

KEY = "sk-proj-upstream-7c21d4e5b6a8c0d2"
BODY = {"model": "m", "input": "hi", "stream": True}


def test_a_redirect_reaches_the_client_as_sent_and_is_never_followed(serve: Serve) -> None:
    elsewhere = RawUpstream(whole(200, b"{}", "application/json"))
    with elsewhere:
        serve.guard(elsewhere)
        location = elsewhere.http_url + "/responses"
        upstream = RawUpstream(whole(307, b"", "text/plain", location=location))
        with upstream, RecordingProxy(upstream.http_url) as proxy:
            serve.guard(upstream)
            serve.guard(proxy)
            with httpx.Client(timeout=30, trust_env=False, follow_redirects=False) as client:
                answer = client.post(
                    proxy.http_url + "/responses", json=BODY, headers={"authorization": f"Bearer {KEY}"}
                )
    assert answer.status_code == 307 and answer.headers["location"] == location
    assert len(upstream.seen) == 1 and upstream.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert elsewhere.seen == []  # the proxy never went there, with the key or without


def moved_once(final: bytes, status: int = 307) -> Handler:
    """`status` to `?hop=2` on the same upstream the first time, `final` (a JSON answer) there."""
    whole_answer = whole(200, final, "application/json")
    moved = whole(status, b"", "text/plain", location="/v1/responses?hop=2")

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        await (whole_answer if scope["query_string"] == b"hop=2" else moved)(scope, receive, send)

    return handler


RESPONSE = json.dumps({"id": "resp_moved", "object": "response", "status": "completed", "output": []}).encode()


def test_a_same_origin_307_is_followed_with_the_same_body_when_asked(serve: Serve) -> None:
    upstream = RawUpstream(moved_once(RESPONSE))
    with upstream, RecordingProxy(upstream.http_url, redirects="same-origin") as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with httpx.Client(timeout=30, trust_env=False, follow_redirects=False) as client:
            body = {**BODY, "stream": False}
            answer = client.post(proxy.http_url + "/responses", json=body, headers={"authorization": f"Bearer {KEY}"})
        proxy.settle()
        (exchange,) = proxy.exchanges
    assert answer.status_code == 200 and answer.json()["id"] == "resp_moved"
    assert [seen.query for seen in upstream.seen] == ["", "hop=2"]
    assert [json.loads(seen.body) for seen in upstream.seen] == [body, body]
    assert exchange.response_id == "resp_moved"


@pytest.mark.parametrize("status", [302, 303])
def test_a_redirect_that_would_turn_the_post_into_a_get_is_handed_to_the_client_even_when_asked(
    serve: Serve, status: int
) -> None:
    upstream = RawUpstream(moved_once(RESPONSE, status))
    with upstream, RecordingProxy(upstream.http_url, redirects="same-origin") as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with httpx.Client(timeout=30, trust_env=False, follow_redirects=False) as client:
            answer = client.post(proxy.http_url + "/responses", json=BODY)
    assert answer.status_code == status and answer.headers["location"] == "/v1/responses?hop=2"
    assert len(upstream.seen) == 1


def test_a_redirect_to_another_host_is_never_followed_even_when_same_origin_ones_are(serve: Serve) -> None:
    elsewhere = RawUpstream(whole(200, RESPONSE, "application/json"))
    with elsewhere:
        serve.guard(elsewhere)
        location = elsewhere.http_url.replace("127.0.0.1", "localhost") + "/responses"  # another origin, same port
        upstream = RawUpstream(whole(308, b"", "text/plain", location=location))
        with upstream, RecordingProxy(upstream.http_url, redirects="same-origin") as proxy:
            serve.guard(upstream)
            serve.guard(proxy)
            with httpx.Client(timeout=30, trust_env=False, follow_redirects=False) as client:
                answer = client.post(
                    proxy.http_url + "/responses", json=BODY, headers={"authorization": f"Bearer {KEY}"}
                )
    assert answer.status_code == 308 and answer.headers["location"] == location
    assert elsewhere.seen == []


def test_a_redirect_loop_on_the_same_origin_is_handed_to_the_client_after_five_hops(serve: Serve) -> None:
    upstream = RawUpstream(whole(307, b"", "text/plain", location="/v1/responses"))
    with upstream, RecordingProxy(upstream.http_url, redirects="same-origin") as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with httpx.Client(timeout=30, trust_env=False, follow_redirects=False) as client:
            answer = client.post(proxy.http_url + "/responses", json=BODY)
    assert answer.status_code == 307 and len(upstream.seen) == MAX_REDIRECTS + 1


@contextmanager
def tls_listener(folder: Path) -> Iterator[int]:
    """A TLS server on loopback with a certificate nobody trusts (self-signed, made up here by openssl): the port."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl not found: it makes the untrusted certificate")
    key, cert = folder / "key.pem", folder / "cert.pem"
    made_up = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        [openssl, *made_up, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(raw, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def test_an_https_upstream_whose_certificate_does_not_verify_is_a_502_naming_it(serve: Serve, tmp_path: Path) -> None:
    with tls_listener(tmp_path) as port, RecordingProxy(f"https://127.0.0.1:{port}/v1") as proxy:
        serve.guard(proxy)
        with httpx.Client(timeout=30, trust_env=False) as client:
            answer = client.post(proxy.http_url + "/responses", json=BODY)
    assert answer.status_code == 502
    message = answer.json()["error"]["message"]
    assert "CERTIFICATE_VERIFY_FAILED" in message or "certificate" in message.lower(), message


def test_an_upstream_that_never_answers_the_handshake_is_given_up_on_after_the_connect_timeout(
    serve: Serve,
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel does), never answers
    port = listener.getsockname()[1]
    try:
        with RecordingProxy(f"http://127.0.0.1:{port}/v1", connect_timeout=1.0) as proxy:
            serve.guard(proxy)
            with (
                pytest.raises(InvalidStatus) as refused,
                connect(proxy.responses_ws_url, proxy=None, open_timeout=60) as ws,
            ):
                ws.send(json.dumps({"type": "response.create", **BODY}))
                ws.recv(timeout=60)
        assert refused.value.response.status_code == 502
    finally:
        listener.close()


def test_an_upstream_line_that_never_ends_is_cut_at_the_limit_and_recorded_dropped(serve: Serve) -> None:
    async def endless(scope: Scope, receive: Receive, send: Send) -> None:
        start = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        await send({"type": "http.response.body", "body": b"event: response.created\ndata: {", "more_body": True})
        while True:  # one line, 4 KiB at a time, for ever
            await send({"type": "http.response.body", "body": b"x" * 4096, "more_body": True})
            await asyncio.sleep(0)

    upstream = RawUpstream(endless)
    with upstream, RecordingProxy(upstream.http_url, max_message=256 * 1024) as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with (
            httpx.Client(timeout=60, trust_env=False) as client,
            client.stream("POST", proxy.http_url + "/responses", json=BODY) as answer,
        ):
            assert answer.status_code == 200
            with pytest.raises(httpx.RemoteProtocolError):  # the body ends without its final chunk: a cut
                for _ in answer.iter_bytes():
                    pass
        proxy.settle()
        assert upstream.wait_disconnects(1, timeout=60)  # the proxy stopped reading the endless line
        (exchange,) = proxy.exchanges
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.DROPPED


def test_a_whole_answer_over_the_limit_is_a_502_naming_it(serve: Serve) -> None:
    upstream = RawUpstream(whole(200, b'{"pad": "' + b"x" * 600_000 + b'"}', "application/json"))
    with upstream, RecordingProxy(upstream.http_url, max_message=256 * 1024) as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with httpx.Client(timeout=60, trust_env=False) as client:
            answer = client.post(proxy.http_url + "/responses", json={**BODY, "stream": False})
    assert answer.status_code == 502
    assert "more than 262144 bytes (--limit upstream-message)" in answer.json()["error"]["message"]


def test_an_upstream_websocket_frame_over_the_limit_cuts_the_stream(serve: Serve) -> None:
    created = json.dumps({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})
    huge = json.dumps({"type": "response.output_text.delta", "delta": "x" * 600_000})
    upstream = RawUpstream(on_frame=lambda text: [created, huge])
    with upstream, RecordingProxy(upstream.http_url, max_message=256 * 1024) as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with connect(proxy.responses_ws_url, proxy=None, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "response.create", **BODY}))
            seen = []
            with pytest.raises(ConnectionClosed):
                while True:
                    seen.append(json.loads(ws.recv(timeout=60))["type"])
        proxy.settle()
    assert "response.output_text.delta" not in seen  # the frame over the limit never reached the client
    (exchange,) = proxy.exchanges
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.DROPPED


def test_rrkit_record_follows_same_origin_redirects_only_when_told(serve: Serve, tmp_path: Path) -> None:
    upstream = RawUpstream(moved_once(RESPONSE))
    with upstream:
        serve.guard(upstream)
        answers = []
        for told in ([], ["--upstream-redirects", "same-origin"]):
            cassette = tmp_path / f"moved{len(told)}.json"
            args = ["--upstream", upstream.http_url, "--cassette", str(cassette), "--quiet", *told]
            process, base_url = start(*args, command="record")
            try:
                answer = httpx.post(base_url + "/responses", json={**BODY, "stream": False}, timeout=30)
                answers.append(answer.status_code)
            finally:
                process.send_signal(signal.SIGINT)
                process.communicate(timeout=60)
    assert answers == [307, 200]


def test_rrkit_serve_relaying_gives_up_on_a_silent_handshake_after_its_upstream_connect_timeout(
    tmp_path: Path,
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel does), never answers
    upstream_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    args = ["--cassette", str(tmp_path / "c.json"), "--record-mode", "all", "--upstream", upstream_url]
    try:
        process, base_url = start(*args, "--upstream-connect-timeout", "0.5", "--quiet")
        try:
            with (
                pytest.raises(InvalidStatus) as refused,
                connect(base_url.replace("http", "ws", 1) + "/responses", proxy=None, open_timeout=60) as ws,
            ):
                ws.send(json.dumps({"type": "response.create", **BODY}))
                ws.recv(timeout=60)
        finally:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=60)
    finally:
        listener.close()
    assert refused.value.response.status_code == 502
    message = json.loads(refused.value.response.body)["error"]["message"]
    assert "no answer within 0.5 s" in message and "--upstream-connect-timeout" in message, message
