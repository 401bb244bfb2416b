"""The families of hostile neighbours (issue 20), fuzzed on a real server with small limits and an admin token:
bodies around the body and decoded-body limits (any encoding), WebSocket messages around the ws-message limit,
admin calls a web page or a stranger can make, and credentials anywhere in a request, through the recording proxy.
Never a 500 or a logged error; a refusal only where a limit says so; the server answers on; the memory it keeps stays
within its budget; no refused admin call changes anything; no credential reaches a cassette or an admin view."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from rrkit.cassette import RecordingProxy, dump_cassette
from rrkit.protocol.errors import REQUEST_TOO_LARGE
from rrkit.protocol.limits import Limits

from . import ENCODINGS, fuzz, json_text, to_bytes
from .conftest import GuardedServer
from .requests import BODIES, FRAMES, NORMAL, TERMINAL, VALID_REQUESTS, check_answer, http_headers_and_body

LIMITS = Limits(body=4096, decoded_body=8192, ws_message=4096, memory=256 * 1024)
TOKEN = "fuzz-admin-t0ken"
AUTHORIZED = {"authorization": f"Bearer {TOKEN}"}
TIMEOUT = 10.0
PADS = st.sampled_from([0, 1000, 3900, 4096, 4200, 7000, 8192, 9000, 20_000])
"""Padding around the limits (4 KiB as sent, 8 KiB decoded): what gzip makes small decodes past them."""

pytestmark = [pytest.mark.hostile, pytest.mark.filterwarnings("ignore:Generating overly large repr")]


@pytest.fixture(scope="module")
def limited() -> Iterator[GuardedServer]:
    server = GuardedServer(limits=LIMITS, admin_token=TOKEN)
    yield server
    server.finish()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=TIMEOUT, trust_env=False) as client:
        yield client


def padded(value: Any, pad: int) -> Any:
    return {**value, "pad": "x" * pad} if isinstance(value, dict) else [value, "x" * pad] if pad else value


def answers_on_within_budget(client: httpx.Client, guarded: GuardedServer) -> None:
    response = client.post(guarded.server.http_url + "/responses", json=NORMAL)
    events = check_answer(response.status_code, response.headers.get("content-type", ""), response.content)
    assert events[-1]["type"] == "response.completed"
    health = client.get(guarded.server.admin_url + "/health", headers=AUTHORIZED).json()
    kept = health["memory"]["kept"]
    assert sum(size or 0 for size in kept.values()) <= LIMITS.memory, health["memory"]
    guarded.check()


@fuzz(200)
@given(value=BODIES, pad=PADS, encoding=ENCODINGS, data=st.data())
def test_a_body_near_the_limits_is_refused_413_exactly_when_over_one_and_never_500(
    limited: GuardedServer, client: httpx.Client, value: Any, pad: int, encoding: str, data: st.DataObject
) -> None:
    limited.attach()
    payload = to_bytes(json_text(padded(value, pad), ascii_only=data.draw(st.booleans())), encoding)
    headers, body = data.draw(http_headers_and_body(payload), label="headers, body")
    response = client.post(limited.server.http_url + "/responses", content=body, headers=headers)
    event(f"status {response.status_code}")
    if len(body) > LIMITS.body:
        assert response.status_code == 413, response.text[:300]
    if response.status_code == 413:
        assert len(body) > LIMITS.body or "content-encoding" in headers  # decoded past decoded-body
        assert response.json()["error"]["code"] == REQUEST_TOO_LARGE
    else:
        check_answer(response.status_code, response.headers.get("content-type", ""), response.content)
    answers_on_within_budget(client, limited)


def read_answer(socket: Any) -> list[str]:
    """The types of the frames answering one message: one `error` frame, or events up to a terminal one."""
    types: list[str] = []
    while not types or (types[-1] not in TERMINAL):
        types.append(json.loads(socket.recv(timeout=TIMEOUT))["type"])
    return types


@fuzz(100)
@given(frame=FRAMES, pad=PADS, binary=st.booleans())
def test_a_websocket_message_over_the_limit_closes_with_1009_and_a_new_socket_is_served(
    limited: GuardedServer, frame: Any, pad: int, binary: bool
) -> None:
    limited.attach()
    message = json_text(padded(frame, pad), ascii_only=True)
    size = len(message.encode())
    with connect(limited.server.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2, max_size=None) as ws:
        ws.send(message.encode() if binary else message, text=not binary)
        try:
            types = read_answer(ws)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1009, closed
            assert size > LIMITS.ws_message
            event("closed 1009")
        else:
            assert size <= LIMITS.ws_message, (size, types)
            event(f"answer {types[-1]}")
    with connect(limited.server.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2) as fresh:
        fresh.send(json.dumps({"type": "response.create", **NORMAL}))
        assert read_answer(fresh)[-1] == "response.completed"
    limited.check()


HOSTS = st.sampled_from(["own", "localhost", "evil.example", "rebind.attacker.example:80", "127.0.0.1.nip.io", ""])
ORIGINS = st.sampled_from([None, "own", "http://evil.example", "null", "http://localhost:1", "file://"])
FETCH_SITES = st.sampled_from([None, "none", "same-origin", "same-site", "cross-site"])
CONTENT_TYPES = st.sampled_from(
    [None, "application/json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]
)
TOKENS = st.sampled_from([None, "Bearer " + TOKEN, "Bearer wrong", TOKEN, "Basic " + TOKEN, "bearer " + TOKEN])
CALLS = st.sampled_from(
    [("POST", "/reset"), ("POST", "/script"), ("GET", "/exchanges?full=1"), ("GET", "/health"), ("GET", "/metrics")]
)
REPLACEMENT = json.dumps({"default": {"output": [{"text": "replaced by a stranger"}]}})


@fuzz(200)
@given(
    call=CALLS, host=HOSTS, origin=ORIGINS, site=FETCH_SITES, content_type=CONTENT_TYPES, token=TOKENS, data=st.data()
)
def test_an_admin_call_a_web_page_or_a_stranger_makes_changes_nothing_and_reads_nothing(
    limited: GuardedServer,
    client: httpx.Client,
    call: tuple[str, str],
    host: str,
    origin: str | None,
    site: str | None,
    content_type: str | None,
    token: str | None,
    data: st.DataObject,
) -> None:
    limited.attach()
    own = limited.server.admin_url.split("/")[2]
    foreign_host = host not in ("own", "localhost")
    foreign_origin = origin is not None and origin != "own"
    method, path = call
    form = method == "POST" and content_type is not None and not content_type.startswith("application/json")
    wrong_token = token is None or token.partition(" ")[0].lower() != "bearer" or not token.endswith(" " + TOKEN)
    hostile = foreign_host or foreign_origin or site in ("cross-site", "same-site") or form or wrong_token
    assume(hostile)  # a well-formed call from a program holding the token may change state: not this test's
    headers = {"host": own if host == "own" else own.replace("127.0.0.1", "localhost") if host == "localhost" else host}
    if origin is not None:
        headers["origin"] = f"http://{own}" if origin == "own" else origin
    optional = {"sec-fetch-site": site, "content-type": content_type, "authorization": token}
    headers.update({name: value for name, value in optional.items() if value is not None})
    body = data.draw(st.sampled_from([None, REPLACEMENT, "a=1", "\x00\xff"]), label="body")
    before = {exchange.id for exchange in limited.server.exchanges}
    response = client.request(method, limited.server.admin_url + path, headers=headers, content=body)
    event(f"status {response.status_code}")
    assert 400 <= response.status_code < 500, (call, headers, response.status_code, response.text[:300])
    assert response.json()["error"]["code"].startswith("admin_"), response.text[:300]
    assert "access-control-allow-origin" not in response.headers
    assert "Hi there" not in response.text and "rrkit_" not in response.text  # nothing read out
    answer = client.post(limited.server.http_url + "/responses", json={**NORMAL, "stream": False})
    assert answer.json()["output"][0]["content"][0]["text"] == "Hi there."  # the script was not replaced
    limited.server.settle()
    after = {exchange.id for exchange in limited.server.exchanges}
    assert after - before and (not before or before & after)  # nothing reset (the budget may evict the oldest)
    limited.check()


SECRET = "sk-proj-FUZZ0SECRET0" + "a1b2c3d4e5f6"
BEARER = "Bearer " + SECRET
CREDENTIAL_NAMES = st.sampled_from(
    ["api_key", "apiKey", "password", "client_secret", "access_token", "X-Api-Key", "Authorization", "sessionToken"]
)


@st.composite
def with_credentials(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A request the API takes, with credentials where the Responses API carries them: an MCP tool's
    `authorization` and `headers`, fields named like a credential, key-like values; and the secrets put there."""
    request: dict[str, Any] = dict(draw(VALID_REQUESTS))
    placed: list[str] = []
    if draw(st.booleans()):
        tool = {"type": "mcp", "server_label": "deploy", "server_url": "https://mcp.example/sse"}
        secret = f"{SECRET}-mcp"
        tool[draw(st.sampled_from(["authorization", "headers"]))] = (
            secret if draw(st.booleans()) else {draw(CREDENTIAL_NAMES): secret, "X-Trace": secret}
        )
        request["tools"] = [*request.get("tools", []), tool]
        placed.append(secret)
    for index in range(draw(st.integers(0, 3))):
        secret = f"{SECRET}-{index}"
        value = BEARER + str(index) if draw(st.booleans()) else secret
        spot: dict[str, Any] = request
        for name in draw(st.lists(st.sampled_from(["metadata", "client_metadata", "text", "reasoning"]), max_size=2)):
            spot = spot.setdefault(name, {}) if isinstance(spot.get(name, {}), dict) else spot
        key = draw(CREDENTIAL_NAMES | st.just("note"))  # `note`: only the value says it is a key
        spot[key] = value
        placed.append(secret)
    assume(placed)
    return request, placed


@pytest.fixture(scope="module")
def proxy(limited: GuardedServer) -> Iterator[RecordingProxy]:
    """A recording proxy in front of the limited server, guarded by its trap."""
    with RecordingProxy(limited.server.http_url) as recording:
        limited.serve.guard(recording)
        yield recording


@fuzz(80)
@given(request=with_credentials(), websocket=st.booleans(), as_list=st.booleans())
def test_credentials_anywhere_in_a_request_never_reach_the_cassette_or_an_admin_view(
    limited: GuardedServer,
    proxy: RecordingProxy,
    client: httpx.Client,
    request: tuple[dict[str, Any], list[str]],
    websocket: bool,
    as_list: bool,
) -> None:
    """`as_list`: the request sent inside a list, which no server takes (a 400, its raw body kept as text)."""
    limited.attach()
    body, secrets = request
    if websocket:
        frame = {"type": "response.create", **body}
        with connect(proxy.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2) as ws:
            ws.send(json.dumps([frame] if as_list else frame))
            read_answer(ws)
    else:
        response = client.post(proxy.http_url + "/responses", json=[body] if as_list else body)
        assert response.status_code in (200, 400, 413), response.text[:300]
    proxy.settle()
    limited.server.settle()
    cassette_text = "".join(dump_cassette(proxy.cassette()))
    views = [
        client.get(server.admin_url + "/exchanges?full=1", headers=AUTHORIZED).text
        for server in (limited.server, proxy)
    ]
    for secret in secrets:
        assert secret not in cassette_text, secret
        for view in views:
            assert secret not in view, secret
    limited.check()
