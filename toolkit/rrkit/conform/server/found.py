"""The findings of one server check on one answer, collected as the check runs: a repeat of a requirement at
another event is counted on the first finding, and a check reports a bounded number."""

from __future__ import annotations

from ...report import Finding, Place, Severity
from .answer import Answer

MAX_FINDINGS_PER_CHECK = 10
"""Findings one check reports for one answer at most (a server wrong everywhere is wrong the same way)."""


class Found:
    """The findings of one check on one answer."""

    def __init__(self, check: str, answer: Answer) -> None:
        self.check, self.answer, self.findings = check, answer, list[Finding]()

    def add(self, severity: Severity, requires: str, seen: str, *, event: int | None = None, **place: str) -> None:
        """One finding; one that breaks an earlier one's requirement at the same field again, at another event,
        is counted on the earlier one (a server that omits a field omits it everywhere)."""
        field = place.get("field")
        for index, earlier in enumerate(self.findings):
            if (earlier.reason, earlier.place.field) == (requires, field) and event is not None:
                self.findings[index] = earlier.model_copy(update={"also": (*earlier.also, event)})
                return
        if len(self.findings) >= MAX_FINDINGS_PER_CHECK:
            return
        event_type = None
        if event is not None and 0 <= event < len(self.answer.events):
            event_type = str(self.answer.events[event].get("type"))
        where = Place(label=self.answer.place, event=event, event_type=event_type, field=field)
        self.findings.append(Finding(rule=self.check, severity=severity, place=where, reason=requires, evidence=seen))
