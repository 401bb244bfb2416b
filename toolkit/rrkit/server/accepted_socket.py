"""One accepted WebSocket: many `response.create` requests in sequence on it, each answered by playing its plan as
frames, with steering, relayed frames and lanes (`lanes`) beside them."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..protocol import errors
from ..protocol.incremental import rebuild_logical
from ..protocol.jsontext import UnsafeJSON, parse_json, parse_peer_json
from ..protocol.outcome import STATED_KINDS, Outcome, OutcomeKind
from ..protocol.plan import ResponsePlan
from ..protocol.request import input_items
from ..protocol.steer import STEER, STEER_ACCEPTED, STEER_PENDING, SteerQueue, is_steer, successor_request, unaimed
from ..protocol.vocabulary import CloseKind
from ..protocol.wire_events import planned
from ..script.steering import answer_steer
from . import resources
from .capture import Connection, Exchange, SentEvent
from .lanes import LaneChannel, lane_of
from .respond import (
    ABNORMAL_CLOSURE,
    NORMAL_CLOSURE,
    RequestRefused,
    Responder,
    ResponseStore,
    ServerState,
    invalid_request,
    store_ended,
)
from .store import stated_of
from .stream import (
    INTERNAL_ERROR,
    Channel,
    ChannelGone,
    Gone,
    first_of,
    play,
    server_error_outcome,
    until_client_leaves,
)
from .uvicorn_adapter import connection_transport, text_frames_writer

if TYPE_CHECKING:
    from ..script.models import Handshake

log = logging.getLogger("rrkit.server")

SERVICE_RESTART = 1012  # the close code uvicorn's shutdown sends on an open socket
MESSAGE_TOO_BIG = 1009  # uvicorn's close for a message over the ws-message limit (a client's own 1009 counts too)

_KEEP_OPEN = frozenset({OutcomeKind.REFUSED, OutcomeKind.ANSWERED})
"""Outcomes after which the socket serves the next frame: an error frame, a relayed frame's answer."""


class AcceptedSocket:
    """One accepted socket: many requests in sequence, each answered by playing its plan as frames.

    It is the engine's channel for its own socket (send, pause, stall, cut, finish)."""

    def __init__(
        self, state: ServerState, websocket: WebSocket, connection: Connection, handshake: Handshake | None
    ) -> None:
        self.state, self.ws, self.connection, self.handshake = state, websocket, connection, handshake
        self.store = ResponseStore(state.ws_store_size)  # this connection's own, bounded (docs/guide/serve.md)
        self.responder = Responder(state)
        self.stopping = state.stopping or asyncio.Event()
        # A reader takes the client's frames as they come, so that a client leaving is seen at once, even while
        # the answer waits on its source (an upstream that says nothing yet).
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.held: collections.deque[Message] = collections.deque()  # read while a response streamed, not a steer
        self.lanes: dict[str, asyncio.Queue[str]] = {}  # `stream_id` -> the creates waiting on that lane
        self.lane_tasks: list[asyncio.Task[None]] = []
        self.active: dict[str, SteerQueue] = {}  # the responses streaming now that steering can stop, by id
        self.gone = Gone()
        self.gone_code: int | None = None
        self.write_frames = text_frames_writer(websocket.scope)

    async def run(self) -> None:
        reader = asyncio.create_task(self._read())
        try:
            await self._serve()
        finally:
            reader.cancel()
            for lane in self.lane_tasks:
                lane.cancel()

    async def _read(self) -> None:
        while True:
            try:
                message = await self.ws.receive()
            except (OSError, RuntimeError, WebSocketDisconnect):
                message = {"type": "websocket.disconnect", "code": ABNORMAL_CLOSURE}
            self.inbox.put_nowait(message)
            if message["type"] == "websocket.disconnect":
                self.connection.ended_at = self.connection.ended_at or time.time()
                self.gone_code = message.get("code")
                self.gone.set()
                return

    async def _serve(self) -> None:
        while True:
            message = self.held.popleft() if self.held else await self.inbox.get()
            if message["type"] == "websocket.disconnect":
                # uvicorn's shutdown closed it (1012, service restart), or its ws-message limit (1009)
                if self.stopping.is_set() or message.get("code") == MESSAGE_TOO_BIG:
                    self._client_gone(message.get("code"))
                    return
                self.connection.closed_by = self.connection.closed_by or "client"
                self.connection.close_code = message.get("code")
                return
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
            if self._to_lane(text):
                continue
            if not await until_client_leaves(self._request(text), self.gone):
                if self.gone.is_set():  # it left while its frame's answer waited (a relayed frame, a stalled source)
                    self._client_gone(self.gone_code)
                return

    def _to_lane(self, text: str) -> bool:
        """Hand a create naming a `stream_id` to its lane (started on first use); False for any other frame. Lanes
        run side by side, each answering its creates in order (the SDK's `ResponseCreate.stream_id`)."""
        lane = lane_of(text)
        if lane is None:
            return False
        waiting = self.lanes.get(lane)
        if waiting is None:
            waiting = self.lanes[lane] = asyncio.Queue()
            self.lane_tasks.append(asyncio.create_task(self._lane(lane, waiting)))
        waiting.put_nowait(text)
        return True

    async def _lane(self, lane: str, waiting: asyncio.Queue[str]) -> None:
        while True:
            text = await waiting.get()
            if not await until_client_leaves(self._request(text, lane), self.gone):
                return  # the socket is finished (cut, or its client gone): `_serve` sees it end

    async def _request(self, text: str, lane: str | None = None) -> bool:
        """Answer one client frame (on a lane: its events tagged with its `stream_id`); False when the socket is
        finished."""
        exchange = self.state.capture.new_exchange("ws", self.connection.handshake_headers, None, self.connection)
        try:
            await self._answer(exchange, text, lane)
        except Exception as error:  # a server bug: reported once, named in the outcome, the socket closed with 1011
            log.error("rrkit: the server failed on exchange %s (WebSocket)", exchange.id, exc_info=error)
            exchange.outcome = server_error_outcome(error, len(exchange.events), streaming=bool(exchange.events))
            await self.cut("frame", INTERNAL_ERROR, "internal error")
            return False
        finally:
            if exchange.outcome is None:  # cancelled: the client left while the answer waited on its source
                exchange.outcome = exchange.left()
        if exchange.outcome.kind not in STATED_KINDS and exchange.outcome.kind not in _KEEP_OPEN:
            return False
        limit = self.handshake.close_after if self.handshake else None
        if limit is not None and self.connection.requests >= limit:
            assert self.handshake is not None  # closed at once, before the client can send on this socket again
            await self.cut(self.handshake.close, self.handshake.close_code, "")
            return False
        return True

    async def _answer(self, exchange: Exchange, text: str, lane: str | None = None) -> None:
        body: Any = None
        try:
            try:
                body = parse_json(text, what="frame")
            except UnsafeJSON as error:
                exchange.raw_body = text
                raise invalid_request(error) from None
            if isinstance(body, dict) and body.get("type") != "response.create" and self._relays_frames():
                exchange.raw_body = text
                await self._relay_frame(exchange, text)
                return
            if isinstance(body, dict) and body.get("type") == STEER:
                exchange.raw_body = text
                await self._answer_steer(exchange, body)
                return
            if not isinstance(body, dict) or body.get("type") != "response.create":
                exchange.raw_body = text
                kind = body.get("type") if isinstance(body, dict) else type(body).__name__
                raise RequestRefused(
                    400,
                    errors.error_body(
                        f"Unsupported frame type {kind!r}: this server answers 'response.create' frames only.",
                        code="unsupported_frame_type",
                        param="type",
                    ),
                )
            wire = self.responder.parse(body, transport="ws")
            exchange.wire_request = wire
            logical = exchange.logical_request = self.responder.logical(wire, self.store)
            plan = await self.responder.plan(exchange, self.connection.handshake_headers, wire, logical)
        except RequestRefused as rejected:
            self._forget_base(body)
            await self._refuse(exchange, rejected, lane)
            return
        if plan.body is not None:
            message = "rrkit: the recorded answer is a whole HTTP body, which a WebSocket cannot carry."
            await self.ws.send_text(json.dumps(errors.ws_error_frame(500, message, type="server_error")))
            exchange.outcome = Outcome(OutcomeKind.REFUSED, status=500, message=message)
            return
        channel: Channel = self if lane is None else LaneChannel(self, lane)
        while True:
            exchange.response_id = plan.response_id
            if plan.steer is not None:
                self.active[plan.response_id] = plan.steer
            try:
                exchange.outcome = await self._play_steerable(plan, exchange, channel)
                store_ended(self.store, exchange)
                if not self.state.source.answers_every_route:
                    resources.add_to_conversation(self.state, exchange, exchange.wire_request or {})
                successor = await self._successor(exchange, plan)  # it may wait for the input: still steerable
            finally:
                self.active.pop(plan.response_id, None)
            if successor is None:
                return
            exchange, plan = successor

    def _forget_base(self, body: Any) -> None:
        """Drop a refused continuation's base from the connection's cache, as the service's WebSocket mode does."""
        named = body.get("previous_response_id") if isinstance(body, dict) else None
        if isinstance(named, str) and not self.state.source.answers_every_route:  # a replay keeps what it recorded
            self.store.pop(named, None)

    async def _play_steerable(self, plan: ResponsePlan, exchange: Exchange, channel: Channel) -> Outcome:
        """Play a response; while it plays, the frames that come are read: a steer frame is answered at once (the
        input accepted for a response streaming is queued on its plan, which stops at its next output boundary),
        a create naming a lane goes to it. A lane's response is played alone: the socket's reading goes on."""
        if plan.steer is None or channel is not self:
            return await play(plan, exchange, channel)
        played = asyncio.ensure_future(play(plan, exchange, channel))
        try:
            await self._take_steers(plan.steer, played)
        finally:
            played.cancel()  # a no-op once it ended; stops it when the client's leaving cancels the answer
        return played.result()

    async def _take_steers(self, queue: SteerQueue, until: asyncio.Future[Outcome] | None = None) -> None:
        """Answer the steer frames that come until `until` is done (without it: until input is queued for the
        response); the first frame that is no steer is held, with every frame after it, for when the response
        ended."""
        while not until.done() if until is not None else not queue.requested:
            if self.held:
                if until is not None:
                    await asyncio.wait([until])
                return
            frame = asyncio.ensure_future(self.inbox.get())
            waited: list[asyncio.Future[Any]] = [frame] if until is None else [until, frame]
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            if not frame.done():
                frame.cancel()  # a queue's get cancelled takes nothing from it
                continue
            message = frame.result()
            body = _steer_frame(message)
            if body is None:
                if not self._to_lane(message.get("text") or ""):
                    self.held.append(message)
                continue
            steer = self.state.capture.new_exchange("ws", self.connection.handshake_headers, None, self.connection)
            steer.raw_body = message.get("text")
            await self._answer_steer(steer, body)

    async def _answer_steer(self, exchange: Exchange, body: dict[str, Any]) -> None:
        """A steer frame: answered as the source says; one that names no response, with an `error` frame."""
        try:
            if (problem := unaimed(body)) is not None:
                raise RequestRefused(400, errors.error_body(problem, param="previous_response_id"))
            await self._steer(exchange, body)
        except RequestRefused as rejected:
            await self._refuse(exchange, rejected)

    async def _refuse(self, exchange: Exchange, rejected: RequestRefused, lane: str | None = None) -> None:
        """Answer a frame with an `error` frame (the socket stays open), on a lane tagged with its `stream_id`."""
        fields = rejected.fields
        frame = errors.ws_error_frame(
            rejected.status,
            str(fields.get("message", "")),
            type=fields.get("type"),
            code=fields.get("code"),
            param=fields.get("param"),
            headers=rejected.headers or None,
        )
        if lane is not None:
            frame["stream_id"] = lane
        exchange.response_status = rejected.status
        exchange.response_headers = rejected.headers
        try:
            await self.ws.send_text(json.dumps(frame))
        except (OSError, WebSocketDisconnect, RuntimeError):
            exchange.outcome = Outcome(OutcomeKind.DISCONNECTED)
            return
        exchange.outcome = rejected.outcome()

    async def _successor(self, steered: Exchange, plan: ResponsePlan) -> tuple[Exchange, ResponsePlan] | None:
        """The automatic successor of a response steering input was accepted for (it ended steered, or completed
        first), created on the same socket with the steered one's settings and the queued input; None when there
        is none to create."""
        queue = plan.steer
        outcome = steered.outcome
        if queue is not None and queue.awaited and not queue.requested and not self.gone.is_set():
            await self._take_steers(queue)
        if queue is None or not queue.requested or outcome is None:
            return None
        if outcome.kind not in (OutcomeKind.COMPLETED, OutcomeKind.INCOMPLETE) or not steered.response_id:
            return None
        _, output, _ = stated_of(steered, with_response=False)
        wire = successor_request(steered.wire_request or {}, steered.response_id, queue.input)
        exchange = self.state.capture.new_exchange("ws", self.connection.handshake_headers, None, self.connection)
        exchange.wire_request, exchange.successor_of = wire, steered.response_id
        logical = rebuild_logical(wire, input_items(steered.logical_request or {}), output)
        exchange.logical_request = logical
        try:
            successor = await self.responder.plan(exchange, self.connection.handshake_headers, wire, logical)
        except RequestRefused as rejected:
            await self._refuse(exchange, rejected)
            return None
        return exchange, successor

    async def _steer(self, exchange: Exchange, frame: dict[str, Any]) -> None:
        """A steer frame, answered by the source (accepted, pending or failed): its answer is not a response. Input
        accepted for a response streaming now (the one the frame names, on any lane) stops it at its next output
        boundary; its successor commits the input."""
        start = time.monotonic()
        ids = self.state.ids
        events = await self.state.source.steer(frame, connection_id=self.connection.id, ids=ids)
        if events is None:
            events = answer_steer(frame, None, ids)
        queue = self.active.get(str(frame.get("previous_response_id")))
        kinds = {event.get("type") for event in events}
        if queue is not None and STEER_ACCEPTED in kinds and STEER_PENDING not in kinds:  # pending: no successor
            queue.accept(frame)
        for event in events:
            try:
                await self.send([planned(event, "ws").wire])
            except ChannelGone:
                exchange.outcome = Outcome(OutcomeKind.DISCONNECTED, len(exchange.events))
                return
            exchange.events.append(SentEvent(time.monotonic() - start, event))
        exchange.outcome = Outcome(OutcomeKind.ANSWERED, len(exchange.events))

    def _relays_frames(self) -> bool:
        return self.state.source.relays_frames

    async def _relay_frame(self, exchange: Exchange, text: str) -> None:
        """A client frame that is not a request, sent on upstream as it came; what the upstream answers to it
        (often nothing) is passed back and recorded."""
        relay = self.state.source.relay_frame
        start = time.monotonic()
        try:
            async with contextlib.aclosing(relay(self.connection.id, text)) as replies:
                async for raw in replies:
                    await self.send([raw])
                    with contextlib.suppress(ValueError):  # UnsafeJSON: passed on, not recorded as an event
                        event = parse_peer_json(raw, what="upstream frame")
                        if isinstance(event, dict) and isinstance(event.get("type"), str):
                            exchange.events.append(SentEvent(time.monotonic() - start, event))
        except ChannelGone:
            exchange.outcome = Outcome(OutcomeKind.DISCONNECTED, len(exchange.events))
        finally:  # the client may leave while the proxy still waits for more: what came was the answer
            if exchange.outcome is None:
                exchange.outcome = Outcome(OutcomeKind.ANSWERED, len(exchange.events))

    async def send(self, wires: Sequence[str | bytes]) -> None:
        try:
            if self.write_frames is not None:
                await self.write_frames(wires)
            else:
                for wire in wires:
                    await self.ws.send({"type": "websocket.send", "text": wire})
        except (OSError, WebSocketDisconnect, RuntimeError) as error:
            self._client_gone(error.code if isinstance(error, WebSocketDisconnect) else ABNORMAL_CLOSURE)
            raise ChannelGone from error

    async def pause(self, seconds: float) -> bool:
        return await first_of(self.stopping, timeout=seconds)

    async def finish(self) -> None:
        """A WebSocket response ends with its terminal event; the socket stays open."""

    def _client_gone(self, code: int | None) -> None:
        """Record that the client went away (1006: without a close frame), unless the server closed first; while
        the server stops, it is the server that closed (uvicorn's shutdown sends 1012, service restart)."""
        if self.connection.closed_by is None and self.stopping.is_set():
            self.connection.closed_by, self.connection.close_code = "server", SERVICE_RESTART
        elif self.connection.closed_by is None and code == MESSAGE_TOO_BIG:  # uvicorn closed it for the limit
            self.connection.closed_by, self.connection.close_code = "server", code
            self.state.counts.refused_for_limit["ws-message"] += 1
        elif self.connection.closed_by is None:
            self.connection.closed_by, self.connection.close_code = "client", code

    async def stall(self) -> None:
        """Send nothing more; wait for the client to give up (or the server to stop)."""
        await first_of(self.stopping, self.gone)
        self._client_gone(self.gone_code)  # the client gave up, or the server stopped (closed by the server)

    async def cut(self, how: CloseKind, code: int, reason: str) -> None:
        self.connection.ended_at = time.time()
        if how == "tcp":
            transport = connection_transport(self.ws.scope)
            if transport is None:
                raise ConnectionAbortedError("rrkit: scripted TCP close (no transport to close)")
            transport.close()
            self.connection.closed_by = "tcp"
            return
        if how == "end":
            code = NORMAL_CLOSURE  # the close of a socket whose work is done
        self.connection.closed_by, self.connection.close_code = "server", code
        with contextlib.suppress(OSError, RuntimeError):
            await self.ws.close(code, reason)


def _steer_frame(message: Message) -> dict[str, Any] | None:
    """The steer frame a client message holds, else None."""
    text = message.get("text")
    if message.get("type") != "websocket.receive" or not isinstance(text, str) or not is_steer(text):
        return None
    body = parse_json(text, what="frame")  # read once already (is_steer): it is JSON
    return body if isinstance(body, dict) else None
