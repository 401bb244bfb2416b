"""Sending a probe's steps to a server, over HTTP (SSE, or one JSON body) or on one WebSocket, and reading what
comes back as Answers; the WebSocket's upgrade is read byte for byte first, on a connection of its own."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from ...protocol import events as ev
from ...protocol.headers import OPENAI_BETA_HEADER, RESPONSES_WEBSOCKETS_BETA
from ...protocol.sse import SSEDecoder
from ...protocol.vocabulary import Transport
from ...relay.settings import endpoints
from .answer import Answer, Ending, Upgrade
from .probe import Probe, ProbeStep
from .retry import RETRIES, retry_delay

MAX_BODY = 16 * 1024 * 1024
"""Bytes of one answer a probe reads at most (a server that never stops is cut there)."""


@dataclass(frozen=True)
class Target:
    """The server under test and how to talk to it."""

    base_url: str
    model: str = "gpt-4.1-mini"
    api_key: str = field(default="rrkit-conform", repr=False)  # sent to the server, never shown
    timeout: float = 30.0

    def __post_init__(self) -> None:
        endpoints(self.base_url, "server URL")  # a bad one fails here, before anything is sent

    @property
    def http_url(self) -> str:
        return endpoints(self.base_url, "server URL")[0]

    @property
    def ws_url(self) -> str:
        return endpoints(self.base_url, "server URL")[1]

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"}

    def route_url(self, path: str) -> str:
        """The URL of `path` (`/responses/resp_1/cancel`) under the base URL."""
        return self.http_url.removesuffix("/responses") + path


def body_of(step: ProbeStep, target: Target, previous: Answer | None) -> dict[str, Any] | str:
    """What a step sends: its raw text, or the default body with `send` over it and `omit` taken out."""
    if step.raw is not None:
        return step.raw
    body: dict[str, Any] = {
        "model": target.model,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": step.say}]}],
    }
    if step.follows and previous is not None and previous.response_id is not None:
        body["previous_response_id"] = previous.response_id
    body.update(step.send)
    for key in step.omit:
        body.pop(key, None)
    return body


async def run_probe(probe: Probe, transport: Transport, target: Target) -> list[Answer]:
    """Every step of `probe` sent over `transport`, each answer read to its end."""
    if transport == "http":
        return await _over_http(probe, target)
    return await _over_ws(probe, target)


# -- HTTP ---------------------------------------------------------------------------------------------------------


async def _over_http(probe: Probe, target: Target) -> list[Answer]:
    answers: list[Answer] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(target.timeout), trust_env=False) as client:
        for index, step in enumerate(probe.steps):
            if step.path is not None:
                answers.append(await _route_step(client, probe, index, target, answers))
                continue
            skipped = _skipped(probe, index, "http", answers)
            if skipped is None and probe.goes_to_routes:
                skipped = _after_unanswered(probe, index, answers)
            if skipped is not None:
                answers.append(skipped)
                continue
            sent = body_of(step, target, answers[-1] if answers else None)
            if isinstance(sent, dict) and answers:
                sent = _filled_body(sent, _names(answers), target)

            async def once(sent: dict[str, Any] | str = sent, index: int = index) -> Answer:
                answer = Answer(probe.name, index, "http", sent)
                try:
                    await asyncio.wait_for(_post(client, target, sent, answer), target.timeout)
                except TimeoutError:
                    answer.ending, answer.error = Ending.TIMEOUT, f"no end within {target.timeout:g} s"
                except httpx.TransportError as error:
                    answer.ending, answer.error = Ending.CUT, f"{type(error).__name__}: {error}"
                return answer

            answers.append(await _with_retries(once, step))
    return answers


POLL_INTERVAL = 0.2
"""Seconds between two polls of a step that waits for a status (`until`)."""


async def _route_step(
    client: httpx.AsyncClient, probe: Probe, index: int, target: Target, answers: list[Answer]
) -> Answer:
    """A step to another route of the resource: sent once the step before it was answered, again while it
    polls (`until`), each answer read whole."""
    step = probe.steps[index]
    if (skipped := _after_unanswered(probe, index, answers)) is not None:
        return skipped
    names = _names(answers)
    path = _filled(step.path or "", names)
    query = {key: _filled(value, names) for key, value in step.query.items()}
    body = _filled_body(step.send, names, target) if step.method == "POST" else None
    # the step as written (`GET /responses/{response}?stream=true`): the same words on every run
    shown = f"{step.method} {step.path}" + ("?" + "&".join(f"{k}={v}" for k, v in step.query.items()) if query else "")
    origin = next((answer for answer in answers if answer.response_id and not _is_conversation(answer)), None)
    deadline = asyncio.get_running_loop().time() + target.timeout
    polls = 0
    while True:
        answer = Answer(probe.name, index, "http", body or {}, request=shown, query=query, origin=origin)
        polls += 1
        try:
            await asyncio.wait_for(_send(client, target, step.method, path, query, body, answer), target.timeout)
        except TimeoutError:
            answer.ending, answer.error = Ending.TIMEOUT, f"no end within {target.timeout:g} s"
        except httpx.TransportError as error:
            answer.ending, answer.error = Ending.CUT, f"{type(error).__name__}: {error}"
        answer.polls = polls
        status = answer.body.get("status") if isinstance(answer.body, dict) else None
        if not step.until or not answer.ok or status in step.until:
            return answer
        if asyncio.get_running_loop().time() + POLL_INTERVAL > deadline:
            answer.ending = Ending.TIMEOUT
            answer.error = f"still {status!r} after {polls} polls in {target.timeout:g} s (waited for {step.until})"
            return answer
        await asyncio.sleep(POLL_INTERVAL)


def _after_unanswered(probe: Probe, index: int, answers: list[Answer]) -> Answer | None:
    """The answer of a step not sent, in a probe that goes to other routes: a step before it (one not meant to be
    refused) did not go through, so there is nothing to go on with."""
    unanswered = [
        number
        for number, (earlier, answer) in enumerate(zip(probe.steps, answers, strict=False), start=1)
        if not any(expect.check == "refused" for expect in earlier.expect) and not answer.went_through
    ]
    if not unanswered:
        return None
    error = f"not sent: step {unanswered[0]} was not answered, so there is nothing to go on with"
    return Answer(probe.name, index, "http", {}, ending=Ending.SKIPPED, error=error)


def _names(answers: list[Answer]) -> dict[str, str]:
    """What `{response}`, `{conversation}` and `{last_id}` stand for, from the answers so far."""
    names: dict[str, str] = {}
    for answer in answers:
        if "response" not in names and answer.response_id is not None and not _is_conversation(answer):
            names["response"] = answer.response_id
        if "conversation" not in names and _is_conversation(answer):
            names["conversation"] = str(answer.body["id"])
    last = answers[-1].body if answers else None
    if isinstance(last, dict) and isinstance(last.get("last_id"), str):
        names["last_id"] = last["last_id"]
    return names


def _is_conversation(answer: Answer) -> bool:
    return isinstance(answer.body, dict) and answer.body.get("object") == "conversation" and "id" in answer.body


def _filled(text: str, names: dict[str, str]) -> str:
    for name, value in names.items():
        text = text.replace("{" + name + "}", value)
    return text


def _filled_body(send: dict[str, Any], names: dict[str, str], target: Target) -> dict[str, Any]:
    """`send` with the names filled in (`"{response}"`), and `model: true` as the target's model."""
    filled = json.loads(_filled(json.dumps(send), names))
    if filled.get("model") is True:
        filled["model"] = target.model
    return dict(filled)


async def _send(
    client: httpx.AsyncClient,
    target: Target,
    method: str,
    path: str,
    query: dict[str, str],
    body: dict[str, Any] | None,
    answer: Answer,
) -> None:
    url = target.route_url(path)
    content = json.dumps(body).encode() if body is not None else None
    headers = {**target.headers(), **({"content-type": "application/json"} if content is not None else {})}
    async with client.stream(method, url, params=query, content=content, headers=headers) as response:
        answer.status, answer.headers = response.status_code, {k.lower(): v for k, v in response.headers.items()}
        if answer.content_type == "text/event-stream":
            await _read_stream(response, answer)
        else:
            await _read_body(response, answer)


def _skipped(probe: Probe, index: int, transport: Transport, answers: list[Answer]) -> Answer | None:
    """The answer of a step not sent: it follows a step that was not answered with a completed response."""
    if not probe.steps[index].follows or (answers and answers[-1].completed):
        return None
    error = f"not sent: step {index} was not answered, so there is no response to continue"
    return Answer(probe.name, index, transport, {}, ending=Ending.SKIPPED, error=error)


async def _with_retries(once: Callable[[], Awaitable[Answer]], step: ProbeStep) -> Answer:
    """The step's answer, sent again as a client would while it is one a client retries (never a step that
    expects a refusal); the answers before the last are kept, in words, on it."""
    answer = await once()
    if any(expect.check == "refused" for expect in step.expect):
        return answer
    earlier: list[str] = []
    while len(earlier) < RETRIES and (delay := retry_delay(answer)) is not None:
        earlier.append(answer.summary)
        await asyncio.sleep(delay)
        answer = await once()
    answer.retried_after = tuple(earlier)
    return answer


async def _post(client: httpx.AsyncClient, target: Target, sent: dict[str, Any] | str, answer: Answer) -> None:
    content = sent if isinstance(sent, str) else json.dumps(sent)
    headers = {**target.headers(), "content-type": "application/json", "accept": "text/event-stream"}
    async with client.stream("POST", target.http_url, content=content.encode(), headers=headers) as response:
        answer.status, answer.headers = response.status_code, {k.lower(): v for k, v in response.headers.items()}
        if answer.content_type == "text/event-stream":
            await _read_stream(response, answer)
        else:
            await _read_body(response, answer)


async def _read_stream(response: httpx.Response, answer: Answer) -> None:
    decoder, read = SSEDecoder(max_message=MAX_BODY), 0
    answer.ending = Ending.CUT  # until the body ends
    async for chunk in response.aiter_raw():
        read += len(chunk)
        for message in decoder.feed(chunk):
            _take(answer, message.data)
        if read > MAX_BODY:
            answer.error = f"the stream went past {MAX_BODY} bytes"
            return
    for message in decoder.close():
        _take(answer, message.data)
    answer.ending = Ending.WHOLE


async def _read_body(response: httpx.Response, answer: Answer) -> None:
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > MAX_BODY:
            answer.ending, answer.error = Ending.CUT, f"the body went past {MAX_BODY} bytes"
            return
    answer.body_text = bytes(data).decode("utf-8", "replace")
    try:
        answer.body = json.loads(answer.body_text) if answer.body_text.strip() else None
    except ValueError:
        answer.body = None


def _take(answer: Answer, data: str) -> None:
    """One SSE message's data (or one WebSocket frame) as an event, or as unreadable at its place."""
    try:
        event = json.loads(data)
    except ValueError:
        event = None
    if isinstance(event, dict):
        answer.events.append(event)
    else:
        answer.unreadable.append((len(answer.events), data[:200]))


# -- WebSocket ----------------------------------------------------------------------------------------------------


async def _over_ws(probe: Probe, target: Target) -> list[Answer]:
    upgrade = await read_upgrade(target)
    answers: list[Answer] = []
    async with _Socket(target) as socket:
        for index, step in enumerate(probe.steps):
            if (skipped := _skipped(probe, index, "ws", answers)) is not None:
                answers.append(skipped)
                continue
            body = body_of(step, target, answers[-1] if answers else None)
            frame: dict[str, Any] | str = (
                body if isinstance(body, str) else {"type": "response.create", **_as_dict(body)}
            )

            async def once(
                frame: dict[str, Any] | str = frame, index: int = index, follows: bool = step.follows
            ) -> Answer:
                answer = Answer(probe.name, index, "ws", frame, status=101, upgrade=upgrade)
                connection = await socket.open()
                answer.connection = socket.serial
                if connection is None:
                    answer.status, answer.ending, answer.error = upgrade.status, Ending.UNSENT, socket.error
                    return answer
                if follows and answers and answers[-1].connection != socket.serial:
                    answer.ending = Ending.SKIPPED
                    answer.error = (
                        f"not sent: the socket of step {index} closed, and a response is continued on its own"
                    )
                    return answer
                await _exchange(connection, frame, answer, target.timeout, answers[-1] if answers else None)
                if answer.ending is not Ending.WHOLE:
                    await socket.close()  # gone or stuck: a retry, or the next step, opens a new one
                return answer

            answers.append(await _with_retries(once, step))
        if socket.connection is not None and answers:
            await _drain(socket.connection, answers[-1])
    return answers


class _Socket:
    """The probe's WebSocket: opened when a step needs it, opened again after it broke."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.connection: ClientConnection | None = None
        self.error: str | None = None
        self.serial = 0  # how many times it was opened

    async def open(self) -> ClientConnection | None:
        if self.connection is None:
            headers = {**self.target.headers(), OPENAI_BETA_HEADER: RESPONSES_WEBSOCKETS_BETA}
            connect = websockets.connect(
                self.target.ws_url, additional_headers=headers, max_size=MAX_BODY, open_timeout=None
            )
            try:
                self.connection = await asyncio.wait_for(connect, self.target.timeout)
                self.serial += 1
            except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as error:
                self.error = f"the upgrade failed: {type(error).__name__}: {error}"
        return self.connection

    async def close(self) -> None:
        if self.connection is not None:
            connection, self.connection = self.connection, None
            await connection.close()

    async def __aenter__(self) -> _Socket:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


def _as_dict(body: dict[str, Any]) -> dict[str, Any]:
    """A body as a frame's fields (a WebSocket response is always streamed: `stream` is left out)."""
    return {key: value for key, value in body.items() if key != "stream"}


async def _exchange(
    socket: ClientConnection, frame: dict[str, Any] | str, answer: Answer, timeout: float, previous: Answer | None
) -> None:
    """Send one frame; read frames until an event ends the response (a terminal event or an error frame). A
    frame of the previous response that comes after its end (a second terminal event, say) is its, not this
    answer's."""
    try:
        await socket.send(frame if isinstance(frame, str) else json.dumps(frame))
        async with asyncio.timeout(timeout):
            while True:
                message = await socket.recv()
                text = message if isinstance(message, str) else message.decode("utf-8", "replace")
                _take(_owner(text, answer, previous), text)
                if answer.events and answer.events[-1].get("type") in ev.ENDING_TYPES:
                    return
    except TimeoutError:
        answer.ending, answer.error = Ending.TIMEOUT, f"no terminal event or error frame within {timeout:g} s"
    except websockets.exceptions.ConnectionClosed as closed:
        answer.ending, answer.error = Ending.CLOSED, f"the socket closed ({closed})"


def _owner(text: str, answer: Answer, previous: Answer | None) -> Answer:
    """Which answer a frame belongs to: the previous one while this one has none and it names that response."""
    if previous is None or answer.events or previous.response_id is None or previous.response_id not in text:
        return answer
    try:
        event = json.loads(text)
    except ValueError:
        return answer
    response = event.get("response") if isinstance(event, dict) else None
    named = response.get("id") if isinstance(response, dict) else None
    return previous if named == previous.response_id and event.get("type") != ev.CREATED else answer


async def _drain(socket: ClientConnection, answer: Answer) -> None:
    """After the last step: close, and put what the server sent after the last answer's end on it (the close
    handshake delivers frames already on their way)."""
    await socket.close()
    with contextlib.suppress(websockets.exceptions.ConnectionClosed):
        while True:
            message = await socket.recv()
            _take(answer, message if isinstance(message, str) else message.decode("utf-8", "replace"))


async def read_upgrade(target: Target, key_of: Callable[[], bytes] = lambda: os.urandom(16)) -> Upgrade:
    """Send a WebSocket upgrade by hand and read its answer's head as it came (no client library in between, so
    a wrong accept key is seen, not only refused)."""
    parts = urlsplit(target.ws_url)
    secure = parts.scheme == "wss"
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if secure else 80)
    key = base64.b64encode(key_of()).decode()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        f"Authorization: Bearer {target.api_key}",
        f"{OPENAI_BETA_HEADER}: {RESPONSES_WEBSOCKETS_BETA}",
    ]
    try:
        async with asyncio.timeout(target.timeout):
            reader, writer = await asyncio.open_connection(host, port, ssl=secure or None)
            try:
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
                head = await reader.readuntil(b"\r\n\r\n")
            finally:
                writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
        return Upgrade(None, {}, key, f"{type(error).__name__}: {error}")
    return _upgrade_of(head, key)


def _upgrade_of(head: bytes, key: str) -> Upgrade:
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[1].isdigit():
        return Upgrade(None, {}, key, f"not an HTTP status line: {status_line[:80]!r}")
    headers = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return Upgrade(int(fields[1]), headers, key)
