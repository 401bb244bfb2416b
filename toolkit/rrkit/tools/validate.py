"""Protocol validation of a cassette: event-order rules per stream, WebSocket deltas that must rebuild to their
recorded logical request (docs/protocol.md: One exchange, three views; Events; When a request may be incremental),
and the recorded bodies and events against the OpenAPI description (the recording's, never failing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..cassette.format import Cassette, RecordedExchange
from ..cassette.match import canonical, shown
from ..protocol import events as ev
from ..protocol.errors import PREVIOUS_RESPONSE_NOT_FOUND
from ..protocol.incremental import rebuild_logical
from ..protocol.order import Violation
from ..protocol.order_rules import Rule
from ..protocol.outcome import STATED_KINDS, Outcome, OutcomeKind, outcome_of_events, response_of_body
from ..protocol.request import INPUT_FIELD, Item, input_items
from ..protocol.steer import answer_problems
from ..report import Case, Finding, Place, Report, Severity
from .recorded_fields import REASON, RECORDED_FIELDS, recorded_field_findings
from .stream_rules import check_stream

CUT_KINDS = frozenset({OutcomeKind.DROPPED, OutcomeKind.STALLED, OutcomeKind.DISCONNECTED})
"""Outcomes of a stream cut by the connection: its events are checked as a prefix (no terminal event needed)."""


class Check(StrEnum):
    """Rules of a cassette beyond one stream's order (`protocol.order_rules.Rule`)."""

    PREVIOUS_KNOWN = "previous_response_id names a response that completed earlier on the same connection"
    REBUILDS = "a WebSocket delta rebuilds to its recorded logical request"
    OUTCOME_STATED = "the recorded outcome is the one the stream's terminal event states"
    STEER_ANSWERED = "a steer frame is answered by steer answers (accepted, pending, failed) and nothing else"


RULES: dict[str, str] = {
    **{rule.name.lower(): rule.value for rule in Rule},
    **{check.name.lower(): check.value for check in Check},
    RECORDED_FIELDS: REASON,
}
"""Every rule a finding can name (`sequence`, `one_terminal`, `rebuilds`, ...) -> what the rule says."""


def finding_at(exchange: RecordedExchange, event: int | None, rule: str, detail: str) -> Finding:
    """A rule (a name of RULES) one exchange breaks; `event` is an index into its recorded events (None: the
    request)."""
    place = Place(connection=exchange.connection, exchange=exchange.id, event=event)
    return Finding(rule=rule, place=place, reason=RULES.get(rule, rule), evidence=detail)


@dataclass(frozen=True, slots=True)
class Validated:
    """One cassette's findings."""

    path: str
    exchanges: int
    findings: list[Finding]


def validation_report(validated: Sequence[Validated]) -> Report:
    """`rrkit validate`'s report: a case per cassette, a finding per broken rule."""
    cases = tuple(
        Case(
            group="rrkit.validate",
            name=one.path,
            file=one.path,
            findings=tuple(one.findings),
            output=f"{one.exchanges} exchange(s)",
        )
        for one in validated
    )
    broken = sum(1 for one in validated if any(finding.severity is Severity.MUST for finding in one.findings))
    dated = sum(1 for one in validated if any(finding.rule == RECORDED_FIELDS for finding in one.findings))
    verdict = "no rule broken" if not broken else f"{broken} of {len(validated)} cassette(s) break a rule"
    if not any(one.findings for one in validated):
        verdict = "every cassette is clean"
    elif dated:
        verdict += f"; {dated} recorded with fields the OpenAPI description has otherwise (the recording's)"
    subject = validated[0].path if len(validated) == 1 else f"{len(validated)} cassettes"
    detail = {"cassettes": [{"path": one.path, "exchanges": one.exchanges} for one in validated]}
    summary = f"rrkit validate: {len(validated)} cassette(s): {verdict}"
    return Report(tool="validate", subject=subject, summary=summary, cases=cases, detail=detail)


@dataclass(frozen=True, slots=True)
class _Completed:
    exchange: int
    stored_input: list[Item]
    output: list[Item]


def validate_cassette(cassette: Cassette) -> list[Finding]:
    """Every rule each exchange breaks, in cassette order (each exchange's own findings in event order)."""
    findings: list[Finding] = []
    completed: dict[tuple[int | None, str], _Completed] = {}
    ended: dict[tuple[int | None, str], tuple[int, Outcome | None]] = {}
    for exchange in cassette.exchanges:
        events = [recorded.event for recorded in exchange.events]
        findings += stream_findings(exchange, events)
        if exchange.transport == "ws" and exchange.incremental:
            findings += _rebuild_findings(exchange, completed, ended)
        response_id = _response_id(exchange, events) if exchange.is_create else None  # a retrieve ends nothing
        if response_id:
            key = (exchange.connection, response_id)
            ended[key] = (exchange.id, exchange.outcome)
            if exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED:
                completed[key] = _Completed(
                    exchange.id, input_items(exchange.logical_request or {}), _output(exchange, events)
                )
    return findings


def validate_recording(cassette: Cassette) -> list[Finding]:
    """`rrkit validate`'s findings: the protocol's (`validate_cassette`), then, exchange by exchange, where the
    recorded fields depart from the OpenAPI description (the recording's, `should`)."""
    fields = [
        finding
        for exchange in cassette.exchanges
        for finding in recorded_field_findings(exchange, [recorded.event for recorded in exchange.events])
    ]
    return validate_cassette(cassette) + fields


def stream_findings(exchange: RecordedExchange, events: Sequence[dict[str, Any]]) -> list[Finding]:
    """The order rules a streamed answer breaks (whole-body answers and refusals have no stream to check; a
    resumed stream is held to the rules its tail can be, `stream_rules`), and a recorded outcome that its terminal
    event contradicts."""
    outcome = exchange.outcome
    if exchange.response_body is not None or (outcome is not None and outcome.kind is OutcomeKind.REFUSED):
        return []
    if exchange.answers_frame:
        rule = Check.STEER_ANSWERED.name.lower()
        return [finding_at(exchange, at, rule, why) for at, why in answer_problems(exchange.raw_body, events)]
    cut = outcome is None or outcome.kind in CUT_KINDS
    # check_order numbers events without the side channels (relayed comments, metadata frames); findings point
    # into the recorded list
    positions = [index for index, event in enumerate(events) if event.get("type") not in ev.SIDE_CHANNELS]

    def at(index: int) -> int | None:
        return positions[index] if index < len(positions) else None

    findings = [
        finding_at(exchange, at(v.index), v.rule.name.lower(), v.detail)
        for v in _one_per_shift(check_stream(exchange, events, complete=not cut), [events[i] for i in positions])
    ]
    return findings + _outcome_findings(exchange, events)


def _outcome_findings(exchange: RecordedExchange, events: Sequence[dict[str, Any]]) -> list[Finding]:
    """A recorded outcome that the stream's terminal event contradicts."""
    outcome = exchange.outcome
    if outcome is None or outcome.kind not in STATED_KINDS:
        return []
    stated = outcome_of_events([event for event in events if event.get("type") not in ev.SIDE_CHANNELS])
    if stated is None or stated.kind is outcome.kind:
        return []
    terminal = max((i for i, e in enumerate(events) if e.get("type") in ev.ENDING_TYPES), default=None)
    detail = f"recorded {outcome.kind.value}, the terminal event states {stated.kind.value}"
    return [finding_at(exchange, terminal, Check.OUTCOME_STATED.name.lower(), detail)]


def _one_per_shift(violations: list[Violation], events: Sequence[dict[str, Any]]) -> list[Violation]:
    """After one missing or extra event every later sequence_number is off by as much: one finding says so."""

    def offset(violation: Violation) -> int | None:
        number = events[violation.index].get("sequence_number") if violation.index < len(events) else None
        return number - violation.index if type(number) is int else None

    kept: list[Violation] = []
    runs: list[tuple[int, int]] = []  # (where in `kept` a run of shifted numbers starts, how many follow it)
    previous: Violation | None = None
    for violation in violations:
        if violation.rule is not Rule.SEQUENCE:
            kept.append(violation)
            continue
        if previous is not None and violation.index == previous.index + 1 and offset(violation) == offset(previous):
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((len(kept), 0))
            kept.append(violation)
        previous = violation
    for at, followers in runs:
        if followers:
            head = kept[at]
            kept[at] = Violation(head.index, head.rule, f"{head.detail}, and so on for the {followers} events after it")
    return kept


def _rebuild_findings(
    exchange: RecordedExchange,
    completed: Mapping[tuple[int | None, str], _Completed],
    ended: Mapping[tuple[int | None, str], tuple[int, Outcome | None]],
) -> list[Finding]:
    wire = exchange.wire_request or {}
    previous = str(wire.get("previous_response_id"))
    recorded = exchange.logical_request

    def finding(check: Check, detail: str) -> list[Finding]:
        return [finding_at(exchange, None, check.name.lower(), detail)]

    outcome = exchange.outcome
    if outcome is not None and outcome.kind is OutcomeKind.REFUSED and outcome.code == PREVIOUS_RESPONSE_NOT_FOUND:
        return []  # the server said it could not rebuild: nothing to check
    if recorded is not None and "previous_response_id" in recorded:
        return []  # relayed unresolved: a proxy keeps the id when only the upstream knows it
    key = (exchange.connection, previous)
    stored = completed.get(key)
    if stored is None:
        earlier = ended.get(key)
        if earlier is None:
            return finding(Check.PREVIOUS_KNOWN, f"{previous!r} is no earlier response on this connection")
        state = earlier[1].kind.value if earlier[1] is not None else "without an outcome"
        return finding(
            Check.PREVIOUS_KNOWN, f"{previous!r} is the response of exchange {earlier[0]}, which ended {state}"
        )
    if recorded is None:
        return finding(Check.REBUILDS, "no logical request was recorded for this delta")
    rebuilt = rebuild_logical(wire, stored.stored_input, stored.output)
    where = f"on exchange {stored.exchange}"
    return [
        finding_at(exchange, None, Check.REBUILDS.name.lower(), f"{line} (rebuilt {where})")
        for line in _differences(rebuilt, recorded)
    ]


_MISSING = object()


def _differences(rebuilt: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """One line per top-level field that differs; for the input, the first item that does."""
    lines = []
    for name in sorted(set(rebuilt) | set(recorded)):
        left, right = rebuilt.get(name, _MISSING), recorded.get(name, _MISSING)
        if left is not _MISSING and right is not _MISSING and canonical(left) == canonical(right):
            continue
        if left is _MISSING or right is _MISSING:
            side = "recorded" if left is _MISSING else "rebuilt"
            value = right if left is _MISSING else left
            lines.append(f"{name}: only the {side} request has it ({shown(value)})")
        elif name == INPUT_FIELD and isinstance(left, list) and isinstance(right, list):
            lines.append(_input_difference(left, right))
        else:
            lines.append(f"{name}: rebuilt {shown(left)}, recorded {shown(right)}")
    return lines


def _input_difference(rebuilt: list[Any], recorded: list[Any]) -> str:
    counts = f"rebuilt {len(rebuilt)} items, recorded {len(recorded)}"
    for index, (left, right) in enumerate(zip(rebuilt, recorded, strict=False)):
        if canonical(left) != canonical(right):
            return f"input[{index}]: rebuilt {shown(left)}, recorded {shown(right)} ({counts})"
    index = min(len(rebuilt), len(recorded))
    extra = rebuilt[index] if len(rebuilt) > index else recorded[index]
    side = "rebuilt" if len(rebuilt) > index else "recorded"
    return f"input[{index}]: only the {side} input has it ({shown(extra)}; {counts})"


def _response_id(exchange: RecordedExchange, events: Sequence[dict[str, Any]]) -> str | None:
    if exchange.response_id:
        return exchange.response_id
    if events:
        return ev.response_id_of(list(events))
    body = _body_response(exchange)
    return str(body["id"]) if body is not None and body.get("id") else None


def _output(exchange: RecordedExchange, events: Sequence[dict[str, Any]]) -> list[Item]:
    """The items a later delta builds on: the stream's done items, or the output of a whole response body."""
    if events:
        return ev.done_items(list(events))
    body = _body_response(exchange)
    output = body.get("output") if body is not None else None
    return [item for item in output if isinstance(item, dict)] if isinstance(output, list) else []


def _body_response(exchange: RecordedExchange) -> dict[str, Any] | None:
    body = exchange.response_body
    return response_of_body(body.content) if body is not None else None
