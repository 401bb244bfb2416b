"""Real clients for the fault tests: httpx over SSE, the `websockets` sync client, and waiting on the capture.

Every wait that should end is bounded by `WAIT` seconds; nothing asserts an upper bound on timing.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import openai
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from rrkit.protocol import Outcome, SSEDecoder
from rrkit.server import Exchange, FakeServer

from ..errortrap import Serve as Serve  # re-exported: the type of the `serve` fixture

WAIT = 30.0
"""The longest a wait that should end may take (generous, for a loaded 2-core machine)."""

USER = {"type": "message", "role": "user", "content": "Hello"}
BODY: dict[str, Any] = {"model": "gpt-test", "input": [USER], "stream": True}
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})

T = TypeVar("T")


def body(**changes: Any) -> dict[str, Any]:
    """A request body like the ones real clients send, with some fields changed (None removes one)."""
    merged = {**BODY, **changes}
    return {key: value for key, value in merged.items() if value is not None}


def wait_until(probe: Callable[[], T | None], timeout: float = WAIT, what: str = "condition") -> T:
    """Poll `probe` until it returns something other than None/False."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.005)


def finished(server: FakeServer, index: int = -1, *, count: int | None = None) -> Exchange:
    """The exchange at `index` once the server has decided its outcome (the server may lag the client)."""

    def probe() -> Exchange | None:
        exchanges = server.exchanges
        if count is not None and len(exchanges) < count:
            return None
        if not exchanges or exchanges[index].outcome is None:
            return None
        return exchanges[index]

    return wait_until(probe, what="the server to record the exchange's outcome")


def outcome(server: FakeServer, index: int = -1) -> Outcome:
    result = finished(server, index).outcome
    assert result is not None
    return result


def types(events: list[dict[str, Any]]) -> list[str]:
    return [str(event.get("type")) for event in events]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(event["delta"] for event in events if event["type"] == "response.output_text.delta")


# -- HTTP + SSE ---------------------------------------------------------------------------------


def loopback_client(timeout: httpx.Timeout) -> httpx.Client:
    """An httpx client for the loopback server: no proxy from the environment (nothing may leave
    127.0.0.1), and no certificate store to load (plain HTTP)."""
    return httpx.Client(timeout=timeout, trust_env=False, verify=False)


@dataclass
class SSEResult:
    """What an httpx client saw: status, headers, the events read, and the error that ended the read."""

    status: int = 0
    headers: httpx.Headers = field(default_factory=httpx.Headers)
    events: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # data lines that are not JSON
    error: Exception | None = None
    json: Any = None  # the body of an error response
    first_event_after: float | None = None  # seconds from sending the request to the first event
    elapsed: float = 0.0

    @property
    def types(self) -> list[str]:
        return types(self.events)


def post_sse(
    server: FakeServer,
    request: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    read_timeout: float = WAIT,
) -> SSEResult:
    """POST /v1/responses and read the SSE stream to its end (or until the transport fails)."""
    result = SSEResult()
    start = time.monotonic()
    with loopback_client(httpx.Timeout(WAIT, read=read_timeout)) as client:
        try:
            with client.stream(
                "POST", server.http_url + "/responses", json=request or BODY, headers=headers
            ) as response:
                result.status, result.headers = response.status_code, response.headers
                if response.status_code != 200:
                    result.json = json.loads(response.read())
                    return result
                decoder = SSEDecoder()
                for chunk in response.iter_bytes():
                    for message in decoder.feed(chunk):
                        if message.data == "[DONE]":
                            continue
                        if result.first_event_after is None:
                            result.first_event_after = time.monotonic() - start
                        try:
                            result.events.append(message.json())
                        except ValueError:  # data that is not JSON: kept apart, as a client skips it
                            result.unreadable.append(message.data)
        except httpx.TransportError as error:
            result.error = error
        finally:
            result.elapsed = time.monotonic() - start
    return result


def post_raw(server: FakeServer, content: bytes) -> httpx.Response:
    """POST bytes as they are (for malformed bodies)."""
    with loopback_client(httpx.Timeout(WAIT)) as client:
        return client.post(
            server.http_url + "/responses", content=content, headers={"content-type": "application/json"}
        )


def sdk(server: FakeServer, *, strict: bool = True, **options: Any) -> openai.OpenAI:
    """The official SDK pointed at the server, without retries, strict about what it parses (by default)."""
    options.setdefault("timeout", WAIT)
    return openai.OpenAI(
        base_url=server.http_url,
        api_key="sk-test",
        max_retries=0,
        _strict_response_validation=strict,
        http_client=openai.DefaultHttpxClient(trust_env=False, verify=False),
        **options,
    )


def port_of(server: FakeServer) -> int:
    return int(server.http_url.rsplit(":", 1)[1].split("/", 1)[0])


def reset_connection(sock: socket.socket) -> None:
    """Vanish: close the TCP connection with a RST, without a close frame or a graceful shutdown."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# -- WebSocket ----------------------------------------------------------------------------------


@contextmanager
def ws_connect(
    server: FakeServer, *, headers: dict[str, str] | None = None, open_timeout: float = WAIT
) -> Iterator[ClientConnection]:
    with connect(
        server.responses_ws_url,
        additional_headers=headers,
        open_timeout=open_timeout,
        close_timeout=1,
        max_size=None,
        proxy=None,  # never a proxy from the environment: nothing may leave 127.0.0.1
    ) as websocket:
        yield websocket


@dataclass
class WSResult:
    """What a websockets client saw for one request: the frames read and how the read ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # frames that are not JSON (half of one, cut inside it)
    closed: ConnectionClosed | None = None
    close_code: int | None = None  # the code the client ends up with: the frame's, or 1006 without one
    timed_out: bool = False
    first_event_after: float | None = None
    elapsed: float = 0.0

    @property
    def types(self) -> list[str]:
        return types(self.events)

    @property
    def last(self) -> dict[str, Any]:
        return self.events[-1]


def ws_read(websocket: ClientConnection, *, timeout: float = WAIT, start: float | None = None) -> WSResult:
    """Read frames until a terminal event or an `error` frame; note a close or a read timeout."""
    start = time.monotonic() if start is None else start
    result = WSResult()
    try:
        while True:
            frame = websocket.recv(timeout=timeout)
            try:
                event = json.loads(frame)
            except json.JSONDecodeError:
                result.unreadable.append(str(frame))
                continue
            if result.first_event_after is None:
                result.first_event_after = time.monotonic() - start
            result.events.append(event)
            if event.get("type") in TERMINAL:
                break
    except ConnectionClosed as closed:
        result.closed, result.close_code = closed, websocket.protocol.close_code
    except TimeoutError:
        result.timed_out = True
    result.elapsed = time.monotonic() - start
    return result


def ws_request(
    websocket: ClientConnection, request: dict[str, Any] | None = None, *, timeout: float = WAIT
) -> WSResult:
    """Send one `response.create` frame and read its answer."""
    start = time.monotonic()
    websocket.send(json.dumps({"type": "response.create", **(request or BODY)}))
    return ws_read(websocket, timeout=timeout, start=start)


def ws_send_raw(websocket: ClientConnection, frame: str, *, timeout: float = WAIT) -> WSResult:
    websocket.send(frame)
    return ws_read(websocket, timeout=timeout)


def stream(server: FakeServer, transport: str, request: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One request over `transport`; the events the client read (the stream must end normally)."""
    if transport == "http":
        result = post_sse(server, request)
        assert result.status == 200 and result.error is None, result
        return result.events
    with ws_connect(server) as websocket:
        answer = ws_request(websocket, request)
    assert answer.closed is None and not answer.timed_out, answer
    return answer.events
