"""Every recorded response header replays, on a stream, a refusal and a 101, except those each server writes for
itself (the connection's, the framing's, the body's encoding: `protocol.headers.SERVER_FRAMED`): a client's
usage-limit display, model-catalogue refresh and 429 details are exercised by a replay as by the recording."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from rrkit.cassette import Cassette, cassette_from_capture
from rrkit.cassette.proxy import RecordingProxy
from rrkit.cassette.replay import CassetteSource
from rrkit.protocol import response_create
from rrkit.protocol.headers import SERVER_FRAMED, replayable_headers
from rrkit.script import Script, accept_upgrade, reject, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

RATE_LIMITS = {
    "x-codex-primary-used-percent": "42.5",
    "x-codex-primary-window-minutes": "300",
    "x-codex-primary-reset-at": "1767225600",
    "x-codex-secondary-used-percent": "7",
    "x-codex-secondary-window-minutes": "10080",
    "x-codex-credits-has-credits": "true",
    "x-codex-credits-balance": "12.50",
    "x-models-etag": 'W/"models-3"',
    "x-reasoning-included": "true",
}
USAGE_LIMIT = {
    "x-codex-active-limit": "primary",
    "x-error-json": '{"error":{"type":"usage_limit_reached","plan_type":"plus","resets_at":1767225600}}',
    "x-openai-authorization-error": "usage_limit",
}
BODY = {"model": "gpt-test", "input": "Hi", "stream": True}


def recorded_through_proxy(serve: Serve, script: Script, ask: Any) -> tuple[Any, Cassette]:
    """What the client got through the recording proxy in front of a fake upstream playing `script`, and the
    cassette the proxy made of it."""
    with serve.running(script) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        seen = ask(proxy)
        cassette = proxy.cassette("headers")
    return seen, cassette


def post(server: FakeServer | RecordingProxy) -> httpx.Response:
    with httpx.Client(timeout=10) as client:
        response = client.post(server.http_url + "/responses", json=BODY)
        response.read()
        return response


def carried(response: httpx.Response, names: dict[str, str]) -> dict[str, str]:
    return {name: response.headers[name] for name in names if name in response.headers}


def test_a_streamed_reply_replays_every_recorded_header_byte_for_byte(serve: Serve) -> None:
    script = Script(default=reply(text("Hi."), headers=RATE_LIMITS))
    first, cassette = recorded_through_proxy(serve, script, post)
    with serve.running(source=CassetteSource(cassette)) as replay:
        again = post(replay)
    assert carried(first, RATE_LIMITS) == RATE_LIMITS  # the proxy passed them on
    assert carried(again, RATE_LIMITS) == RATE_LIMITS
    assert again.headers["x-request-id"] == first.headers["x-request-id"]
    assert again.headers["content-type"].startswith("text/event-stream")
    assert "response.completed" in again.text


def test_a_refusal_replays_its_body_and_every_recorded_header(serve: Serve) -> None:
    refusal = reject(429, "usage_limit_reached", "You've hit your usage limit.", headers=USAGE_LIMIT, retry_after=30)
    first, cassette = recorded_through_proxy(serve, Script(default=refusal), post)
    with serve.running(source=CassetteSource(cassette)) as replay:
        again = post(replay)
    assert (first.status_code, again.status_code) == (429, 429)
    assert carried(again, USAGE_LIMIT) == USAGE_LIMIT
    assert again.headers["retry-after"] == "30"
    assert again.json() == first.json()


def test_a_replayed_101_carries_every_recorded_header(serve: Serve) -> None:
    handshake = accept_upgrade(turn_state="ts-1", headers={"x-models-etag": 'W/"m3"', "x-reasoning-included": "true"})
    script = Script(default=reply(text("Hi."))).add_handshake(handshake)

    def upgrade(server: FakeServer | RecordingProxy) -> dict[str, str]:
        with connect(server.responses_ws_url, proxy=None, open_timeout=10) as socket:
            socket.send(json.dumps(response_create({"model": "gpt-test", "input": "Hi"})))
            while json.loads(socket.recv(timeout=10))["type"] != "response.completed":
                pass
            assert socket.response is not None
            return {name.lower(): value for name, value in socket.response.headers.raw_items()}

    first, cassette = recorded_through_proxy(serve, script, upgrade)
    with serve.running(source=CassetteSource(cassette)) as replay:
        again = upgrade(replay)
    wanted = {**handshake.headers, "x-codex-turn-state": "ts-1"}
    assert {name: first[name] for name in wanted} == wanted
    assert {name: again.get(name) for name in wanted} == wanted


@pytest.mark.parametrize("name", sorted(SERVER_FRAMED | {"sec-websocket-accept", "x-codex-turn-state"}))
def test_the_headers_a_server_writes_for_itself_are_not_replayed(name: str) -> None:
    assert replayable_headers({name: "1", "x-kept": "yes"}) == {"x-kept": "yes"}


@pytest.mark.parametrize("value", ["a\r\nx-injected: yes", "a\nb", "nul\x00", "snow \u2603"])
def test_a_hand_edited_value_no_header_can_carry_is_left_out(value: str) -> None:
    assert replayable_headers({"x-bad": value, "X-Kept": "yes"}) == {"x-kept": "yes"}


def test_a_cassette_with_such_a_value_still_replays_the_rest(serve: Serve) -> None:
    script = Script(default=reply(text("Hi."), headers={"x-kept": "yes"}))
    with serve.running(script) as server:
        post(server)
        server.settle()
        cassette = cassette_from_capture(server.exchanges, server.connections)
    cassette.exchanges[0].response_headers["x-bad"] = "a\r\nx-injected: yes"
    with serve.running(source=CassetteSource(cassette)) as replay:
        again = post(replay)
    assert again.status_code == 200 and again.headers["x-kept"] == "yes"
    assert "x-bad" not in again.headers and "x-injected" not in again.headers
