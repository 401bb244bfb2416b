"""The one interface a turn reads a response through, whichever transport carries it."""

from __future__ import annotations

from typing import Any, Protocol


class EventStream(Protocol):
    """Raw event dicts of one response in order (None: the stream ended); typed errors for what broke it."""

    async def next_event(self) -> dict[str, Any] | None: ...

    async def aclose(self) -> None: ...
