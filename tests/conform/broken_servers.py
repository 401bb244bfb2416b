"""A small, correct Responses server (a Starlette app: POST /v1/responses over SSE or one JSON body, and
WebSocket /v1/responses), and the same server broken one way at a time by a `Faults` flag: what
`rrkit conform --server URL` is tested against (tests/conform/test_conform_server_broken.py).

It runs with uvicorn on a loopback port of its own, in the background thread every rrkit test server shares
(`LoopbackServer`): `with ResponsesServer(Faults(...)) as server:` then `server.url`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp
from starlette.websockets import WebSocket, WebSocketDisconnect

from rrkit.protocol import IdGenerator, ResponseEvents, error_body, ws_error_frame
from rrkit.protocol import events as ev
from rrkit.protocol.sse import encode_event, encode_json
from rrkit.server.runner import LoopbackServer

REPLY = "Hello there!"
WRONG_ACCEPT = "d3JvbmcgYWNjZXB0IGtleSE="  # base64 of "wrong accept key!": never the RFC 6455 hash of a key


@dataclass(frozen=True)
class Faults:
    """What the server gets wrong: each flag breaks exactly one duty, everything else stays correct."""

    no_sequence_number: bool = False  # stream events carry no `sequence_number`
    delta_before_item: bool = False  # the first text delta comes before its output_item.added
    two_terminals: bool = False  # a second response.completed after the first
    error_frame_without_status: bool = False  # WebSocket error frames carry no `status`
    warmup_with_output: bool = False  # `generate: false` answered with the reply's output
    crash_on_invalid_json: bool = False  # a body that is not JSON answered 500
    wrong_accept_key: bool = False  # the WebSocket upgrade's Sec-WebSocket-Accept is not the key's hash

    @property
    def name(self) -> str:
        """The flag that is set (`correct` for none): a test id."""
        return next((f.name for f in fields(self) if getattr(self, f.name)), "correct")


class Refusal(Exception):
    """A request the server refuses with 400: the OpenAI error object's message, code and param."""

    def __init__(self, message: str, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.message, self.code, self.param = message, code, param


_NUMBER_FIELDS = ("temperature", "top_p")
_TYPES: dict[str, tuple[type, ...]] = {"stream": (bool,), "generate": (bool,), "previous_response_id": (str,)}


class ResponsesService:
    """What both transports answer: a request checked, then the events of a text reply (or of a warmup)."""

    def __init__(self, faults: Faults, chunks: int = 1) -> None:
        self.faults, self.chunks = faults, chunks
        self.ids = IdGenerator()
        self.issued: set[str] = set()  # the ids of the responses this server answered (a follow-up continues one)
        self.huge_sent = False

    def parse(self, text: str | bytes) -> dict[str, Any]:
        try:
            body = json.loads(text)
        except ValueError:
            raise Refusal(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
                "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid "
                "JSON.)"
            ) from None
        if not isinstance(body, dict):
            raise Refusal("The request body must be a JSON object.", "invalid_type")
        return body

    def check(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if model is None:
            raise Refusal("Missing required parameter: 'model'.", "missing_required_parameter", "model")
        if not isinstance(model, str):
            raise Refusal("Invalid type for 'model': expected a string.", "invalid_type", "model")
        for name in _NUMBER_FIELDS:
            value = body.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise Refusal(
                    f"Invalid type for '{name}': expected a decimal, but got {type(value).__name__} instead.",
                    "invalid_type",
                    name,
                )
        for name, kinds in _TYPES.items():
            value = body.get(name)
            if value is not None and not isinstance(value, kinds):
                raise Refusal(f"Invalid type for '{name}'.", "invalid_type", name)
        previous = body.get("previous_response_id")
        if previous is not None and previous not in self.issued:
            raise Refusal(
                f"Previous response with id '{previous}' not found.",
                "previous_response_not_found",
                "previous_response_id",
            )

    def events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The events that answer `body` (a text reply, or a warmup's empty response), the faults applied."""
        build = ResponseEvents(body, ids=self.ids)
        self.issued.add(build.response_id)
        if body.get("generate") is False and not self.faults.warmup_with_output:
            events = [*build.created(), *build.completed()]  # a warmup: a response without output
        else:
            events = [*build.start(), *build.message(REPLY, chunks=self.chunks), *build.completed()]
        if self.faults.delta_before_item and (delta := _index(events, ev.TEXT_DELTA)) is not None:
            added = _index(events, ev.ITEM_ADDED)
            assert added is not None
            events.insert(added, events.pop(delta))
            events = [dict(event, sequence_number=index) for index, event in enumerate(events)]  # only order broken
        if self.faults.two_terminals:
            events.append(dict(events[-1], sequence_number=len(events)))
        if self.faults.no_sequence_number:
            events = [{key: value for key, value in event.items() if key != "sequence_number"} for event in events]
        return events

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        """The response object that answers `body` without `stream` (the completed event's)."""
        build = ResponseEvents(body, ids=self.ids)
        self.issued.add(build.response_id)
        if body.get("generate") is not False:
            build.message(REPLY)
        completed: dict[str, Any] = build.completed()[0]["response"]
        return completed

    def error_frame(self, refusal: Refusal) -> dict[str, Any]:
        frame = ws_error_frame(400, refusal.message, code=refusal.code, param=refusal.param)
        if self.faults.error_frame_without_status:
            del frame["status"]
        return frame


def _index(events: list[dict[str, Any]], kind: str) -> int | None:
    return next((index for index, event in enumerate(events) if event["type"] == kind), None)


def create_app(
    faults: Faults, chunks: int = 1, huge_first_event: bool = False, gzip: bool = False, latin1: bool = False
) -> Starlette:
    """The server's app; `huge_first_event`: its first stream over SSE opens with one event of HUGE_EVENT_MB (a
    hostile server, beyond one broken duty); `gzip`: streams are sent gzip-encoded, flushed after each event (as
    a compressing proxy does; correct, and read by the official SDK); `latin1`: the reply's text goes out in
    Latin-1 bytes over SSE (not UTF-8: the official SDKs refuse it)."""
    service = ResponsesService(faults, chunks)

    async def post(request: Request) -> Response:
        raw = await request.body()
        try:
            body = service.parse(raw)
        except Refusal as refusal:
            if faults.crash_on_invalid_json:
                return Response("Internal Server Error", status_code=500, media_type="text/plain")
            return _refused(refusal)
        try:
            service.check(body)
        except Refusal as refusal:
            return _refused(refusal)
        if body.get("stream") is True:
            events = service.events(body)
            huge = huge_first_event and not service.huge_sent
            service.huge_sent = service.huge_sent or huge
            if gzip:
                headers = {"content-encoding": "gzip"}
                return StreamingResponse(_gzipped(_sse(events)), media_type="text/event-stream", headers=headers)
            return StreamingResponse(_sse(events, huge=huge, latin1=latin1), media_type="text/event-stream")
        return JSONResponse(service.response(body))

    async def socket(websocket: WebSocket) -> None:
        await websocket.accept()
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                text = await websocket.receive_text()
                try:
                    frame = service.parse(text)
                    if frame.get("type") != "response.create":
                        raise Refusal(f"Unknown frame type {frame.get('type')!r}.", "invalid_type", "type")
                    body = {key: value for key, value in frame.items() if key != "type"}
                    service.check(body)
                except Refusal as refusal:
                    await websocket.send_text(encode_json(service.error_frame(refusal)).decode())
                    continue  # the socket stays usable
                for event in service.events(body):
                    await websocket.send_text(encode_json(event).decode())

    return Starlette(routes=[Route("/v1/responses", post, methods=["POST"]), WebSocketRoute("/v1/responses", socket)])


def _refused(refusal: Refusal) -> JSONResponse:
    return JSONResponse(error_body(refusal.message, code=refusal.code, param=refusal.param), status_code=400)


HUGE_EVENT_MB = 100


async def _sse(events: list[dict[str, Any]], *, huge: bool = False, latin1: bool = False) -> AsyncIterator[bytes]:
    if huge:  # one event of HUGE_EVENT_MB, made as it is sent (the server never holds it whole)
        yield b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"'
        for _ in range(HUGE_EVENT_MB):
            yield b"x" * (1 << 20)
        yield b'"}\n\n'
    for event in events:
        encoded = encode_event(event)
        yield encoded.decode().encode("latin-1", "replace").replace(b"Hello", b"H\xe9llo") if latin1 else encoded


async def _gzipped(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    packer = zlib.compressobj(wbits=31)  # the gzip container
    async for chunk in chunks:
        yield packer.compress(chunk) + packer.flush(zlib.Z_SYNC_FLUSH)
    yield packer.flush()


class ResponsesServer(LoopbackServer):
    """The server on a loopback port, in the background thread (`with`), broken as `faults` says.

    A wrong Sec-WebSocket-Accept cannot come from the app: uvicorn's WebSocket protocol computes the header from
    the client's key itself. So with `wrong_accept_key` the server's URL is a tiny TCP relay in front of the
    correct server, which rewrites that one header in the first response head each connection carries and
    passes every other byte through as it is (HTTP answers have no such header and go through unchanged)."""

    def __init__(
        self,
        faults: Faults | None = None,
        *,
        chunks: int = 1,
        huge_first_event: bool = False,
        gzip: bool = False,
        latin1: bool = False,
    ) -> None:
        super().__init__()
        self.faults, self.chunks = faults or Faults(), chunks  # chunks: the text deltas of a reply
        self.huge_first_event, self.gzip, self.latin1 = huge_first_event, gzip, latin1
        self._relay: asyncio.Server | None = None
        self._relayed: set[asyncio.StreamWriter] = set()  # both ends of each relayed connection
        self._relaying: set[asyncio.Task[None]] = set()

    def app(self) -> ASGIApp:
        return create_app(self.faults, self.chunks, self.huge_first_event, self.gzip, self.latin1)

    @property
    def url(self) -> str:
        """The base URL a client is given (`http://127.0.0.1:PORT/v1`): the relay's, when there is one."""
        if self._relay is None:
            return self.http_url
        host, port = self._relay.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    async def start(self) -> Self:
        await super().start()
        if self.faults.wrong_accept_key:
            self._relay = await asyncio.start_server(self._relay_one, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._relay is not None:
            self._relay.close()
            for writer in self._relayed:  # a client still connected: cut, its relay ends by itself
                writer.transport.abort()
            await asyncio.gather(*self._relaying)
            self._relay = None
        await super().stop()

    async def _relay_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = self.http_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        task, ends = asyncio.current_task(), (writer, upstream_writer)
        assert task is not None
        self._relaying.add(task)
        self._relayed.update(ends)
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer, rewrite=True))
        finally:
            self._relayed.difference_update(ends)
            self._relaying.discard(task)


_ACCEPT = re.compile(rb"(?im)^(sec-websocket-accept:[ \t]*)[^\r\n]*")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, rewrite: bool = False) -> None:
    """Copy `reader` to `writer` until either end goes; with `rewrite`, the first head's accept key made wrong."""
    try:
        if rewrite:
            head = await reader.readuntil(b"\r\n\r\n")
            writer.write(_ACCEPT.sub(lambda match: match[1] + WRONG_ACCEPT.encode(), head))
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()
