"""The recording proxy relays and records whatever the upstream answers, as it came, and replay serves it back
the same way: whole bodies (response objects, errors, HTML pages), keep-alive comments, query strings, encoded
request bodies, frames it does not know; a client that leaves cancels its upstream request."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import openai
import pytest
import zstandard
from websockets.sync.client import connect as ws_connect

from rrkit.cassette import Cassette, load_cassette
from rrkit.cassette.proxy import RecordingProxy
from rrkit.cassette.replay import CassetteSource
from rrkit.protocol import OutcomeKind
from rrkit.protocol.events import SSE_COMMENT
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve
from .rawupstream import RawUpstream, silent, sse, whole

SECRET = "sk-proj-7c21d4e5b6a8c0d2e4f63f9a"
BODY = {"model": "gpt-test", "input": "hi", "stream": True}


@contextmanager
def through_proxy(
    serve: Serve, upstream: AbstractContextManager[RawUpstream | FakeServer], url: str | None = None
) -> Iterator[RecordingProxy]:
    """The upstream (a `RawUpstream`, or `serve.running(...)`) and a recording proxy in front of it, both guarded."""
    with upstream as started, RecordingProxy(url or started.http_url) as proxy:
        serve.guard(started)
        serve.guard(proxy)
        yield proxy


@contextmanager
def replaying(serve: Serve, cassette: Cassette) -> Iterator[FakeServer]:
    with serve.running(source=CassetteSource(cassette)) as server:
        yield server


def post(url: str, body: object = BODY, **kwargs: object) -> httpx.Response:
    return httpx.post(url + "/responses", json=body, trust_env=False, timeout=10, **kwargs)  # type: ignore[arg-type]


def test_sdk_non_streaming_create_is_relayed_as_json_recorded_completed_and_replayed(serve: Serve) -> None:
    with through_proxy(serve, serve.running(Script().add(reply(text("Hello there", chunks=3))))) as proxy:
        client = openai.OpenAI(base_url=proxy.http_url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="gpt-test", input="hi").output_text == "Hello there"
        cassette = proxy.cassette()
    (exchange,) = cassette.exchanges
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED
    assert exchange.response_status == 200 and exchange.events == []
    assert exchange.response_body is not None and exchange.response_body.json_value["object"] == "response"

    with replaying(serve, cassette) as replay:
        client = openai.OpenAI(base_url=replay.http_url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="gpt-test", input="hi").output_text == "Hello there"


def test_html_page_answered_with_200_is_relayed_recorded_and_replayed_verbatim(serve: Serve) -> None:
    page = b"<html><body>Sign in to the gateway</body></html>"
    with through_proxy(serve, RawUpstream(whole(200, page, "text/html; charset=utf-8"))) as proxy:
        answer = post(proxy.http_url)
        cassette = proxy.cassette()
    assert (answer.status_code, answer.content) == (200, page)
    assert answer.headers["content-type"].startswith("text/html")
    (exchange,) = cassette.exchanges
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.ANSWERED
    assert exchange.response_body is not None and exchange.response_body.text == page.decode()

    with replaying(serve, cassette) as replay:
        again = post(replay.http_url)
    assert (again.status_code, again.content) == (200, page)
    assert again.headers["content-type"].startswith("text/html")


def test_upstream_error_body_and_retry_after_reach_the_client_exactly_and_replay_so(serve: Serve) -> None:
    error = b'{"error": {"message": "Slow down.", "type": "requests", "code": "rate_limit_exceeded", "extra": 7}}'
    with through_proxy(serve, RawUpstream(whole(429, error, "application/json", retry_after="3"))) as proxy:
        answer = post(proxy.http_url)
        cassette = proxy.cassette()
    assert (answer.status_code, json.loads(answer.content)) == (429, json.loads(error))
    assert answer.headers["retry-after"] == "3"
    (exchange,) = cassette.exchanges
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.REFUSED
    assert (exchange.outcome.status, exchange.outcome.code) == (429, "rate_limit_exceeded")

    with replaying(serve, cassette) as replay:
        again = post(replay.http_url)
    assert (again.status_code, json.loads(again.content), again.headers["retry-after"]) == (429, json.loads(error), "3")


def test_query_string_is_forwarded_and_its_secret_values_are_redacted_in_the_cassette(
    serve: Serve, tmp_path: Path
) -> None:
    upstream = RawUpstream(whole(200, b'{"ok": true}', "application/json"))
    with through_proxy(serve, upstream) as proxy:
        post(proxy.http_url, params={"api-version": "2024-10-21", "api-key": SECRET})
        path = tmp_path / "query.json"
        proxy.save(path)
    assert upstream.seen[0].query == f"api-version=2024-10-21&api-key={SECRET}"
    assert load_cassette(path).exchanges[0].query == "api-version=2024-10-21&api-key=[REDACTED]"
    assert SECRET not in path.read_text()


def test_secrets_in_the_upstream_url_reach_neither_the_client_nor_the_cassette_nor_the_log(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with serve.running() as closed:
        port = closed.http_url.split(":")[-1].split("/")[0]
    # nothing listens there any more: the upstream fails
    url = f"http://user:{SECRET}@127.0.0.1:{port}/v1?api-key={SECRET}"
    caplog.set_level(logging.WARNING)
    with RecordingProxy(url) as proxy:
        serve.guard(proxy)
        answer = post(proxy.http_url)
        path = tmp_path / "failed.json"
        proxy.save(path)
    assert answer.status_code == 502 and "127.0.0.1" in answer.text
    assert SECRET not in answer.text
    assert SECRET not in path.read_text()
    assert SECRET not in caplog.text and "[REDACTED]" in caplog.text
    assert SECRET not in proxy.upstream.shown_url


@pytest.mark.parametrize("encoding", ["zstd", "gzip"])
def test_encoded_request_body_is_forwarded_as_sent_and_decoded_for_the_logical_view(
    serve: Serve, encoding: str
) -> None:
    raw = json.dumps({"model": "gpt-test", "input": "compressed hi"}).encode()
    sent = zstandard.ZstdCompressor().compress(raw) if encoding == "zstd" else gzip.compress(raw)
    answered = b'{"object": "response", "id": "resp_1", "status": "completed"}'
    upstream = RawUpstream(whole(200, answered, "application/json"))
    with through_proxy(serve, upstream) as proxy:
        answer = httpx.post(
            proxy.http_url + "/responses",
            content=sent,
            headers={"content-type": "application/json", "content-encoding": encoding},
            trust_env=False,
        )
        cassette = proxy.cassette()
    assert answer.status_code == 200
    assert upstream.seen[0].body == sent and upstream.seen[0].headers["content-encoding"] == encoding
    (exchange,) = cassette.exchanges
    assert exchange.wire_request == exchange.logical_request == {"model": "gpt-test", "input": "compressed hi"}
    assert exchange.request_headers["content-encoding"] == encoding


def test_fake_server_reads_a_zstd_body_and_names_a_body_that_is_not_what_its_encoding_says(serve: Serve) -> None:
    raw = json.dumps(BODY).encode()
    with serve.running() as server:
        good = httpx.post(
            server.http_url + "/responses",
            content=zstandard.ZstdCompressor().compress(raw),
            headers={"content-encoding": "zstd"},
            trust_env=False,
        )
        bad = httpx.post(server.http_url + "/responses", content=raw, headers={"content-encoding": "zstd"})
    assert good.status_code == 200 and "response.completed" in good.text
    assert bad.status_code == 400 and "not valid zstd" in bad.json()["error"]["message"]


def test_keepalive_comments_are_forwarded_recorded_and_replayed(serve: Serve) -> None:
    created = b'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_k"}}\n\n'
    done = b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_k"}}\n\n'
    with through_proxy(serve, RawUpstream(sse(b": ping\n\n", created, b": ping\n\n", done))) as proxy:
        answer = post(proxy.http_url)
        cassette = proxy.cassette()
    assert answer.text.count(": ping\n\n") == 2
    (exchange,) = cassette.exchanges
    assert [e.type for e in exchange.events] == [SSE_COMMENT, "response.created", SSE_COMMENT, "response.completed"]
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED

    with replaying(serve, cassette) as replay:
        again = post(replay.http_url)
    assert again.text.count(": ping\n\n") == 2 and "response.completed" in again.text


def test_client_that_leaves_mid_stream_cancels_the_upstream_request(serve: Serve) -> None:
    created = b'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_w"}}\n\n'
    upstream = RawUpstream(sse(created, then_wait=True))
    with through_proxy(serve, upstream) as proxy:
        with httpx.stream("POST", proxy.http_url + "/responses", json=BODY, trust_env=False) as answer:
            next(answer.iter_bytes())  # the first event arrived; the upstream now says nothing
        assert upstream.wait_disconnects(1), "the upstream request stayed open after the client left"
        proxy.settle()
        assert proxy.exchanges[0].outcome is not None
        assert proxy.exchanges[0].outcome.kind is OutcomeKind.DISCONNECTED


def test_client_that_gives_up_before_the_upstream_answers_cancels_the_upstream_request(serve: Serve) -> None:
    upstream = RawUpstream(silent)
    with through_proxy(serve, upstream) as proxy:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(proxy.http_url + "/responses", json={"model": "gpt-test", "input": "hi"}, timeout=0.5)
        assert upstream.wait_disconnects(1), "the upstream request stayed open after the client left"
        proxy.settle()


def test_websocket_client_that_leaves_while_the_upstream_is_silent_closes_the_upstream_socket(serve: Serve) -> None:
    upstream = RawUpstream(on_frame=lambda frame: [])  # takes the request, answers nothing
    with through_proxy(serve, upstream) as proxy:
        with ws_connect(proxy.responses_ws_url) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": []}))
            assert upstream_got(upstream, 1)
        assert upstream.wait_disconnects(1), "the upstream socket stayed open after the client left"
        proxy.settle()
        assert proxy.exchanges[0].outcome is not None
        assert proxy.exchanges[0].outcome.kind is OutcomeKind.DISCONNECTED


def upstream_got(upstream: RawUpstream, frames: int, timeout: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while len(upstream.frames) < frames and time.monotonic() < deadline:
        time.sleep(0.01)
    return len(upstream.frames) >= frames


def test_unknown_previous_response_id_is_answered_by_the_upstream_not_by_the_proxy(serve: Serve) -> None:
    with serve.running() as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        answer = post(proxy.http_url, {**BODY, "previous_response_id": "resp_known_upstream_only"})
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "previous_response_not_found"
        assert len(upstream.exchanges) == 1, "the request never reached the upstream"
        with ws_connect(proxy.responses_ws_url) as ws:
            delta = {"type": "response.create", "model": "gpt-test", "input": [], "previous_response_id": "resp_x"}
            ws.send(json.dumps(delta))
            frame = json.loads(ws.recv(timeout=5))
        assert frame["type"] == "error" and frame["error"]["code"] == "previous_response_not_found"
        assert upstream.exchanges[-1].transport == "ws", "the frame never reached the upstream"


def test_unknown_websocket_client_frame_is_forwarded_and_its_answer_relayed_and_recorded(serve: Serve) -> None:
    ack = json.dumps({"type": "response.steer.accepted", "note": "from upstream"})
    upstream = RawUpstream(on_frame=lambda frame: [ack] if "steer" in frame else [])
    steer = json.dumps({"type": "response.steer", "input": [{"role": "user", "content": "shorter"}]})
    with through_proxy(serve, upstream) as proxy:
        with ws_connect(proxy.responses_ws_url) as ws:
            ws.send(steer)
            assert json.loads(ws.recv(timeout=5)) == json.loads(ack)
        proxy.settle()
        cassette = proxy.cassette()
    assert upstream.frames == [steer]
    (exchange,) = cassette.exchanges
    assert exchange.raw_body == steer and [e.type for e in exchange.events] == ["response.steer.accepted"]
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.ANSWERED
