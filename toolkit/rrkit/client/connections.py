"""A client session's connections: one httpx client for POSTs, numbered WebSockets, the one kept between turns."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from websockets.protocol import State

from ..protocol.outcome import OutcomeKind
from .errors import InvalidRequest, connect_failed, http_error
from .sse_transport import SSEStream, open_sse
from .ws_transport import ResponsesSocket, websocket_url

_CLOSE_TIMEOUT = 1.0  # seconds a polite WebSocket close may take before the socket is simply dropped


class Connections:
    """Sockets are numbered 1, 2, ... in the order they were opened or attempted; at most one healthy socket,
    with its incremental baseline, is cached for the next turn."""

    def __init__(self, base_url: str, *, connect_timeout: float, websocket_connect_timeout: float) -> None:
        self.base_url = base_url
        self.responses_url = base_url + "/responses"
        self.ws_url = websocket_url(base_url)
        self.websocket_connect_timeout = websocket_connect_timeout
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(connect_timeout, read=None), trust_env=False)
        self._cached: ResponsesSocket | None = None
        self._serial = 0

    async def aclose(self) -> None:
        await self.drop_cached()
        await self.http.aclose()

    async def post(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> SSEStream:
        return await open_sse(self.http, self.responses_url, body, headers)

    async def resume(self, response_id: str, starting_after: int, headers: Mapping[str, str]) -> SSEStream:
        """A background response's stream again, from the event after `starting_after`."""
        query = urlencode({"stream": "true", "starting_after": starting_after})
        return await open_sse(self.http, f"{self.responses_url}/{quote(response_id, safe='')}?{query}", None, headers)

    async def call(
        self, method: str, path: str, body: Mapping[str, Any] | None, headers: Mapping[str, str]
    ) -> dict[str, Any]:
        """A route of the API answered with a JSON object (not a stream), `path` under the base: the object; an
        error status raises its typed error, as a stream's does."""
        try:
            response = await self.http.request(method, self.base_url + path, json=body, headers=dict(headers))
        except httpx.TransportError as error:
            raise connect_failed(f"HTTP request failed: {error or type(error).__name__}") from error
        if response.status_code != 200:
            raise http_error(response.status_code, response.content, dict(response.headers))
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise InvalidRequest(f"{method} {path}: the answer is not a JSON object", outcome=OutcomeKind.FAILED)
        return answer

    @property
    def serial(self) -> int:
        """The serial number of the last WebSocket connection opened or attempted (0: none yet)."""
        return self._serial

    async def open_socket(self, headers: Mapping[str, str]) -> ResponsesSocket:
        self._serial += 1
        return await ResponsesSocket.open(
            self.ws_url, headers, serial=self._serial, timeout=self.websocket_connect_timeout
        )

    @property
    def has_baseline(self) -> bool:
        """The cached socket holds a last request that the next one may continue from."""
        return self._cached is not None and self._cached.last_request is not None

    def take_cached(self) -> ResponsesSocket | None:
        cached, self._cached = self._cached, None
        if cached is not None and cached.connection.state is not State.OPEN:
            return None
        return cached

    async def give_back(self, socket: ResponsesSocket) -> None:
        """A turn ended with this socket healthy: keep it for the next turn (with its baseline)."""
        if self._cached is None and socket.connection.state is State.OPEN:
            self._cached = socket
        else:
            await self.discard(socket)

    async def drop_cached(self) -> None:
        cached, self._cached = self._cached, None
        if cached is not None:
            await self.discard(cached)

    async def discard(self, socket: ResponsesSocket) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await socket.aclose()
