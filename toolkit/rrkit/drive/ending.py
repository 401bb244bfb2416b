"""How an answer the remote-server driver read ended (a module of its own: the judges name it without loading the
driver's HTTP and WebSocket clients)."""

from __future__ import annotations

from enum import StrEnum


class Ending(StrEnum):
    """How an answer ended."""

    WHOLE = "whole"  # the body (or the response's frames, up to an ending event) arrived
    CUT = "cut"  # the connection broke before the body ended
    TOO_LARGE = "too large"  # the answer (or one event of it) went past what is read of one answer
    CLOSED = "closed"  # the WebSocket closed before an ending event
    TIMEOUT = "timeout"  # nothing ended it in time
    UNSENT = "unsent"  # the request could not be sent (the upgrade failed, say)
    SKIPPED = "skipped"  # not sent: the step it follows was not answered, so there is nothing to continue
