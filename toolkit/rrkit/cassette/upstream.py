"""A reply source that forwards each request to an upstream Responses endpoint and relays its answer live.

The fake server's app does everything else (validation, logical-request rebuilding, capture, the one
streaming engine), so a server answering from an `UpstreamSource` is a recording proxy.

- HTTP: the body, as the client sent it, is POSTed to `{base_url}/responses` with the client's query string;
  an event stream is relayed as the bytes arrive, the events of each read as one run (keep-alive comments
  included), any other answer (a JSON response object, an error, an HTML page) as one whole body with its
  status and headers.
- WebSocket: one upstream socket per client connection, opened at the client's upgrade so that an upstream
  refusal (426 or any status) reaches the client as the same refusal; each client frame is sent upstream
  and the upstream frames are relayed until a terminal event, the frames of each read as one run (the socket
  runs on websockets' sans-I/O protocol: wsclient.py).

Each event is checked as it passes (a JSON object with a string `type`) and parsed exactly only if read.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from ..protocol import errors
from ..protocol.events import COMPLETED, ENDING_TYPES, ERROR
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.limits import UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_TIMEOUT, Limits
from ..protocol.outcome import response_id_of_body
from ..protocol.plan import (
    RUN_EVENTS,
    EventRuns,
    PlannedEvent,
    Rejection,
    ResponsePlan,
    StreamCut,
    VerbatimBody,
    sse_comment,
    verbatim,
)
from ..protocol.request import RESPONSE_CREATE
from ..protocol.sse import SSEDecoder, SSEMessage, SSEMessageTooLong, encode_json
from ..protocol.vocabulary import Transport
from ..script.models import Handshake
from ..script.select import NoMatch, ReplySource, RequestView
from .redact import redact_url, url_secrets
from .wsclient import UpstreamWS, ws_connect

log = logging.getLogger("rrkit.proxy")

DEFAULT_TIMEOUT = UPSTREAM_TIMEOUT
DEFAULT_CONNECT_TIMEOUT = UPSTREAM_CONNECT_TIMEOUT
UPSTREAM_ERROR_STATUS = 502
REDIRECTS = ("none", "same-origin")
"""What a relay does with an upstream's redirect: hand it to the client as it came (`none`), or follow a 307 or
308 (which keep the POST and its body) when it names the upstream's own scheme, host and port (`same-origin`)."""
MAX_REDIRECTS = 5
FRAME_REPLY_WINDOW = 0.5
"""Seconds the proxy waits for the upstream's answer to a client frame other than a request (it may send none)."""
_DRAIN_SECONDS = 1.0

# Hop-by-hop and transport headers: never forwarded upstream (the proxy's own connection sets them).
_REQUEST_DROP = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
        "proxy-authorization",
        "accept-encoding",
    }
)
# ...and not passed back to the client: the fake server's app frames its own responses.
_RESPONSE_DROP = frozenset(
    {
        "content-length",
        "content-type",
        "content-encoding",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "date",
        "server",
        TURN_STATE_HEADER,
    }
)


def _is_transport_header(name: str, drop: frozenset[str]) -> bool:
    return name in drop or name.startswith("sec-websocket-")


def forwarded_request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's request headers to send upstream: all but hop-by-hop and transport ones."""
    return {k.lower(): v for k, v in headers.items() if not _is_transport_header(k.lower(), _REQUEST_DROP)}


def response_headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The upstream's response headers worth passing on (retry-after, x-request-id, openai-model, rate limits,
    ...): all but hop-by-hop, framing and transport ones, and the turn state (passed on separately)."""
    kept: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        if _is_transport_header(key, _RESPONSE_DROP):
            continue
        kept[key] = f"{kept[key]}, {value}" if key in kept else value
    return kept


def _endpoints(base_url: str) -> tuple[str, str]:
    """(HTTP URL, WebSocket URL) of `{base_url}/responses`; a URL that is not http(s) or ws(s) is an error."""
    shown = redact_url(base_url.strip())
    try:
        parts = urlsplit(base_url.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as error:
        raise ValueError(f"invalid upstream URL {shown!r}: {error}") from None
    schemes = {"http": ("http", "ws"), "https": ("https", "wss"), "ws": ("http", "ws"), "wss": ("https", "wss")}
    if parts.scheme.lower() not in schemes or not parts.hostname:
        raise ValueError(
            f"invalid upstream URL {shown!r}: expected http(s)://host[:port][/path], "
            "the base URL of a Responses endpoint (for example https://api.openai.com/v1)"
        )
    http_scheme, ws_scheme = schemes[parts.scheme.lower()]
    path = parts.path.rstrip("/") + "/responses"
    http = urlunsplit((http_scheme, parts.netloc, path, parts.query, ""))
    return http, urlunsplit((ws_scheme, parts.netloc, path, parts.query, ""))


def _json_body(raw: bytes | bytearray, status: int) -> dict[str, Any]:
    """An upstream error body as a JSON object (a non-JSON body becomes an OpenAI-shaped error with its text)."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    text = raw.decode("utf-8", errors="replace").strip() or f"Upstream answered with status {status}."
    return errors.error_body(text, type_=errors.default_error_type(status))


def _with_query(url: str, query: str) -> str:
    """`url` with the client's query string added to its own (the upstream's base URL may carry one)."""
    if not query:
        return url
    return f"{url}&{query}" if urlsplit(url).query else f"{url}?{query}"


def _upstream_error(message: str, code: str = "upstream_unreachable") -> dict[str, Any]:
    return errors.error_body(f"rrkit proxy: {message}", type_="server_error", code=code)


def _planned(raw: str, transport: Transport) -> tuple[PlannedEvent, str]:
    """One upstream event made ready for the client's transport, and its type; anything but a JSON object with
    a string `type` is a protocol error, which cuts the stream. The text is checked now (orjson) and parsed
    exactly only if the event is read (a recording); only an SSE event whose data spans lines is re-encoded to
    one line."""
    text = raw if raw.startswith("{") and raw.endswith("}") else raw.strip()  # no copy in the common case
    if not text.startswith("{"):
        raise StreamCut("tcp", reason="upstream sent an event that is not a JSON object")
    try:
        if transport != "ws" and ("\n" in text or "\r" in text):
            text = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))  # SSE data: one line
        try:
            kind = orjson.loads(text).get("type")
        except orjson.JSONDecodeError:  # NaN, a lone surrogate: what only the standard library reads
            kind = json.loads(text).get("type")
    except ValueError:
        raise StreamCut("tcp", reason="upstream sent an event that is not valid JSON") from None
    if not isinstance(kind, str):
        raise StreamCut("tcp", reason="upstream sent an event without a `type`")
    planned = verbatim(text, transport, lazy=True)
    if getattr(planned, "type", kind) != kind:  # `type` stated twice: the last is the event's (as parsed)
        planned = verbatim(text, transport)
    return planned, kind


def _sse_run(messages: list[SSEMessage], transport: Transport) -> tuple[list[PlannedEvent], bool | StreamCut]:
    """The events of one read's SSE messages (comments included, `[DONE]` left out), up to a terminal event
    (then True) or one that cuts the stream (then that cut, raised once the events before it went out)."""
    run: list[PlannedEvent] = []
    for message in messages:
        if message.comment is not None:
            run.append(sse_comment(message.comment))
        elif message.data != "[DONE]":
            try:
                planned, kind = _planned(message.data, transport)
            except StreamCut as cut:
                return run, cut
            run.append(planned)
            if kind in ENDING_TYPES:
                return run, True
    return run, False


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the terminal event (`[DONE]`, the end of the body) for a moment: a body read to its
    end keeps its connection for the next request, and leaves none of httpx's nested stream generators to be
    finalized later (when the loop may be gone)."""
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in chunks:
                pass


def _cut_of(closed: ConnectionClosed) -> StreamCut:
    """The upstream closed its socket: a close frame with a code is passed on as such, else a bare TCP close."""
    received = closed.rcvd
    if received is not None and 1000 <= received.code <= 4999 and received.code not in (1005, 1006, 1015):
        return StreamCut("frame", received.code, received.reason)
    return StreamCut("tcp", reason="upstream closed the socket without a close frame")


class _Watchdog:
    """One idle timer per relayed stream, instead of a timeout scope per read: `waiting()` before each read and
    `arrived()` after it are attribute writes and a clock read; if a read waits `timeout` seconds, `expire` runs
    once (it aborts the upstream connection, so that the pending read fails at once) and `expired` is set."""

    __slots__ = ("_expire", "_handle", "_loop", "_since", "_timeout", "_waiting", "expired")

    def __init__(self, timeout: float, expire: Callable[[], object]) -> None:
        self._loop = asyncio.get_running_loop()
        self._timeout = timeout
        self._expire = expire
        self._since = self._loop.time()
        self._waiting = False
        self.expired = False
        self._handle: asyncio.TimerHandle | None = self._loop.call_at(self._since + timeout, self._check)

    def waiting(self) -> None:
        self._since = self._loop.time()
        self._waiting = True

    def arrived(self) -> None:
        self._waiting = False

    def _check(self) -> None:
        now = self._loop.time()
        if self._waiting and now - self._since >= self._timeout:
            self._handle = None
            self.expired = True
            with contextlib.suppress(Exception):
                self._expire()
            return
        start = self._since if self._waiting else now  # not waiting (the client is slow): nothing is late yet
        self._handle = self._loop.call_at(start + self._timeout, self._check)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def astop(self) -> None:
        self.stop()


class _NoWatchdog:
    """`timeout=None`: the upstream may stay silent for ever."""

    expired = False

    def waiting(self) -> None:
        pass

    def arrived(self) -> None:
        pass

    def stop(self) -> None:
        pass

    async def astop(self) -> None:
        pass


def _offers_deflate(headers: Mapping[str, str]) -> bool:
    """Whether the client's upgrade offered permessage-deflate (the proxy asks the upstream for no more)."""
    return any(
        name.lower() == "sec-websocket-extensions" and "permessage-deflate" in value.lower()
        for name, value in headers.items()
    )


async def _cut_at_once(cut: StreamCut) -> EventRuns:
    raise cut
    yield  # an async generator that never yields


@dataclass
class _UpstreamSocket:
    """The upstream WebSocket of one client connection, and the responses it completed itself."""

    ws: UpstreamWS
    query: str = ""
    completed: set[str] = field(default_factory=set)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()


class _TooLarge(Exception):
    pass


async def _read_whole(response: httpx.Response, limit: int) -> bytes:
    """A whole (not streamed) answer, given up on once it outgrows `limit` bytes."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _TooLarge(f"more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


class UpstreamSource(ReplySource):
    """A `ReplySource` that forwards to an upstream Responses endpoint (`base_url`, e.g. `http://host/v1`).

    `timeout` is how long the upstream may stay silent before a stream counts as cut (None: no limit).
    Close it with `await source.aclose()` on the event loop that used it. Secrets in `base_url` (userinfo,
    key-like query values) never appear in its messages: `shown_url` is the URL with them redacted.
    """

    relays_unknown_ids = True  # a `previous_response_id` the proxy never saw is the upstream's to answer
    relays_frames = True  # client frames other than `response.create` go upstream too

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        frame_reply_window: float = FRAME_REPLY_WINDOW,
        max_message: int = Limits().upstream_message,
        redirects: str = "none",
    ) -> None:
        if redirects not in REDIRECTS:
            raise ValueError(f"redirects={redirects!r}: give one of {', '.join(REDIRECTS)}")
        self.base_url = base_url.strip()
        self.http_url, self.ws_url = _endpoints(self.base_url)
        self.shown_url = redact_url(self.base_url)
        self.secrets = url_secrets(self.base_url)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.frame_reply_window = frame_reply_window
        self.max_message = max_message  # an SSE line or message still unfinished at this size is cut
        self.redirects = redirects
        self._http: httpx.AsyncHTTPTransport | None = None
        self._sockets: dict[int | None, _UpstreamSocket] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def _upgrade_failed(self, error: BaseException) -> str:
        """Why the upstream WebSocket could not be opened, its URL's secrets redacted."""
        if isinstance(error, TimeoutError):
            why = f"no answer within {self.connect_timeout:g} s (the connect timeout, --upstream-connect-timeout)"
        else:
            why = f"{type(error).__name__}: {error}"
        return self._shown(f"WebSocket upgrade to {self.ws_url} failed: {why}")

    def _shown(self, text: str) -> str:
        """`text` (an error message that may quote the URL) with the URL's secrets redacted."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "[REDACTED]")
        return text

    # -- ReplySource ----------------------------------------------------------------------------
    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        if request.transport == "ws":
            return await self._select_ws(request)
        return await self._select_http(request)

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        """Open the upstream socket for this client connection now, so that its answer is the client's."""
        self._drop_socket(connection_id)  # a reused id: the old socket is over
        try:
            socket = await self._connect(headers, query)
        except InvalidStatus as refused:
            response = refused.response
            status = response.status_code if 300 <= response.status_code <= 599 else UPSTREAM_ERROR_STATUS
            return Handshake(
                refuse=status,
                refuse_headers=response_headers(response.headers.raw_items()),
                refuse_body=_json_body(response.body, status) if response.body else None,
            )
        except (OSError, TimeoutError, WebSocketException) as error:
            message = self._upgrade_failed(error)
            log.warning("rrkit proxy: %s", message)
            return Handshake(refuse=UPSTREAM_ERROR_STATUS, refuse_body=_upstream_error(message))
        self._sockets[connection_id] = _UpstreamSocket(socket, query)
        upgrade = socket.response
        items = upgrade.headers.raw_items() if upgrade is not None else []
        turn_state = upgrade.headers.get(TURN_STATE_HEADER) if upgrade is not None else None
        return Handshake(turn_state=turn_state, headers=response_headers(items))

    async def connection_closed(self, connection_id: int) -> None:
        """The client's socket ended: close its upstream socket (in the background: the client is gone,
        and the server's task for that socket must end at once)."""
        self._drop_socket(connection_id)

    def _drop_socket(self, connection_id: int | None) -> None:
        socket = self._sockets.pop(connection_id, None)
        if socket is not None:
            self._close_later(socket)

    def _close_later(self, socket: _UpstreamSocket) -> None:
        task = asyncio.get_running_loop().create_task(socket.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def unused(self) -> list[str]:
        return []

    def reset(self) -> None:
        """Nothing to start over: every request goes upstream."""

    async def aclose(self) -> None:
        """Close every upstream socket and the HTTP client."""
        sockets = list(self._sockets.values())
        self._sockets.clear()
        await asyncio.gather(*(socket.close() for socket in sockets), *self._closing)
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    # -- HTTP -------------------------------------------------------------------------------------
    def _transport(self) -> httpx.AsyncHTTPTransport:
        """The HTTP transport, used without an httpx client: no environment proxy (the upstream is exactly what
        was given), no redirects followed, no cookies kept, no default headers added to the client's."""
        if self._http is None:
            self._http = httpx.AsyncHTTPTransport()
        return self._http

    async def _select_http(self, request: RequestView) -> ResponsePlan:
        """POST the body as the client sent it (encoded, if it was) with the client's query string; relay the
        answer: a stream as it arrives, read by read, anything else as one whole body with its status."""
        headers = forwarded_request_headers(request.headers)
        headers["accept-encoding"] = "identity"
        headers.setdefault("content-type", "application/json")
        if request.body is not None:
            body = request.body
        else:
            body = encode_json(dict(request.wire))
            headers.pop("content-encoding", None)
        url = _with_query(self.http_url, request.query)
        timeouts = {"connect": self.connect_timeout, "read": self.timeout}
        for hop in itertools.count():
            upstream = httpx.Request("POST", url, content=body, headers=headers, extensions={"timeout": timeouts})
            try:
                response = await self._transport().handle_async_request(upstream)
            except httpx.HTTPError as error:
                message = self._shown(f"POST {url} failed: {type(error).__name__}: {error}")
                log.warning("rrkit proxy: %s", message)
                return ResponsePlan(rejection=Rejection(UPSTREAM_ERROR_STATUS, _upstream_error(message)))
            target = self._redirect_target(url, response) if hop < MAX_REDIRECTS else None
            if target is None:
                break
            await response.aclose()
            log.info("rrkit proxy: %s", self._shown(f"POST {url}: {response.status_code}, followed to {target}"))
            url = target
        forwarded = response_headers(response.headers.multi_items())
        turn_state = response.headers.get(TURN_STATE_HEADER)
        content_type = response.headers.get("content-type", "")
        if 200 <= response.status_code < 300 and content_type.split(";")[0].strip().lower() == "text/event-stream":
            return ResponsePlan(
                self._relay_sse(response, request.transport),
                turn_state=turn_state,
                headers=forwarded,
                model=response.headers.get("openai-model"),
                release=response.aclose,
            )
        try:
            content = await _read_whole(response, self.max_message)
        except _TooLarge as error:
            message = self._shown(f"POST {url}: the answer is {error} (--limit upstream-message)")
            log.warning("rrkit proxy: %s", message)
            return ResponsePlan(rejection=Rejection(UPSTREAM_ERROR_STATUS, _upstream_error(message)))
        except httpx.HTTPError as error:
            message = self._shown(f"POST {url}: the answer broke off: {type(error).__name__}: {error}")
            log.warning("rrkit proxy: %s", message)
            return ResponsePlan(rejection=Rejection(UPSTREAM_ERROR_STATUS, _upstream_error(message)))
        finally:
            await response.aclose()
        body_of = VerbatimBody(response.status_code, content, content_type or "application/octet-stream")
        return ResponsePlan(
            response_id=response_id_of_body(content) or "", body=body_of, turn_state=turn_state, headers=forwarded
        )

    def _redirect_target(self, url: str, response: httpx.Response) -> str | None:
        """Where a redirect the proxy follows points (`redirects="same-origin"`: a 307 or 308 to the same scheme,
        host and port); None for every other answer, handed to the client as it came."""
        location = response.headers.get("location")
        if self.redirects != "same-origin" or response.status_code not in (307, 308) or not location:
            return None
        here = httpx.URL(url)
        try:
            there = here.join(location)
        except httpx.InvalidURL:
            return None
        same = (there.scheme, there.host, there.port) == (here.scheme, here.host, here.port)
        return str(there) if same else None

    async def _relay_sse(self, response: httpx.Response, transport: Transport) -> EventRuns:
        """The events (and keep-alive comments) of each read of the body as one run, as soon as its bytes
        arrive; a stream that ends (or breaks) before a terminal event is cut."""
        decoder = SSEDecoder(keep_comments=True, max_message=self.max_message)
        try:
            # The raw bytes when the body is not encoded (the proxy asks for identity).
            encoded = response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity")
            reads = response.aiter_bytes() if encoded else response.aiter_raw()
            body = cast(AsyncGenerator[bytes, None], reads)  # typed as an iterator, is a generator
            async with contextlib.aclosing(body) as chunks:
                async for chunk in chunks:
                    run, end = _sse_run(decoder.feed(chunk), transport)
                    if run:
                        yield run
                    if isinstance(end, StreamCut):
                        raise end
                    if end:
                        await _drain(chunks)
                        return
        except httpx.HTTPError as error:
            raise StreamCut("tcp", reason=f"upstream stream broke: {type(error).__name__}") from None
        except SSEMessageTooLong as error:
            raise StreamCut("tcp", reason=f"upstream sent {error} (--limit upstream-message)") from None
        finally:
            await response.aclose()
        raise StreamCut("tcp", reason="upstream ended the stream before a terminal event")

    # -- WebSocket ------------------------------------------------------------------------------
    async def _connect(self, headers: Mapping[str, str], query: str) -> UpstreamWS:
        forwarded = forwarded_request_headers(headers)
        user_agent = forwarded.pop("user-agent", None)
        deflate = _offers_deflate(headers)  # only the compression the client asked for
        url = _with_query(self.ws_url, query)
        return await ws_connect(url, forwarded, user_agent, deflate, self.connect_timeout, self.max_message)

    async def _socket(self, request: RequestView) -> _UpstreamSocket | Rejection:
        """This connection's upstream socket; opened now if its handshake was answered elsewhere (a cassette)."""
        socket = self._sockets.get(request.connection_id)
        if socket is not None:
            return socket
        try:
            ws = await self._connect(request.headers, request.query)
        except InvalidStatus as refused:
            status = refused.response.status_code
            status = status if 400 <= status <= 599 else UPSTREAM_ERROR_STATUS
            body = _json_body(refused.response.body, status)
            headers = response_headers(refused.response.headers.raw_items())
            return Rejection(status, body, headers)
        except (OSError, TimeoutError, WebSocketException) as error:
            return Rejection(UPSTREAM_ERROR_STATUS, _upstream_error(self._upgrade_failed(error)))
        socket = self._sockets[request.connection_id] = _UpstreamSocket(ws, request.query)
        return socket

    async def _recv(self, socket: _UpstreamSocket, timeout: float) -> str:
        """The next upstream frame within `timeout` (ConnectionClosed when the socket ends, TimeoutError when it
        is silent): for frames that may get no answer; a stream's frames are read under its `_Watchdog`."""
        async with asyncio.timeout(timeout):
            return (await socket.ws.ready()).popleft()

    def _watchdog(self, socket: _UpstreamSocket) -> _Watchdog | _NoWatchdog:
        """The idle timer of one stream on `socket`: a silent upstream's socket is aborted, which ends the read."""
        if self.timeout is None:
            return _NoWatchdog()
        transport = socket.ws.transport
        return _Watchdog(self.timeout, transport.abort)

    def _drop(self, connection_id: int | None, socket: _UpstreamSocket) -> None:
        """Forget a broken upstream socket (and close it)."""
        if self._sockets.get(connection_id) is socket:
            del self._sockets[connection_id]
        self._close_later(socket)

    async def _select_ws(self, request: RequestView) -> ResponsePlan:
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
            first, kind = _planned(message, request.transport)
        except ConnectionClosed as closed:
            watchdog.stop()
            self._drop(request.connection_id, socket)
            cut = StreamCut("tcp", reason="upstream sent nothing") if watchdog.expired else _cut_of(closed)
            return ResponsePlan(_cut_at_once(cut))
        except StreamCut as cut:
            watchdog.stop()
            self._drop(request.connection_id, socket)
            return ResponsePlan(_cut_at_once(cut))
        except BaseException:  # cancelled (the client left before the upstream answered)
            watchdog.stop()
            raise
        rejection = _rejection(first.event) if kind == ERROR else None
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
                raw = await self._recv(socket, self.frame_reply_window)
                yield raw
                try:
                    kind = json.loads(raw).get("type")
                except (ValueError, AttributeError):
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
        watchdog: _Watchdog | _NoWatchdog,
    ) -> EventRuns:
        """The upstream's frames as they come, the frames of each socket read as one run, until a terminal event;
        one idle watchdog for the whole stream."""
        try:
            if _ended(socket, *first):
                yield [first[0]]
                return
            run = [first[0]]
            while True:
                yield run
                watchdog.waiting()
                try:
                    messages = await socket.ws.ready()
                except ConnectionClosed as closed:
                    self._drop(connection_id, socket)
                    if watchdog.expired:
                        raise StreamCut("tcp", reason="upstream went silent mid-stream") from None
                    raise _cut_of(closed) from None
                watchdog.arrived()
                run = []
                while messages and len(run) < RUN_EVENTS:
                    try:
                        planned, kind = _planned(messages.popleft(), transport)
                    except StreamCut:
                        self._drop(connection_id, socket)
                        if run:
                            yield run
                        raise
                    run.append(planned)
                    if _ended(socket, planned, kind):
                        yield run
                        return
        finally:
            watchdog.stop()


def _ended(socket: _UpstreamSocket, planned: PlannedEvent, kind: str) -> bool:
    """Whether an upstream frame is a terminal event (a completed response is noted as one the socket knows)."""
    if kind == COMPLETED:
        response = planned.event.get("response")
        if isinstance(response, dict) and response.get("id"):
            socket.completed.add(str(response["id"]))  # later deltas on it can go upstream as they are
    return kind in ENDING_TYPES


def _rejection(event: Mapping[str, Any]) -> Rejection | None:
    """An upstream `error` frame with an error status, as the same rejection (the app sends it as a frame)."""
    status = event.get("status")
    if event.get("type") != ERROR or not isinstance(status, int) or not 400 <= status <= 599:
        return None
    error = event.get("error")
    body = {"error": error if isinstance(error, dict) else {"message": str(error or event.get("message", ""))}}
    raw_headers = event.get("headers")
    headers = {str(k): str(v) for k, v in raw_headers.items()} if isinstance(raw_headers, dict) else {}
    return Rejection(status, body, headers)
