"""The WebSocket relay: one upstream socket per client connection, opened at the client's upgrade (so that an
upstream refusal, 426 or any status, reaches the client as the same refusal); each client frame sent upstream and
the upstream frames relayed until a terminal event, the frames of each read as one run (the socket runs on
websockets' sans-I/O protocol: wsclient.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field

from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from ..protocol.events import COMPLETED, ENDING_TYPES, ERROR
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.jsontext import parse_peer_json
from ..protocol.plan import EventRuns, PlannedEvent, Rejection, ResponsePlan, StreamCut
from ..protocol.request import RESPONSE_CREATE
from ..protocol.sse import encode_json
from ..protocol.vocabulary import Transport
from ..script.models import Handshake
from ..script.select import RequestView
from .events import cut_at_once, cut_of, planned_event, ws_run
from .headers import forwarded_request_headers, offers_deflate, response_headers
from .refusal import UPSTREAM_ERROR_STATUS, frame_rejection, refusal, upstream_error
from .settings import RelaySettings, with_query
from .watchdog import NoWatchdog, Watchdog, idle_timer
from .wsclient import Dialer, UpstreamWS

log = logging.getLogger("rrkit.proxy")


@dataclass
class _UpstreamSocket:
    """The upstream WebSocket of one client connection, and the responses it completed itself."""

    ws: UpstreamWS
    query: str = ""
    completed: set[str] = field(default_factory=set)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()


class WebSocketRelay:
    """Relays the WebSocket connections of the clients, one upstream socket each; `aclose()` on its loop."""

    def __init__(self, settings: RelaySettings) -> None:
        self.settings = settings
        self._sockets: dict[int | None, _UpstreamSocket] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._dialer = Dialer(settings.ws_url, settings.connect_timeout, settings.max_message)

    async def aclose(self) -> None:
        """Close every upstream socket, and the spare connection."""
        await self._dialer.aclose()
        sockets = list(self._sockets.values())
        self._sockets.clear()
        await asyncio.gather(*(socket.close() for socket in sockets), *self._closing)

    def _upgrade_failed(self, error: BaseException) -> str:
        """Why the upstream WebSocket could not be opened, its URL's secrets redacted."""
        if isinstance(error, TimeoutError):
            timeout = self.settings.connect_timeout
            why = f"no answer within {timeout:g} s (the connect timeout, --upstream-connect-timeout)"
        else:
            why = f"{type(error).__name__}: {error}"
        return self.settings.shown(f"WebSocket upgrade to {self.settings.ws_url} failed: {why}")

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        """Open the upstream socket for this client connection now, so that its answer is the client's."""
        self._drop_socket(connection_id)  # a reused id: the old socket is over
        socket = await self._open(headers, query)
        if isinstance(socket, Rejection):
            return Handshake(refuse=socket.status, refuse_headers=socket.headers, refuse_body=socket.body)
        self._sockets[connection_id] = _UpstreamSocket(socket, query)
        upgrade = socket.response
        items = upgrade.headers.raw_items() if upgrade is not None else []
        turn_state = upgrade.headers.get(TURN_STATE_HEADER) if upgrade is not None else None
        return Handshake(turn_state=turn_state, headers=response_headers(items))

    async def connection_closed(self, connection_id: int) -> None:
        """The client's socket ended: close its upstream socket (in the background: the client is gone,
        and the server's task for that socket must end at once). A client that used a WebSocket is likely to
        open another (a new session, a reconnect): a connection for its upgrade is opened now, while no answer
        waits on it."""
        if connection_id in self._sockets:
            self._dialer.keep_spare()
        self._drop_socket(connection_id)

    def _drop_socket(self, connection_id: int | None) -> None:
        socket = self._sockets.pop(connection_id, None)
        if socket is not None:
            self._close_later(socket)

    def _close_later(self, socket: _UpstreamSocket) -> None:
        task = asyncio.get_running_loop().create_task(socket.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _open(self, headers: Mapping[str, str], query: str) -> UpstreamWS | Rejection:
        """An upstream socket for a client connection's upgrade `headers` and `query`, or the one rejection the
        client gets instead: the upstream's refusal as it came, or a 502 saying why it could not be reached."""
        forwarded = forwarded_request_headers(headers)
        user_agent = forwarded.pop("user-agent", None)
        deflate = offers_deflate(headers)  # only the compression the client asked for
        url = with_query(self.settings.ws_url, query)
        try:
            return await self._dialer.connect(url, forwarded, user_agent, deflate)
        except InvalidStatus as refused:
            response = refused.response
            return refusal(response.status_code, response.body, response.headers.raw_items())
        except (OSError, TimeoutError, WebSocketException) as error:
            message = self._upgrade_failed(error)
            log.warning("rrkit proxy: %s", message)
            return Rejection(UPSTREAM_ERROR_STATUS, upstream_error(message))

    async def _socket(self, request: RequestView) -> _UpstreamSocket | Rejection:
        """This connection's upstream socket; opened now if its handshake was answered elsewhere (a cassette)."""
        socket = self._sockets.get(request.connection_id)
        if socket is not None:
            return socket
        ws = await self._open(request.headers, request.query)
        if isinstance(ws, Rejection):
            return ws
        socket = self._sockets[request.connection_id] = _UpstreamSocket(ws, request.query)
        return socket

    async def _recv(self, socket: _UpstreamSocket, timeout: float) -> str:
        """The next upstream frame within `timeout` (ConnectionClosed when the socket ends, TimeoutError when it
        is silent): for frames that may get no answer; a stream's frames are read under its `_Watchdog`."""
        async with asyncio.timeout(timeout):
            return (await socket.ws.ready()).popleft()

    def _watchdog(self, socket: _UpstreamSocket) -> Watchdog | NoWatchdog:
        """The idle timer of one stream on `socket`: a silent upstream's socket is aborted, which ends the read."""
        return idle_timer(self.settings.timeout, socket.ws.transport.abort)

    def _drop(self, connection_id: int | None, socket: _UpstreamSocket) -> None:
        """Forget a broken upstream socket (and close it)."""
        if self._sockets.get(connection_id) is socket:
            del self._sockets[connection_id]
        self._close_later(socket)

    async def select(self, request: RequestView) -> ResponsePlan:
        socket = await self._socket(request)
        if isinstance(socket, Rejection):
            return ResponsePlan(rejection=socket)
        frame = dict(request.wire)
        previous = frame.get("previous_response_id")
        rebuilt = "previous_response_id" not in request.logical
        if previous and previous not in socket.completed and rebuilt:
            # The upstream socket never saw that response (it was replayed from a cassette), but this server
            # did and rebuilt the request: send the whole logical request instead of the delta.
            frame = {"type": RESPONSE_CREATE, **request.logical}
            if "generate" in request.wire:
                frame["generate"] = request.wire["generate"]
        watchdog = self._watchdog(socket)
        try:
            await socket.ws.send(encode_json(frame).decode())
            watchdog.waiting()
            message = (await socket.ws.ready()).popleft()
            watchdog.arrived()
            first, kind = planned_event(message, request.transport)
        except ConnectionClosed as closed:
            watchdog.stop()
            self._drop(request.connection_id, socket)
            cut = StreamCut("tcp", reason="upstream sent nothing") if watchdog.expired else cut_of(closed)
            return ResponsePlan(cut_at_once(cut))
        except StreamCut as cut:
            watchdog.stop()
            self._drop(request.connection_id, socket)
            return ResponsePlan(cut_at_once(cut))
        except BaseException:  # cancelled (the client left before the upstream answered)
            watchdog.stop()
            raise
        rejection = frame_rejection(first.event) if kind == ERROR else None
        if rejection is not None:
            watchdog.stop()
            return ResponsePlan(rejection=rejection)
        relay = self._relay_ws(request.connection_id, socket, (first, kind), request.transport, watchdog)
        return ResponsePlan(relay, release=watchdog.astop)  # stopped however the plan ends, even unplayed

    async def relay_frame(self, connection_id: int | None, text: str) -> AsyncGenerator[str, None]:
        """Forward a client frame that is not a request (`response.steer`, a frame type this proxy does not
        know) as it came, and yield what the upstream answers within `frame_reply_window` of each frame."""
        socket = self._sockets.get(connection_id)
        if socket is None:
            return
        try:
            await socket.ws.send(text)
            while True:
                raw = await self._recv(socket, self.settings.frame_reply_window)
                yield raw
                try:
                    kind = parse_peer_json(raw, what="upstream frame").get("type")
                except (ValueError, AttributeError):  # no JSON object: passed on, and waited past
                    kind = None
                if kind in ENDING_TYPES:
                    return
        except TimeoutError:
            return
        except ConnectionClosed:
            self._drop(connection_id, socket)

    async def _relay_ws(
        self,
        connection_id: int | None,
        socket: _UpstreamSocket,
        first: tuple[PlannedEvent, str],
        transport: Transport,
        watchdog: Watchdog | NoWatchdog,
    ) -> EventRuns:
        """The upstream's frames as they come, the frames of each socket read as one run, until a terminal event;
        one idle watchdog for the whole stream."""
        try:
            if first[1] in ENDING_TYPES:
                _note_completed(socket, first[0], first[1])
                yield [first[0]]
                return
            run: Sequence[PlannedEvent] = [first[0]]
            while True:
                yield run
                watchdog.waiting()
                try:
                    messages = await socket.ws.ready()
                except ConnectionClosed as closed:
                    self._drop(connection_id, socket)
                    if watchdog.expired:
                        raise StreamCut("tcp", reason="upstream went silent mid-stream") from None
                    raise cut_of(closed) from None
                watchdog.arrived()
                run, end = ws_run(messages, transport)
                if isinstance(end, StreamCut):
                    self._drop(connection_id, socket)
                    if run:
                        yield run
                    raise end
                if end:
                    _note_completed(socket, run[-1], run.types[-1])
                    yield run
                    return
        finally:
            watchdog.stop()


def _note_completed(socket: _UpstreamSocket, planned: PlannedEvent, kind: str | None) -> None:
    """A completed response is noted as one the upstream socket knows: later deltas on it go upstream as they
    are."""
    if kind == COMPLETED:
        response = planned.event.get("response")
        if isinstance(response, dict) and response.get("id"):
            socket.completed.add(str(response["id"]))
