"""The words of transports and connections, written once: which transport, how a connection is cut, who closed it."""

from typing import Literal

Transport = Literal["http", "ws"]
"""HTTP (an SSE stream or a whole JSON body) or a WebSocket."""
CloseKind = Literal["tcp", "frame"]
"""How a connection is cut: a bare TCP close, or (WebSocket) a close frame with a code."""
ClosedBy = Literal["server", "client", "tcp"]
"""Who ended a WebSocket connection: the server (a close frame), the client, or neither (the TCP connection)."""
