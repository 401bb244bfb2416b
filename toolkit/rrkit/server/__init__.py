"""The fake Responses server: SSE and WebSocket, answered from a script, a cassette or an upstream, every
exchange captured. The names load on first use (PEP 562): the capture's types (what a cassette is made from) load
no web framework."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .app import NO_MATCH_CODE
    from .capture import Connection, Exchange, SentEvent
    from .runner import FakeServer

__all__ = ["NO_MATCH_CODE", "Connection", "Exchange", "FakeServer", "SentEvent"]

_HOMES = {".app": ("NO_MATCH_CODE",), ".capture": ("Connection", "Exchange", "SentEvent"), ".runner": ("FakeServer",)}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
