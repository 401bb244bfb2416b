"""Protocol validation of cassettes: every golden cassette is clean, and a recording broken in one way is reported
with that rule, at that exchange and event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange, load_cassette, save_cassette
from rrkit.cli import main
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.report import Finding, Severity
from rrkit.tools.validate import RULES, finding_at, validate_cassette, validate_recording

GOLDEN = Path(__file__).resolve().parents[2] / "cassettes"
GOLDEN_FILES = sorted(GOLDEN.glob("*.json"))


def golden(name: str) -> Cassette:
    return load_cassette(GOLDEN / name)


def events_of(exchange: RecordedExchange) -> list[dict[str, Any]]:
    return [recorded.event for recorded in exchange.events]


def set_events(exchange: RecordedExchange, events: list[dict[str, Any]], *, renumber: bool = True) -> None:
    if renumber:
        for number, event in enumerate(events):
            event["sequence_number"] = number
    exchange.events = [RecordedEvent.of(0.0, event) for event in events]


def position(events: list[dict[str, Any]], type_: str) -> int:
    return next(index for index, event in enumerate(events) if event["type"] == type_)


def rules(findings: list[Finding]) -> list[str]:
    return [finding.rule for finding in findings]


UNKNOWN_CODE = "response.error.code"
"""failed-unknown-code's made-up code, outside the spec's list on purpose: the recording's, a `should`."""


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[path.name for path in GOLDEN_FILES])
def test_every_golden_cassette_validates_clean(path: Path) -> None:
    findings = validate_recording(load_cassette(path))
    if path.name.startswith("failed-unknown-code."):
        assert [(f.rule, f.severity, f.place.field) for f in findings] == [
            ("recorded_fields", Severity.SHOULD, UNKNOWN_CODE)
        ]
        assert '"some_future_error_code"' in findings[0].evidence
        return
    assert [str(finding) for finding in findings] == []


EARLIER = sorted((Path(__file__).resolve().parents[1] / "cassette" / "data" / "earlier").glob("*.json"))
"""Cassettes recorded before every Response carried the service's whole shape (issue 60)."""


@pytest.mark.parametrize("path", EARLIER, ids=[path.name for path in EARLIER])
def test_a_cassette_recorded_by_an_earlier_version_replays_and_validates_its_missing_fields_being_the_recording_s(
    path: Path,
) -> None:
    replayed = CliRunner().invoke(main, ["replay", str(path)])
    assert replayed.exit_code == 0 and "1 of 1 behaved as recorded" in replayed.output, replayed.output
    result = CliRunner().invoke(main, ["validate", "--json", str(path)])
    assert result.exit_code == 0, result.output
    findings = [Finding.model_validate(f) for case in json.loads(result.output)["cases"] for f in case["findings"]]
    assert findings and {(f.rule, f.severity) for f in findings} == {("recorded_fields", Severity.SHOULD)}
    assert "the recording's" in findings[0].reason
    assert {"response.temperature: missing", "response.metadata: missing"} <= {f.evidence for f in findings}
    first = next(f for f in findings if f.place.field == "response.temperature")
    assert (first.place.exchange, first.place.event, first.place.event_type) == (0, 0, "response.created")
    assert first.also  # the same field of the same exchange's later events: counted on the first finding


def delta_before_its_item() -> tuple[Cassette, list[dict[str, Any]]]:
    """The golden text cassette with its first delta moved before its item was added, and its events."""
    cassette = golden("text.http.json")
    exchange = cassette.exchanges[0]
    events = events_of(exchange)
    delta = events.pop(position(events, "response.output_text.delta"))
    events.insert(position(events, "response.output_item.added"), delta)
    set_events(exchange, events)
    return cassette, events


def test_a_delta_before_its_item_is_found_at_the_delta() -> None:
    cassette, events = delta_before_its_item()

    findings = validate_cassette(cassette)

    first = findings[0]
    assert (first.place.exchange, first.place.connection, first.rule) == (0, None, "item_added_first")
    assert first.place.event == position(events, "response.output_text.delta")
    assert "never added" in first.evidence


def test_a_completed_stream_without_its_terminal_event_is_found() -> None:
    cassette = golden("tool-loop.ws.json")
    exchange = cassette.exchanges[2]
    events = events_of(exchange)
    assert events.pop()["type"] == "response.completed"
    set_events(exchange, events)

    findings = validate_cassette(cassette)

    assert rules(findings) == ["terminal_required"]
    assert (findings[0].place.exchange, findings[0].place.connection, findings[0].place.event) == (
        2,
        0,
        len(events) - 1,
    )


def test_a_cut_stream_needs_no_terminal_event_but_a_cut_one_still_keeps_the_order_rules() -> None:
    cassette = golden("drop-mid-stream.ws.json")
    dropped = cassette.exchanges[1]
    assert dropped.outcome is not None and dropped.outcome.kind is OutcomeKind.DROPPED
    assert validate_cassette(cassette) == []

    events = events_of(dropped)
    events[2]["sequence_number"] = 7
    set_events(dropped, events, renumber=False)
    assert [(f.place.exchange, f.place.event, f.rule) for f in validate_cassette(cassette)] == [(1, 2, "sequence")]


def test_a_non_increasing_sequence_number_is_found_at_its_event() -> None:
    cassette = golden("tool-loop.http.json")
    exchange = cassette.exchanges[1]
    events = events_of(exchange)
    events[4]["sequence_number"] = 3
    set_events(exchange, events, renumber=False)

    findings = validate_cassette(cassette)

    assert [(f.place.exchange, f.place.event, f.rule) for f in findings] == [(1, 4, "sequence")]
    assert "expected sequence_number 4, got 3" in findings[0].evidence


def test_one_missing_event_is_one_sequence_finding_not_one_per_later_event() -> None:
    cassette = golden("text.http.json")
    exchange = cassette.exchanges[0]
    events = events_of(exchange)
    gap = position(events, "response.output_text.delta") + 1
    del events[gap]
    set_events(exchange, events, renumber=False)

    sequence = [f for f in validate_cassette(cassette) if f.rule == "sequence"]

    assert [f.place.event for f in sequence] == [gap]
    after = len(events) - gap - 1
    assert (
        sequence[0].evidence
        == f"expected sequence_number {gap}, got {gap + 1}, and so on for the {after} events after it"
    )


def test_two_terminal_events_are_found_at_the_second() -> None:
    cassette = golden("text.http.json")
    exchange = cassette.exchanges[0]
    events = events_of(exchange)
    events.append(dict(events[-1]))
    set_events(exchange, events)

    findings = validate_cassette(cassette)

    assert [(f.place.exchange, f.place.event, f.rule) for f in findings] == [(0, len(events) - 1, "one_terminal")]


@pytest.mark.parametrize(("opening", "status"), [("response.created", "completed"), ("response.in_progress", "failed")])
def test_an_opening_event_whose_response_already_ended_is_found_at_it(opening: str, status: str) -> None:
    cassette = golden("text.http.json")
    exchange = cassette.exchanges[0]
    events = events_of(exchange)
    at = position(events, opening)
    events[at]["response"] = {**events[at]["response"], "status": status}
    set_events(exchange, events)

    findings = validate_cassette(cassette)

    assert [(f.place.exchange, f.place.event, f.rule, f.severity) for f in findings] == [
        (0, at, "opening_state", Severity.MUST)
    ]
    assert f"{opening} with response.status {status!r}" in findings[0].evidence


def test_relayed_sse_comments_are_skipped_and_findings_point_into_the_recorded_events() -> None:
    cassette = golden("text.http.json")
    exchange = cassette.exchanges[0]
    events = events_of(exchange)
    events[4]["sequence_number"] = 99
    recorded = [RecordedEvent.of(0.0, event) for event in events]
    recorded.insert(1, RecordedEvent.of(0.0, {"type": "rrkit.sse_comment", "comment": "ping"}))
    exchange.events = recorded

    assert [(f.place.event, f.rule) for f in validate_cassette(cassette)] == [(5, "sequence")]


def test_refusals_and_whole_body_answers_have_no_stream_to_check() -> None:
    for name in ("http-429-retry-after.http.json", "http-500.http.json", "ws-connection-limit.ws.json"):
        cassette = golden(name)
        refused = [e for e in cassette.exchanges if e.outcome and e.outcome.kind is OutcomeKind.REFUSED]
        assert refused and all(not e.events for e in refused)
        assert validate_cassette(cassette) == []


def test_an_outcome_its_terminal_event_contradicts_is_found() -> None:
    cassette = golden("failed-context-length.http.json")
    exchange = cassette.exchanges[0]
    exchange.outcome = Outcome(OutcomeKind.COMPLETED, len(exchange.events))

    findings = validate_cassette(cassette)

    assert [(f.place.exchange, f.place.event, f.rule) for f in findings] == [
        (0, len(exchange.events) - 1, "outcome_stated")
    ]
    assert "recorded completed, the terminal event states failed" in findings[0].evidence


def test_a_websocket_delta_that_does_not_rebuild_to_its_logical_request_names_the_field() -> None:
    cassette = golden("tool-loop.ws.json")
    delta = cassette.exchanges[2]
    assert delta.incremental and delta.logical_request is not None
    delta.logical_request["instructions"] = "Something else."

    findings = validate_cassette(cassette)

    assert rules(findings) == ["rebuilds"]
    assert (findings[0].place.exchange, findings[0].place.connection, findings[0].place.event) == (2, 0, None)
    assert findings[0].evidence.startswith("instructions: rebuilt ")
    assert "rebuilt on exchange 1" in findings[0].evidence


def test_a_delta_whose_logical_input_lost_an_item_names_the_item() -> None:
    cassette = golden("tool-loop.ws.json")
    delta = cassette.exchanges[2]
    assert delta.logical_request is not None
    removed = delta.logical_request["input"].pop(1)

    findings = validate_cassette(cassette)

    assert rules(findings) == ["rebuilds"]
    assert findings[0].evidence.startswith("input[1]: rebuilt ")
    assert removed["type"] in findings[0].evidence
    assert "rebuilt 4 items, recorded 3" in findings[0].evidence


def test_a_delta_naming_a_response_no_earlier_exchange_of_its_connection_completed_is_found() -> None:
    cassette = golden("tool-loop.ws.json")
    delta = cassette.exchanges[2]
    assert delta.wire_request is not None
    delta.wire_request["previous_response_id"] = "resp_unknown"

    findings = validate_cassette(cassette)

    assert rules(findings) == ["previous_known"]
    assert "'resp_unknown' is no earlier response on this connection" in findings[0].evidence


def test_a_delta_naming_a_dropped_response_is_found_unless_the_server_refused_it() -> None:
    cassette = golden("drop-mid-stream.ws.json")
    dropped, retry = cassette.exchanges[1], cassette.exchanges[2]
    retry.connection = dropped.connection
    assert retry.wire_request is not None and retry.logical_request is not None
    retry.wire_request["previous_response_id"] = dropped.response_id

    findings = validate_cassette(cassette)

    assert rules(findings) == ["previous_known"]
    assert "is the response of exchange 1, which ended dropped" in findings[0].evidence
    retry.outcome = Outcome(OutcomeKind.REFUSED, status=400, code="previous_response_not_found")
    retry.events = []
    assert validate_cassette(cassette) == []


def test_a_finding_reads_as_a_sentence_and_every_rule_has_a_statement() -> None:
    exchange = golden("tool-loop.ws.json").exchanges[2]
    assert (exchange.id, exchange.connection) == (2, 0)
    finding = finding_at(exchange, 5, "sequence", "expected sequence_number 5, got 4")
    assert str(finding) == (
        "[must] exchange 2 (connection 0) event 5: sequence_number starts at 0 and increases by 1; "
        "expected sequence_number 5, got 4"
    )
    assert finding.model_dump(mode="json") == {
        "rule": "sequence",
        "severity": "must",
        "place": {"label": "", "connection": 0, "exchange": 2, "event": 5, "event_type": None, "field": None},
        "reason": "sequence_number starts at 0 and increases by 1",
        "evidence": "expected sequence_number 5, got 4",
        "profile": None,
        "also": [],
    }
    assert {"sequence", "one_terminal", "terminal_required", "item_added_first", "rebuilds"} <= set(RULES)


def test_validate_command_finds_every_golden_cassette_clean() -> None:
    result = CliRunner().invoke(main, ["validate", str(GOLDEN)])

    assert result.exit_code == 0, result.output
    assert f"{len(GOLDEN_FILES)} cassette(s): no rule broken; 2 recorded with fields" in result.output


def test_validate_command_exits_1_naming_the_rule_exchange_and_event(tmp_path: Path) -> None:
    cassette, events = delta_before_its_item()
    broken = tmp_path / "broken.json"
    save_cassette(cassette, broken)

    result = CliRunner().invoke(main, ["validate", str(GOLDEN / "text.ws.json"), str(broken)])
    report = json.loads(CliRunner().invoke(main, ["validate", "--json", str(broken)]).output)

    assert result.exit_code == 1, result.output
    at = position(events, "response.output_text.delta")
    assert f"[must] exchange 0 event {at}: {RULES['item_added_first']}; " in result.output
    assert "1 of 2 cassette(s) break a rule" in result.output
    assert report["rrkit_report"] == 1 and report["tool"] == "validate" and report["ok"] is False
    first = report["cases"][0]["findings"][0]
    assert (first["place"]["exchange"], first["place"]["event"], first["rule"]) == (0, at, "item_added_first")
    assert first["reason"] == RULES["item_added_first"]


def test_validate_command_refuses_a_file_that_is_no_cassette_naming_it(tmp_path: Path) -> None:
    not_json = tmp_path / "notes.json"
    not_json.write_bytes(b"\xff\xfe not a cassette")

    result = CliRunner().invoke(main, ["validate", str(not_json)])

    assert result.exit_code == 2
    assert str(not_json) in result.output
