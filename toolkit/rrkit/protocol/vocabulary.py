"""The words of transports and connections, written once: which transport, how a connection is cut, who closed it."""

from typing import Literal, get_args

Transport = Literal["http", "ws"]
"""HTTP (an SSE stream or a whole JSON body) or a WebSocket."""
TRANSPORTS: tuple[Transport, ...] = get_args(Transport)
CloseKind = Literal["tcp", "frame", "end"]
"""How a connection is cut: a bare TCP close; (WebSocket) a close frame with a code; or an end that looks whole
(HTTP: the body's final chunk, no error; WebSocket: a close frame 1000), which a client must still take for a
cut stream when no terminal event came before it."""
ClosedBy = Literal["server", "client", "tcp"]
"""Who ended a WebSocket connection: the server (a close frame), the client, or neither (the TCP connection)."""
LineEnding = Literal["lf", "crlf", "cr"]
"""How an SSE body's lines end: each of the three the SSE format allows."""
LINE_ENDINGS: dict[LineEnding, bytes] = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}
