"""A WebSocket upgrade sent by hand and its answer's head read as it came (no client library in between, so a
wrong accept key is seen, not only refused)."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Upgrade:
    """A WebSocket upgrade as sent and answered, byte for byte."""

    status: int | None
    headers: dict[str, str]  # lower-case names (the last of repeated ones)
    key: str  # the Sec-WebSocket-Key sent
    error: str | None = None  # no answer to read (refused connection, garbage)


async def read_upgrade(
    ws_url: str, headers: Mapping[str, str], timeout: float, key_of: Callable[[], bytes] = lambda: os.urandom(16)
) -> Upgrade:
    """Send a WebSocket upgrade by hand and read its answer's head as it came (no client library in between, so
    a wrong accept key is seen, not only refused)."""
    parts = urlsplit(ws_url)
    secure = parts.scheme == "wss"
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if secure else 80)
    key = base64.b64encode(key_of()).decode()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, ssl=secure or None)
            try:
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
                head = await reader.readuntil(b"\r\n\r\n")
            finally:
                writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
        return Upgrade(None, {}, key, f"{type(error).__name__}: {error}")
    return _upgrade_of(head, key)


def _upgrade_of(head: bytes, key: str) -> Upgrade:
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[1].isdigit():
        return Upgrade(None, {}, key, f"not an HTTP status line: {status_line[:80]!r}")
    headers = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return Upgrade(int(fields[1]), headers, key)
