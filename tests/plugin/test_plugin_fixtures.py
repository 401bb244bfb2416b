"""rrkit_server fixtures as a user meets them: SSE and WebSocket, teardown checks, async and shared forms."""

from __future__ import annotations

import pytest

HEADER = """
import json
import httpx
import pytest
from websockets.sync.client import connect
from rrkit.script import Match, reply, text, failed

def post(server, question="hi"):
    return httpx.post(server.http_url + "/responses", json={"model": "m", "input": question, "stream": True})
"""


def test_rrkit_server_answers_sse_and_websocket_from_the_test_script(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
def test_sse(rrkit_server):
    rrkit_server.add(reply(text("Hi there", chunks=2)))
    response = post(rrkit_server)
    assert response.status_code == 200 and '"delta":"Hi t"' in response.text
    rrkit_server.settle()
    assert rrkit_server.exchanges[0].outcome.kind == "completed"

def test_websocket(rrkit_server):
    rrkit_server.add(reply("over the socket"))
    with connect(rrkit_server.responses_ws_url) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        types = []
        while not types or types[-1] != "response.completed":
            types.append(json.loads(ws.recv(timeout=5))["type"])
    assert types[0] == "response.created"
    assert rrkit_server.exchanges[0].transport == "ws"
"""
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_unused_scripted_reply_fails_the_test_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
def test_forgets_a_reply(rrkit_server):
    rrkit_server.queue(reply("one"), reply("two"))
    post(rrkit_server)
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_forgets_a_reply: 1 scripted reply was never requested: step 1 (used 0 of 1)*assert_all_used=False*"]
    )


def test_unused_reply_passes_when_the_check_is_relaxed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.rrkit(assert_all_used=False)
def test_marker(rrkit_server):
    rrkit_server.queue(reply("one"), reply("two"))
    post(rrkit_server)

def test_method(rrkit_server):
    rrkit_server.queue(reply("one"), reply("two"))
    rrkit_server.allow_unused()
    post(rrkit_server)
"""
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_unmatched_request_fails_with_the_closest_match_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
def test_asks_the_wrong_model(rrkit_server):
    rrkit_server.add(reply("hello"), when=Match(model="gpt-5"))
    rrkit_server.allow_unused()
    assert post(rrkit_server).status_code == 400
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_asks_the_wrong_model: exchange 0 (http) was answered by nothing; add a reply for it*",
            "*failed: model == 'gpt-5'*",
        ]
    )


def test_unmatched_request_passes_when_the_check_is_relaxed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.rrkit(assert_all_matched=False)
def test_expects_the_error(rrkit_server):
    assert post(rrkit_server).json()["error"]["type"] == "rrkit_no_match"
"""
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_shared_server_is_reset_between_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
urls = []

@pytest.mark.parametrize("n", range(3))
def test_shared(rrkit_shared_server, n):
    urls.append(rrkit_shared_server.http_url)
    rrkit_shared_server.add(reply(f"answer {n}"))
    assert f"answer {n}" in post(rrkit_shared_server).text
    rrkit_shared_server.settle()
    assert len(rrkit_shared_server.exchanges) == 1
    assert len(set(urls)) == 1
"""
    )
    pytester.runpytest().assert_outcomes(passed=3)


def test_each_rrkit_server_is_fresh_nothing_of_the_previous_test_reaches_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
import http.client

kept = {}

def test_first(rrkit_server):
    rrkit_server.add(reply("stored"))
    answer = httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": "hi"})
    kept["response"] = answer.json()["id"]
    host, port = rrkit_server.http_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
    kept["connection"] = connection = http.client.HTTPConnection(host, int(port), timeout=5)
    connection.request("GET", "/__rrkit/health")
    assert connection.getresponse().read()  # a keep-alive connection, idle at the test's end

def test_second(rrkit_server):
    assert kept["connection"].sock.recv(1) == b"", "the previous test's connection outlived its server"
    rrkit_server.add(reply("fresh"))
    rrkit_server.allow_unused()
    body = {"model": "m", "input": "hi", "previous_response_id": kept["response"]}
    answer = httpx.post(rrkit_server.http_url + "/responses", json=body)
    assert answer.json()["error"]["code"] == "previous_response_not_found"
    rrkit_server.settle()
    assert [exchange.id for exchange in rrkit_server.exchanges] == [0]
"""
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_rrkit_config_is_a_frozen_config_a_conftest_replaces_or_extends_as_a_mapping(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
import dataclasses
import pytest

@pytest.fixture
def rrkit_config(rrkit_config):
    return dataclasses.replace(rrkit_config, assert_all_used=False, redact_headers="x-team-key")
"""
    )
    pytester.makepyfile(
        HEADER
        + """
import dataclasses
from rrkit.pytest_plugin import RRKitConfig

def test_replaced(rrkit_config, rrkit_server):
    assert isinstance(rrkit_config, RRKitConfig) and rrkit_config.redact_headers == ("x-team-key",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rrkit_config.time_scale = 1.0
    rrkit_server.queue(reply("one"), reply("never requested"))  # assert_all_used=False from the conftest
    post(rrkit_server)

def test_extended_as_a_mapping():
    assert RRKitConfig.of({**RRKitConfig(), "record_mode": "once"}) == RRKitConfig(record_mode="once")
"""
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_async_server_runs_on_the_test_event_loop(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.asyncio
async def test_async(rrkit_async_server):
    rrkit_async_server.add(reply("async hello"))
    async with httpx.AsyncClient(base_url=rrkit_async_server.http_url) as client:
        response = await client.post("/responses", json={"model": "m", "input": "hi"})
    assert "async hello" in response.text
"""
    )
    pytester.runpytest("-p", "asyncio", "-o", "asyncio_mode=strict").assert_outcomes(passed=1)


def test_async_server_settle_and_recording_are_awaited_while_a_stream_still_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
import asyncio

@pytest.mark.asyncio
async def test_async(rrkit_async_server):
    rrkit_async_server.add(reply(text("slowly", chunks=4)).delayed(each=0.1))
    async with httpx.AsyncClient(base_url=rrkit_async_server.http_url) as client:
        body = {"model": "m", "input": "hi", "stream": True}
        streaming = asyncio.create_task(client.post("/responses", json=body))
        while not rrkit_async_server.exchanges:
            await asyncio.sleep(0.01)
        with pytest.raises(TimeoutError, match="still streaming"):
            await rrkit_async_server.settle(timeout=0.05)
        with pytest.raises(TimeoutError, match="still streaming"):
            await rrkit_async_server.recording(timeout=0.05)
        cassette = await rrkit_async_server.recording()  # the server streams on this very loop meanwhile
        assert (await streaming).status_code == 200
    (exchange,) = cassette.exchanges
    assert exchange.outcome.kind.value == "completed" and len(exchange.events) > 4
"""
    )
    pytester.runpytest("-p", "asyncio", "-o", "asyncio_mode=strict").assert_outcomes(passed=1)
