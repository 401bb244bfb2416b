"""The fake Responses server: SSE and WebSocket, answered from a script, a cassette or an upstream, every
exchange captured."""

from .app import NO_MATCH_CODE
from .capture import Connection, Exchange, SentEvent
from .runner import FakeServer

__all__ = ["NO_MATCH_CODE", "Connection", "Exchange", "FakeServer", "SentEvent"]
