"""A cassette's recorded bodies and events held to the OpenAPI description (`rrkit.references`): what departs
from it is the recording's (recorded truth, as the upstream sent it), reported at `should` and never failing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..cassette.format import RecordedExchange
from ..references import Violation, check_body, check_event, route_kind
from ..report import Finding, Place, Severity

RECORDED_FIELDS = "recorded_fields"
REASON = (
    "the recording's fields depart from the OpenAPI description: recorded truth (as it was sent), never a failure; "
    "re-record it for today's fields"
)


def recorded_field_findings(exchange: RecordedExchange, events: Sequence[dict[str, Any]]) -> list[Finding]:
    """One `should` per field path the exchange's recorded answer departs at: the first event (or the body) that
    does, the later events that do again its `also`."""
    findings: dict[str, Finding] = {}
    for event, violation in _violations(exchange, events):
        earlier = findings.get(violation.path)
        if earlier is None:
            event_type = str(events[event].get("type")) if event is not None else None
            place = Place(
                connection=exchange.connection,
                exchange=exchange.id,
                event=event,
                event_type=event_type,
                field=violation.path or None,
            )
            findings[violation.path] = Finding(
                rule=RECORDED_FIELDS, severity=Severity.SHOULD, place=place, reason=REASON, evidence=str(violation)
            )
        elif event is not None and earlier.place.event != event:
            findings[violation.path] = earlier.model_copy(update={"also": (*earlier.also, event)})
    return list(findings.values())


def _violations(exchange: RecordedExchange, events: Sequence[dict[str, Any]]) -> Iterator[tuple[int | None, Violation]]:
    for index, event in enumerate(events):
        for violation in check_event(event):
            yield index, violation
    body = exchange.response_body.json_value if exchange.response_body is not None else None
    status = exchange.response_status
    if not isinstance(body, dict) or status is None:
        return
    if status >= 400 and isinstance(body.get("error"), dict):
        yield from ((None, violation) for violation in check_body("error", body["error"], at=("error",)))
    elif 200 <= status < 300 and (kind := route_kind(exchange.route)) is not None:
        yield from ((None, violation) for violation in check_body(kind, body))
