"""HTTP + SSE transport over httpx: POST the full request (or GET a background response's stream again, from a
sequence number), decode the stream with the protocol's SSE decoder."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from ..protocol.sse import SSEDecoder
from .errors import connect_failed, dropped, http_error
from .stream import EventStream


class SSEStream(EventStream):
    """One open `text/event-stream` response: raw event dicts in order, None at EOF."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.headers = {key.lower(): value for key, value in response.headers.items()}
        self._chunks: AsyncIterator[bytes] = response.aiter_bytes()
        self._decoder = SSEDecoder()
        self._pending: deque[dict[str, Any]] = deque()

    async def next_event(self) -> dict[str, Any] | None:
        while not self._pending:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                return None
            except httpx.TransportError as error:
                raise dropped(f"HTTP stream cut: {error or type(error).__name__}") from error
            for message in self._decoder.feed(chunk):
                if message.data == "[DONE]":
                    continue
                try:
                    event = message.json()
                except ValueError:  # skipped, as Codex 0.169.0 and 0.171.0 skip it (observed)
                    continue
                if isinstance(event, dict):
                    self._pending.append(event)
        return self._pending.popleft()

    async def aclose(self) -> None:
        await self.response.aclose()


async def open_sse(
    http: httpx.AsyncClient, url: str, body: Mapping[str, Any] | None, headers: Mapping[str, str]
) -> SSEStream:
    """POST the request (GET `url` when there is no body: a resumed stream); an error status raises its typed
    error, a 200 returns the open stream."""
    sent = {**headers, "accept": "text/event-stream"}
    if body is None:
        request = http.build_request("GET", url, headers=sent)
    else:
        content = json.dumps(body, ensure_ascii=False).encode()
        request = http.build_request("POST", url, content=content, headers={**sent, "content-type": "application/json"})
    try:
        response = await http.send(request, stream=True)
    except httpx.TransportError as error:
        raise connect_failed(f"HTTP request failed: {error or type(error).__name__}") from error
    if response.status_code != 200:
        try:
            content = await response.aread()
        except httpx.TransportError:
            content = b""
        finally:
            await response.aclose()
        raise http_error(response.status_code, content, dict(response.headers))
    return SSEStream(response)
