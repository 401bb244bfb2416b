"""Sending a probe's steps to a server through the remote-server driver (`rrkit.drive.remote`), over HTTP (SSE, or
one JSON body) or on one WebSocket, each answer kept as an Answer; the WebSocket's upgrade is read byte for byte
first, on a connection of its own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection

from ...cassette.format import RecordedExchange
from ...drive.ending import Ending
from ...drive.remote import RemoteServer
from ...drive.upgrade import Upgrade, read_upgrade
from ...protocol import events as ev
from ...protocol.headers import OPENAI_BETA_HEADER, RESPONSES_WEBSOCKETS_BETA
from ...protocol.vocabulary import Transport
from ...relay.settings import endpoints
from ..timeouts import ANSWER_TIMEOUT
from .answer import Answer
from .probe import Probe, ProbeStep
from .retry import RETRIES, retry_delay


@dataclass(frozen=True)
class Target:
    """The server under test and how to talk to it."""

    base_url: str
    model: str = "gpt-4.1-mini"
    api_key: str = field(default="rrkit-conform", repr=False)  # sent to the server, never shown
    timeout: float = ANSWER_TIMEOUT

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

    def upgrade_headers(self) -> dict[str, str]:
        return {**self.headers(), OPENAI_BETA_HEADER: RESPONSES_WEBSOCKETS_BETA}


async def read_target_upgrade(target: Target) -> Upgrade:
    """The target's WebSocket upgrade, sent by hand and read as it came."""
    return await read_upgrade(target.ws_url, target.upgrade_headers(), target.timeout)


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
    async with RemoteServer(target.base_url, timeout=target.timeout) as remote:
        if transport == "http":
            return await _over_http(probe, target, remote)
        return await _over_ws(probe, target, remote)


def _request(index: int, transport: Transport, sent: dict[str, Any] | str, **where: Any) -> RecordedExchange:
    """A step as the exchange the driver sends: its body (or frame) as JSON, or its raw text."""
    body = {"wire_request": sent} if isinstance(sent, dict) else {"raw_body": sent}
    return RecordedExchange(id=index, transport=transport, **body, **where)


def _deadline(target: Target) -> float:
    return asyncio.get_running_loop().time() + target.timeout


# -- HTTP ---------------------------------------------------------------------------------------------------------


async def _over_http(probe: Probe, target: Target, remote: RemoteServer) -> list[Answer]:
    answers: list[Answer] = []
    for index, step in enumerate(probe.steps):
        if step.path is not None:
            answers.append(await _route_step(remote, probe, index, target, answers))
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
            headers = {**target.headers(), "content-type": "application/json", "accept": "text/event-stream"}
            request = _request(index, "http", sent)
            answer.record(await remote.http(request, headers, idle=target.timeout, deadline=_deadline(target)))
            return answer

        answers.append(await _with_retries(once, step))
    return answers


POLL_INTERVAL = 0.2
"""Seconds between two polls of a step that waits for a status (`until`)."""


async def _route_step(remote: RemoteServer, probe: Probe, index: int, target: Target, answers: list[Answer]) -> Answer:
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
        request = _request(index, "http", body or "", method=step.method, path=path, query=urlencode(query) or None)
        if body is None:
            request = request.model_copy(update={"raw_body": None})
        headers = {**target.headers(), **({"content-type": "application/json"} if body is not None else {})}
        answer.record(await remote.http(request, headers, idle=target.timeout, deadline=_deadline(target)))
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


# -- WebSocket ----------------------------------------------------------------------------------------------------


async def _over_ws(probe: Probe, target: Target, remote: RemoteServer) -> list[Answer]:
    upgrade = await read_target_upgrade(target)
    answers: list[Answer] = []
    async with _Socket(remote, target) as socket:
        for index, step in enumerate(probe.steps):
            if (skipped := _skipped(probe, index, "ws", answers)) is not None:
                answers.append(skipped)
                continue
            body = body_of(step, target, answers[-1] if answers else None)
            frame: dict[str, Any] | str = (
                body if isinstance(body, str) else {"type": "response.create", **_as_dict(body)}
            )

            async def once(
                frame: dict[str, Any] | str = frame,
                index: int = index,
                follows: bool = step.follows,
                steer: str | None = step.steer,
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
                previous = answers[-1] if answers else None
                request = _request(index, "ws", frame)
                sent = await remote.on_socket(
                    connection,
                    request,
                    idle=target.timeout,
                    deadline=_deadline(target),
                    late=_of(previous),
                    steer=steer,
                )
                for event in sent.late:
                    if previous is not None:
                        previous.take(event)
                answer.record(sent)
                if answer.ending is not Ending.WHOLE:
                    await socket.close()  # gone or stuck: a retry, or the next step, opens a new one
                return answer

            answers.append(await _with_retries(once, step))
        if socket.connection is not None and answers:
            connection, socket.connection = socket.connection, None
            for event in await remote.drain(connection):
                answers[-1].take(event)
    return answers


class _Socket:
    """The probe's WebSocket: opened when a step needs it, opened again after it broke."""

    def __init__(self, remote: RemoteServer, target: Target) -> None:
        self.remote, self.target = remote, target
        self.connection: ClientConnection | None = None
        self.error: str | None = None
        self.serial = 0  # how many times it was opened

    async def open(self) -> ClientConnection | None:
        if self.connection is None:
            opened = await self.remote.open_socket(self.target.upgrade_headers())
            self.connection, self.error = opened.connection, opened.error
            self.serial += opened.connection is not None
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


def _of(previous: Answer | None) -> Callable[[dict[str, Any]], bool] | None:
    """Whether a frame that comes before the answer's own first is the previous response's, after its end (a second
    terminal event, say): it names that response, and is not a new response's `response.created`."""
    if previous is None or previous.response_id is None:
        return None
    named = previous.response_id

    def late(event: dict[str, Any]) -> bool:
        response = event.get("response")
        return isinstance(response, dict) and response.get("id") == named and event.get("type") != ev.CREATED

    return late
