"""`UpstreamSource`: the reply source that forwards each request (a create, or any other method and path under the
upstream's base) to an upstream Responses endpoint and relays its answer live (HTTP: relay/http.py, WebSocket:
relay/websocket.py). The fake server's app does everything else (validation, logical-request rebuilding, capture,
the one streaming engine), so a server answering from an `UpstreamSource` is a recording proxy."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping

from ..protocol.limits import UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_TIMEOUT, Limits
from ..protocol.plan import ResponsePlan
from ..script.models import Handshake
from ..script.select import NoMatch, ReplySource, RequestView
from .http import HttpRelay
from .settings import FRAME_REPLY_WINDOW, RelaySettings
from .websocket import WebSocketRelay


class UpstreamSource(ReplySource):
    """A `ReplySource` that forwards to an upstream Responses endpoint (`base_url`, e.g. `http://host/v1`).

    `timeout` is how long the upstream may stay silent before a stream counts as cut (None: no limit);
    `connect_timeout` how long reaching it may take; `max_message` what is read of it at once; `redirects` one of
    `none`, `same-origin` (relay/settings.py). Close it with `await source.aclose()` on the event loop that used
    it. Secrets in `base_url` (userinfo, key-like query values) never appear in its messages: `shown_url` is the
    URL with them redacted, `secrets` what was redacted.
    """

    relays_unknown_ids = True  # a `previous_response_id` the proxy never saw is the upstream's to answer
    relays_frames = True  # client frames other than `response.create` go upstream too
    answers_every_route = True  # any other method and path goes upstream as it came

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | None = UPSTREAM_TIMEOUT,
        connect_timeout: float = UPSTREAM_CONNECT_TIMEOUT,
        frame_reply_window: float = FRAME_REPLY_WINDOW,
        max_message: int = Limits().upstream_message,
        redirects: str = "none",
    ) -> None:
        self.settings = RelaySettings.of(
            base_url,
            timeout=timeout,
            connect_timeout=connect_timeout,
            frame_reply_window=frame_reply_window,
            max_message=max_message,
            redirects=redirects,
        )
        self._http = HttpRelay(self.settings)
        self._ws = WebSocketRelay(self.settings)

    @property
    def shown_url(self) -> str:
        return self.settings.shown_url

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.settings.secrets

    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        relay = self._ws if request.transport == "ws" else self._http
        return await relay.select(request)

    async def select_route(self, request: RequestView) -> ResponsePlan:
        return await self._http.select_route(request)

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        return await self._ws.select_handshake(headers, connection_id=connection_id, query=query)

    async def connection_closed(self, connection_id: int) -> None:
        await self._ws.connection_closed(connection_id)

    def relay_frame(self, connection_id: int | None, text: str) -> AsyncGenerator[str, None]:
        return self._ws.relay_frame(connection_id, text)

    async def aclose(self) -> None:
        """Close every upstream socket and the HTTP client."""
        await self._ws.aclose()
        await self._http.aclose()
