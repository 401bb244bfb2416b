"""When a probe sends a step again, as a client of the protocol would: an answer a client retries (a 5xx, a 429,
a cut or silent stream, a retryable `response.failed` or error frame) is sent again, so that a server having
the transient faults the real service has is judged by what it answers in the end."""

from __future__ import annotations

from typing import Any

from ...drive.ending import Ending
from ...protocol import events as ev
from ...protocol.errors import Classification, classify_failure, classify_http_error
from .answer import Answer

RETRIES = 3
"""Times a step is sent again at the most."""
LONGEST_WAIT = 2.0
"""Seconds a probe waits before sending again at the most, whatever delay the server names."""


def retry_delay(answer: Answer) -> float | None:
    """Seconds to wait before sending `answer`'s step again, or None when a client would not send it again."""
    if answer.ending in (Ending.CUT, Ending.CLOSED, Ending.TIMEOUT):
        return 0.0
    if answer.ending in (Ending.UNSENT, Ending.SKIPPED, Ending.TOO_LARGE):
        return None  # nothing sent, or an answer no client reads whole: sending it again shows nothing more
    if answer.transport == "http" and answer.status is not None and answer.status >= 400:
        body = answer.body if isinstance(answer.body, dict) else None
        return _delay(classify_http_error(answer.status, body, answer.headers))
    if isinstance(answer.body, dict) and answer.body.get("status") == "failed":
        return _failed(answer.body)
    if answer.streamed and ev.terminal_event(answer.events) is None:
        return 0.0  # a stream that ended whole before its terminal event: a cut to a client, which sends it again
    return _ending_delay(answer.events[-1] if answer.events else {})


def _ending_delay(last: dict[str, Any]) -> float | None:
    """For a stream's last event: a retryable error frame or `response.failed`."""
    if last.get("type") == ev.ERROR and isinstance(last.get("status"), int):
        return _delay(classify_http_error(int(last["status"]), {"error": last.get("error")}, {}))
    if last.get("type") == ev.FAILED:
        return _failed(last.get("response") or {})
    return None


def _failed(response: dict[str, Any]) -> float | None:
    error = response.get("error") or {}
    return _delay(classify_failure(error.get("code"), error.get("message")))


def _delay(classification: Classification) -> float | None:
    return min(classification.delay or 0.0, LONGEST_WAIT) if classification.retryable else None
