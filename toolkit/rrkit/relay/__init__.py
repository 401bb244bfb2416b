"""The relay: each request forwarded to an upstream Responses endpoint and its answer relayed live, over HTTP and
WebSocket (`UpstreamSource`, the reply source of a recording proxy: the fake server's app does the rest).

The names below load with their module on first use (PEP 562): importing the package loads neither httpx nor the
WebSocket client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .source import UpstreamSource

_HOMES = {".source": ("UpstreamSource",)}

__all__ = ["UpstreamSource"]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
