"""How an exchange ended, in one vocabulary for the server's capture, cassettes, the client and the tools."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from . import events as ev


class OutcomeKind(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"  # response.failed, with a code
    INCOMPLETE = "incomplete"  # response.incomplete, with a reason
    ERRORED = "errored"  # the flat SSE `error` event
    DROPPED = "dropped"  # connection cut before a terminal event
    STALLED = "stalled"  # connection kept open with nothing sent, until the peer gave up
    REFUSED = "refused"  # an error status before the stream: HTTP error, WS error frame, handshake refusal
    DISCONNECTED = "disconnected"  # the client went away before the terminal event


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
    if terminal is None:
        return None
    count = len(events)
    kind = terminal["type"]
    if kind == ev.COMPLETED:
        return Outcome(OutcomeKind.COMPLETED, count)
    if kind == ev.FAILED:
        error = terminal.get("response", {}).get("error") or {}
        return Outcome(OutcomeKind.FAILED, count, code=error.get("code"), message=error.get("message"))
    if kind == ev.INCOMPLETE:
        details = terminal.get("response", {}).get("incomplete_details") or {}
        return Outcome(OutcomeKind.INCOMPLETE, count, reason=details.get("reason"))
    return Outcome(OutcomeKind.ERRORED, count, code=terminal.get("code"), message=terminal.get("message"))
