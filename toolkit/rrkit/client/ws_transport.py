"""WebSocket transport: ResponsesSocket, one connection to /v1/responses that outlives turns, with its baseline."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from ..protocol import events as ev
from ..protocol.incremental import LastResponse
from .errors import connect_failed, dropped, frame_error, handshake_error
from .stream import EventStream


def websocket_url(base_url: str) -> str:
    """`http(s)://host/v1` -> `ws(s)://host/v1/responses`: the same path as HTTP."""
    if base_url.startswith("https://"):
        base_url = "wss://" + base_url.removeprefix("https://")
    elif base_url.startswith("http://"):
        base_url = "ws://" + base_url.removeprefix("http://")
    return base_url.rstrip("/") + "/responses"


class ResponsesSocket(EventStream):
    """One client WebSocket connection and its incremental baseline (last full request, last completed
    response); it may serve many turns in sequence, one response at a time."""

    def __init__(self, connection: ClientConnection, serial: int, handshake_headers: Mapping[str, str]) -> None:
        self.connection = connection
        self.serial = serial
        self.handshake_headers = dict(handshake_headers)
        response = connection.response
        self.response_headers = {k.lower(): v for k, v in response.headers.raw_items()} if response else {}
        self.last_request: dict[str, Any] | None = None
        """The last full *logical* request sent on this connection (never the wire delta)."""
        self.last_response: LastResponse | None = None
        """The last response that completed on this connection, with its done items."""

    @classmethod
    async def open(cls, url: str, headers: Mapping[str, str], *, serial: int, timeout: float) -> ResponsesSocket:
        """Handshake; a refused upgrade raises its typed error (426: UpgradeRequired)."""
        try:
            connection = await connect(
                url,
                additional_headers=dict(headers),
                open_timeout=timeout,
                ping_interval=None,
                max_size=None,
                proxy=None,
                compression="deflate",
            )
        except InvalidStatus as error:
            response = error.response
            raw = {k.lower(): v for k, v in response.headers.raw_items()}
            raise handshake_error(response.status_code, bytes(response.body or b""), raw) from error
        except (OSError, InvalidHandshake, TimeoutError) as error:
            raise connect_failed(f"WebSocket connect failed: {error or type(error).__name__}") from error
        return cls(connection, serial, headers)

    def remember_request(self, logical: Mapping[str, Any]) -> None:
        self.last_request = dict(logical)
        self.last_response = None

    def remember_completed(self, response_id: str, items: list[dict[str, Any]]) -> None:
        self.last_response = LastResponse(response_id, tuple(items))

    async def send(self, frame: Mapping[str, Any]) -> None:
        try:
            await self.connection.send(json.dumps(frame, ensure_ascii=False))
        except ConnectionClosed as error:
            raise dropped(f"socket closed before the request was sent ({error})") from error

    async def next_event(self) -> dict[str, Any] | None:
        """The next event frame; an `error` frame with a status raises its typed error (one without is an
        event like any other: `map_event` ignores it, bar two codes); a frame that is not JSON is skipped."""
        while True:
            try:
                message = await self.connection.recv()
            except ConnectionClosed as error:
                raise dropped(f"socket closed before response.completed ({error})") from error
            text = message.decode("utf-8", errors="replace") if isinstance(message, bytes) else message
            try:
                frame = json.loads(text)
            except ValueError:  # skipped, as Codex 0.169.0 and 0.171.0 skip it (observed)
                continue
            if not isinstance(frame, dict):
                continue
            if frame.get("type") == ev.ERROR and frame.get("status") is not None:
                raise frame_error(frame)
            return frame

    async def aclose(self) -> None:
        await self.connection.close()
