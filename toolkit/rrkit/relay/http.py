"""The HTTP relay: a request sent upstream as the client sent it (a create's body POSTed; any other method and path
under the upstream's base with its body bytes), with its query string; an event stream relayed read by read as the
bytes arrive, any other answer (a response object, an error, an HTML page) as one whole body with its status;
redirects handed to the client unless same-origin ones are to be followed."""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import AsyncGenerator, AsyncIterable
from typing import cast

import httpx

from ..protocol.exceptions import SSEMessageTooLong
from ..protocol.headers import TURN_STATE_HEADER, media_type
from ..protocol.outcome import response_id_of_body
from ..protocol.plan import EventRuns, Rejection, ResponsePlan, StreamCut, VerbatimBody
from ..protocol.sse import encode_json
from ..protocol.vocabulary import Transport
from ..script.select import RequestView
from .events import UpstreamSSE, drain
from .h11transport import H11Body, H11Transport
from .headers import forwarded_request_headers, response_headers
from .refusal import UPSTREAM_ERROR_STATUS, upstream_error
from .settings import RelaySettings, with_query

log = logging.getLogger("rrkit.proxy")

MAX_REDIRECTS = 5
"""Same-origin redirects followed for one request at most; the next one is handed to the client."""


class HttpRelay:
    """Relays requests to the upstream's HTTP endpoints; `aclose()` on the loop that used it."""

    def __init__(self, settings: RelaySettings) -> None:
        self.settings = settings
        self._http: H11Transport | None = None
        self._url = httpx.URL(settings.http_url)  # parsed once: a request without a query string goes there

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    def _transport(self) -> H11Transport:
        """The HTTP transport, used without an httpx client: no environment proxy (the upstream is exactly what
        was given), no redirects followed, no cookies kept, no default headers added to the client's."""
        if self._http is None:
            self._http = H11Transport()
        return self._http

    async def select(self, request: RequestView) -> ResponsePlan:
        """POST the create's body as the client sent it (encoded, if it was) with the client's query string."""
        headers = forwarded_request_headers(request.headers)
        headers.setdefault("content-type", "application/json")
        if request.body is not None:
            body = request.body
        else:
            body = encode_json(dict(request.wire))
            headers.pop("content-encoding", None)
        shown = with_query(self.settings.http_url, request.query)  # as given: its secrets are redacted in messages
        url = self._url if shown == self.settings.http_url else httpx.URL(shown)
        return await self.relay("POST", shown, url, headers, body, request.transport)

    async def select_route(self, request: RequestView) -> ResponsePlan:
        """Any other method and path under the upstream's base: the client's method, path, query string, headers
        (by the same policy) and body bytes as sent (none when it sent none)."""
        shown = self.settings.route_url(request.path, request.query)
        headers = forwarded_request_headers(request.headers)
        return await self.relay(request.method, shown, httpx.URL(shown), headers, request.body or None, "http")

    async def relay(
        self,
        method: str,
        shown: str,
        url: httpx.URL,
        headers: dict[str, str],
        body: bytes | None,
        transport: Transport,
    ) -> ResponsePlan:
        """Send one request upstream (`shown`: its URL as given, for messages) and relay the answer: an event
        stream as it arrives, read by read, anything else as one whole body with its status; same-origin
        redirects followed if the settings say so; a failure, or an answer too large, as a 502 naming it."""
        headers["accept-encoding"] = "identity"
        timeouts = {"connect": self.settings.connect_timeout, "read": self.settings.timeout}
        for hop in itertools.count():
            upstream = httpx.Request(method, url, content=body, headers=headers, extensions={"timeout": timeouts})
            try:
                response = await self._transport().handle_async_request(upstream)
            except httpx.HTTPError as error:
                return _failed(self.settings.shown(f"{method} {shown} failed: {type(error).__name__}: {error}"))
            target = self._redirect_target(url, response) if hop < MAX_REDIRECTS else None
            if target is None:
                break
            await response.aclose()
            log.info(
                "rrkit proxy: %s",
                self.settings.shown(f"{method} {shown}: {response.status_code}, followed to {target}"),
            )
            shown, url = target, httpx.URL(target)
        forwarded = response_headers(response.headers.multi_items())
        turn_state = response.headers.get(TURN_STATE_HEADER)
        content_type = response.headers.get("content-type", "")
        if 200 <= response.status_code < 300 and media_type(content_type) == "text/event-stream":
            return ResponsePlan(
                self._relay_sse(response, transport),
                turn_state=turn_state,
                headers=forwarded,
                model=response.headers.get("openai-model"),
                release=response.aclose,
            )
        try:
            content = await _read_whole(response, self.settings.max_message)
        except _TooLarge as error:
            return _failed(self.settings.shown(f"{method} {shown}: the answer is {error} (--limit upstream-message)"))
        except httpx.HTTPError as error:
            return _failed(
                self.settings.shown(f"{method} {shown}: the answer broke off: {type(error).__name__}: {error}")
            )
        finally:
            await response.aclose()
        body_of = VerbatimBody(response.status_code, content, content_type or "application/octet-stream")
        return ResponsePlan(
            response_id=response_id_of_body(content) or "", body=body_of, turn_state=turn_state, headers=forwarded
        )

    def _redirect_target(self, here: httpx.URL, response: httpx.Response) -> str | None:
        """Where a redirect the proxy follows points (`redirects="same-origin"`: a 307 or 308 to the same scheme,
        host and port); None for every other answer, handed to the client as it came."""
        location = response.headers.get("location")
        if self.settings.redirects != "same-origin" or response.status_code not in (307, 308) or not location:
            return None
        try:
            there = here.join(location)
        except httpx.InvalidURL:
            return None
        same = (there.scheme, there.host, there.port) == (here.scheme, here.host, here.port)
        return str(there) if same else None

    async def _relay_sse(self, response: httpx.Response, transport: Transport) -> EventRuns:
        """The events (and keep-alive comments) of each read of the body as one run, as soon as its bytes
        arrive; a stream that ends (or breaks) before a terminal event is cut."""
        upstream = UpstreamSSE(transport, self.settings.max_message)
        try:
            # The raw bytes when the body is not encoded (the proxy asks for identity).
            encoded = response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity")
            if encoded:
                reads: AsyncIterable[bytes] = response.aiter_bytes()
            else:  # the transport's own stream: httpx's chunking layers cost more than the relay's parse of a read
                reads = response.stream if isinstance(response.stream, H11Body) else response.aiter_raw()
            body = cast(AsyncGenerator[bytes, None], aiter(reads))  # typed as an iterator, is a generator
            async with contextlib.aclosing(body) as chunks:
                async for chunk in chunks:
                    run, end = upstream.feed(chunk)
                    if run:
                        yield run
                    if isinstance(end, StreamCut):
                        raise end
                    if end:
                        await drain(chunks)
                        return
        except httpx.HTTPError as error:
            raise StreamCut("tcp", reason=f"upstream stream broke: {type(error).__name__}") from None
        except SSEMessageTooLong as error:
            raise StreamCut("tcp", reason=f"upstream sent {error} (--limit upstream-message)") from None
        finally:
            await response.aclose()
        raise StreamCut("tcp", reason="upstream ended the stream before a terminal event")


class _TooLarge(Exception):
    """A whole answer that outgrew the limit: the client gets a 502 naming it."""


def _failed(message: str) -> ResponsePlan:
    """What the client gets when the upstream could not be reached or read: a 502 naming what failed."""
    log.warning("rrkit proxy: %s", message)
    return ResponsePlan(rejection=Rejection(UPSTREAM_ERROR_STATUS, upstream_error(message)))


async def _read_whole(response: httpx.Response, limit: int) -> bytes:
    """A whole (not streamed) answer, given up on once it outgrows `limit` bytes."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _TooLarge(f"more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
