"""The `fields` check: every body and event a server sends, held field by field to the OpenAPI description
(`rrkit.references`); one finding per field path per probe, its repeats at later events counted on it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...drive.ending import Ending
from ...protocol.routes import CREATE, route_of
from ...references import Violation, check_body, check_event, route_kind
from ...report import Finding, Place, Severity
from .answer import Answer
from .check_texts import FIELDS

REASONS = {
    Severity.MUST: "every field is as the OpenAPI description says (a client with a strict schema breaks on this)",
    Severity.SHOULD: "every field is as the OpenAPI description says (clients read past this)",
}


OWNED = {"sequence_number": "the order rules (the `stream` check) judge every event's sequence_number"}
"""An event's fields another check owns, with its reason: not reported twice."""


def field_findings(answers: Sequence[Answer], reported: Sequence[Finding] = ()) -> list[Finding]:
    """The fields check on every answer of one probe run: each field path once, at the first event (or body)
    that breaks it; later events of the same answer breaking it are its `also`. A field another check of the
    probe already names at that answer (`reported`) is left to it."""
    named = {(finding.place.label, finding.place.field) for finding in reported if finding.place.field}
    findings: dict[str, Finding] = {}
    for answer in answers:
        if answer.ending in (Ending.SKIPPED, Ending.UNSENT):
            continue
        for event, violation in _violations(answer):
            if (answer.place, violation.path) in named or (event is not None and violation.path in OWNED):
                continue
            earlier = findings.get(violation.path)
            if earlier is None:
                findings[violation.path] = _finding(answer, event, violation)
            elif event is not None and earlier.place.label == answer.place and earlier.place.event != event:
                findings[violation.path] = earlier.model_copy(update={"also": (*earlier.also, event)})
    return list(findings.values())


def _violations(answer: Answer) -> Iterator[tuple[int | None, Violation]]:
    for index, event in enumerate(answer.events):
        for violation in check_event(event):
            yield index, violation
    body = answer.body
    if answer.streamed or not isinstance(body, dict) or answer.status is None:
        return
    if answer.status >= 400 and isinstance(body.get("error"), dict):
        yield from ((None, violation) for violation in check_body("error", body["error"], at=("error",)))
    elif 200 <= answer.status < 300:
        kind = route_kind(_route(answer.request))
        if kind is not None:
            yield from ((None, violation) for violation in check_body(kind, body))


def _route(request: str) -> str:
    """The route an answer's request took (`GET /responses/resp_1` -> `responses.retrieve`); a create's answer
    names no request."""
    if not request:
        return CREATE
    method, _, target = request.partition(" ")
    return route_of(method, target.partition("?")[0]).name


def _finding(answer: Answer, event: int | None, violation: Violation) -> Finding:
    severity = Severity(violation.severity.value)
    event_type: Any = answer.events[event].get("type") if event is not None else None
    place = Place(
        label=answer.place,
        event=event,
        event_type=str(event_type) if event_type is not None else None,
        field=violation.path or None,
    )
    return Finding(rule=FIELDS, severity=severity, place=place, reason=REASONS[severity], evidence=str(violation))
