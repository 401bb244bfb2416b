"""The fake Responses server: SSE and WebSocket, played from a script, every exchange captured."""

from ..protocol.headers import TURN_STATE_HEADER
from .app import NO_MATCH_CODE, ServerState, create_app
from .capture import Capture, Connection, Exchange, SentEvent
from .runner import FakeServer

__all__ = [
    "NO_MATCH_CODE",
    "TURN_STATE_HEADER",
    "Capture",
    "Connection",
    "Exchange",
    "FakeServer",
    "SentEvent",
    "ServerState",
    "create_app",
]
