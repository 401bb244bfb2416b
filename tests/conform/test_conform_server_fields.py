"""`rrkit conform --server URL` holds every body and event a server sends to the OpenAPI description, field by
field: a server whose response objects lack a required field, or whose streamed event carries a field of the wrong
type, gets a finding naming that field by its path, once per probe, at the severity a strict client needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rrkit.cli import main
from rrkit.conform.server import Target, run_server
from rrkit.conform.server.answer import Answer
from rrkit.conform.server.fields import field_findings
from rrkit.protocol import IdGenerator, ResponseEvents
from rrkit.protocol import events as ev
from rrkit.report import Finding, Place, Severity
from rrkit.script import load_script

from ..errortrap import Serve


def _events(change: Any) -> list[dict[str, Any]]:
    """A correct text reply's events, each changed by `change` (which may change it in place)."""
    build = ResponseEvents({"model": "gpt-test", "input": "hi"}, ids=IdGenerator.counting(), created_at=1)
    events = [*build.start(), *build.message("Hello there!", chunks=2), *build.completed()]
    for event in events:
        change(event)
    return events


def _script(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    """A script that answers every request with these events, verbatim (JSON is YAML)."""
    path = tmp_path / "verbatim.yaml"
    steps = [{"repeat": True, "events": [{"event": event} for event in events]}]
    path.write_text(json.dumps({"name": "verbatim", "responses": steps}), encoding="utf-8")
    return path


def _fields(url: str, probe: str = "sse-text") -> list[Finding]:
    report = run_server(Target(url), only=[probe])
    return [finding for finding in report.findings if finding.rule == "fields"]


def _without_temperature(event: dict[str, Any]) -> None:
    if isinstance(event.get("response"), dict):
        event["response"].pop("temperature", None)


def test_a_response_object_without_a_required_field_is_a_must_naming_the_field_once_per_probe(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(load_script(_script(tmp_path, _events(_without_temperature))))
    findings = _fields(server.http_url)
    assert [(f.place.field, f.evidence, f.severity) for f in findings] == [
        ("response.temperature", "response.temperature: missing", Severity.MUST)
    ]
    (finding,) = findings
    assert finding.place.event == 0 and finding.place.event_type == ev.CREATED
    assert len(finding.also) == 2  # response.in_progress and response.completed lack it too: one finding


def test_a_wrong_typed_field_in_a_streamed_event_is_a_must_naming_it_by_path(serve: Serve, tmp_path: Path) -> None:
    def wrong(event: dict[str, Any]) -> None:
        if event["type"] == ev.TEXT_DELTA and event["delta"] == "Hello ":
            event["logprobs"] = "none"

    events = _events(wrong)
    server = serve(load_script(_script(tmp_path, events)))
    at = next(index for index, event in enumerate(events) if event.get("logprobs") == "none")
    for probe in ("sse-text", "upgrade"):  # over HTTP SSE, then a WebSocket
        (finding,) = _fields(server.http_url, probe)
        assert (finding.place.field, finding.place.event, finding.severity) == ("logprobs", at, Severity.MUST)
        assert finding.evidence == 'logprobs: expected array, got "none"'
    result = CliRunner().invoke(main, ["conform", "--server", server.http_url, "--only", "sse-text"])
    assert result.exit_code == 1 and "field logprobs" in result.output and 'got "none"' in result.output


def test_a_value_out_of_range_is_a_should_and_a_field_another_check_names_is_left_to_it() -> None:
    def hot(event: dict[str, Any]) -> None:
        if event["type"] == ev.COMPLETED:
            event["response"]["temperature"] = 5  # the spec's maximum is 2: clients read past it

    events = _events(hot)
    events[1]["sequence_number"] = "x"  # the order rules' (the `stream` check's), not reported twice
    answer = Answer("p", 0, "http", {}, status=200, headers={"content-type": "text/event-stream"}, events=events)
    (found,) = field_findings([answer])
    assert (found.place.field, found.severity, found.place.event) == ("response.temperature", Severity.SHOULD, 9)
    assert found.evidence == "response.temperature: 5 is greater than the maximum of 2"
    named = Finding(rule="stream", place=Place(label=answer.place, field="response.temperature"), reason="r")
    assert field_findings([answer], [named]) == []
