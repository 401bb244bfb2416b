"""How an exchange ended, in one vocabulary for the server's capture, cassettes, the client and the tools."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from . import events as ev
from .jsontext import parse_peer_json


class OutcomeKind(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"  # response.failed, with a code
    INCOMPLETE = "incomplete"  # response.incomplete, with a reason
    ERRORED = "errored"  # the flat SSE `error` event
    DROPPED = "dropped"  # connection cut before a terminal event
    STALLED = "stalled"  # connection kept open with nothing sent, until the peer gave up
    REFUSED = "refused"  # an error status before the stream: HTTP error, WS error frame, handshake refusal
    DISCONNECTED = "disconnected"  # the client went away before the terminal event
    ANSWERED = "answered"  # a body that is neither a stream nor a response object (an HTML page), with its status


STATED_KINDS = frozenset({OutcomeKind.COMPLETED, OutcomeKind.FAILED, OutcomeKind.INCOMPLETE, OutcomeKind.ERRORED})
"""Outcomes the stream states itself with its ending event; the others are what the connection did."""


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    events_sent: int = 0
    code: str | None = None
    message: str | None = None
    reason: str | None = None
    status: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind.value, "events_sent": self.events_sent}
        for name in ("code", "message", "reason", "status"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


def outcome_of_events(events: Sequence[dict[str, Any]]) -> Outcome | None:
    """The outcome a stream's terminal event states, or None if it has none (a cut stream)."""
    terminal = ev.terminal_event(list(events))
    return None if terminal is None else outcome_of_terminal(terminal, len(events))


def outcome_of_terminal(terminal: dict[str, Any], count: int) -> Outcome | None:
    """The outcome a stream of `count` events states by its terminal event `terminal`; None for any other event."""
    kind = terminal.get("type")
    if kind not in ev.ENDING_TYPES:
        return None
    if kind == ev.COMPLETED:
        return Outcome(OutcomeKind.COMPLETED, count)
    if kind == ev.FAILED:
        error = terminal.get("response", {}).get("error") or {}
        return Outcome(OutcomeKind.FAILED, count, code=error.get("code"), message=error.get("message"))
    if kind == ev.INCOMPLETE:
        details = terminal.get("response", {}).get("incomplete_details") or {}
        return Outcome(OutcomeKind.INCOMPLETE, count, reason=details.get("reason"))
    return Outcome(OutcomeKind.ERRORED, count, code=terminal.get("code"), message=terminal.get("message"))


def json_of_body(content: bytes) -> Any:
    """A whole body's JSON value, or None when it is not JSON (an HTML page, a text, not UTF-8)."""
    try:
        return parse_peer_json(content, what="body") if content else None
    except ValueError:  # UnsafeJSON: not JSON, or nested too deep to read
        return None


def response_of_body(content: bytes) -> dict[str, Any] | None:
    """The response object a non-streaming answer's body holds, if it holds one."""
    body = json_of_body(content)
    return body if isinstance(body, dict) and body.get("object") == "response" else None


def response_id_of_body(content: bytes) -> str | None:
    """The id of the response object a JSON body holds, if it holds one."""
    response = response_of_body(content)
    return str(response["id"]) if response is not None and isinstance(response.get("id"), str) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def outcome_of_body(status: int, content: bytes) -> Outcome:
    """The outcome of a whole (non-streaming) HTTP body: an error status is a refusal with the body's error code
    and message; a response object states its own status; anything else (an HTML page) was just answered."""
    if not 200 <= status < 300:
        error = _object(_object(json_of_body(content)).get("error"))
        return Outcome(
            OutcomeKind.REFUSED, status=status, code=_text(error.get("code")), message=_text(error.get("message"))
        )
    response = response_of_body(content)
    if response is None:
        return Outcome(OutcomeKind.ANSWERED, status=status)
    state = response.get("status")
    if state == "failed":
        error = _object(response.get("error"))
        return Outcome(
            OutcomeKind.FAILED, code=_text(error.get("code")), message=_text(error.get("message")), status=status
        )
    if state == "incomplete":
        reason = _text(_object(response.get("incomplete_details")).get("reason"))
        return Outcome(OutcomeKind.INCOMPLETE, reason=reason, status=status)
    if state not in (None, "completed") or response.get("deleted") is True:
        return Outcome(OutcomeKind.ANSWERED, status=status)  # a background response not ended, or a deletion
    return Outcome(OutcomeKind.COMPLETED, status=status)
