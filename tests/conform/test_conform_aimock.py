"""`rrkit conform --server` on a Responses server nobody here wrote: the `@copilotkit/aimock` npm package
(pinned in .ci/run), started with its own documented command (`llmock -p PORT -f FIXTURES`) and a one-line
fixture. The run completes over both transports, and what it finds is this version's own, finding by finding."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rrkit.conform.server import ServerReport, Target, run_server
from rrkit.report import Finding, Severity

from .aimock import aimock_server, missing


@pytest.fixture(scope="module")
def aimock() -> Iterator[str]:
    why = missing()
    if why is not None:
        pytest.skip(why)
    with aimock_server() as url:
        yield url


@pytest.fixture(scope="module")
def report(aimock: str) -> ServerReport:
    return run_server(Target(aimock))


def _must_findings(report: ServerReport, probe: str, transport: str) -> list[Finding]:
    return [
        finding
        for result in report.results
        if (result.probe, result.transport) == (probe, transport)
        for finding in result.findings
        if finding.severity is Severity.MUST
    ]


def _musts(report: ServerReport, probe: str, transport: str) -> set[str]:
    """The `must` reasons of one probe run, the field check's left out (its own test below)."""
    return {f.reason for f in _must_findings(report, probe, transport) if f.rule != "fields"}


def _fields(report: ServerReport, probe: str, transport: str) -> set[str]:
    """What the field check found in one probe run as `must`: `field: problem`, one per field path."""
    return {f.evidence for f in _must_findings(report, probe, transport) if f.rule == "fields"}


def test_the_run_completes_over_both_transports_and_names_findings(report: ServerReport) -> None:
    assert {result.transport for result in report.results} == {"http", "ws"}
    assert all(answer.ending.value in ("whole", "skipped") for result in report.results for answer in result.answers)
    assert not report.ok and report.count(Severity.MUST) > 0


def test_its_streams_carry_no_sequence_numbers_over_either_transport(report: ServerReport) -> None:
    rule = "sequence_number starts at 0 and increases by 1"
    assert rule in _musts(report, "sse-text", "http") and rule in _musts(report, "upgrade", "ws")


def test_it_answers_requests_the_api_refuses_and_a_warmup_with_output(report: ServerReport) -> None:
    for probe in ("missing-model", "wrong-type", "unknown-previous-id"):
        assert any("never a 5xx, never accepted" in must for must in _musts(report, probe, "http")), probe
        assert any("answered with an `error` frame" in must for must in _musts(report, probe, "ws")), probe
    assert "a warmup (`generate: false`) is answered without output" in _musts(report, "warmup", "ws")


def test_its_upgrade_and_its_refusal_of_invalid_json_are_as_the_protocol_says(report: ServerReport) -> None:
    assert not any("upgrade" in must.lower() for must in _musts(report, "upgrade", "ws"))
    assert _musts(report, "invalid-json", "http") == set()


def test_its_websocket_error_frames_carry_no_status(report: ServerReport) -> None:
    musts = _musts(report, "invalid-json", "ws")
    assert musts == {"an error frame carries the HTTP `status` a client classifies it by"}


def test_the_field_check_names_the_fields_its_responses_and_errors_lack_by_path(report: ServerReport) -> None:
    """What this version sends lacks fields the spec requires (and the service sends): in the snapshot of every
    streamed event, in a whole body, in an error object."""
    streamed = _fields(report, "sse-text", "http")
    assert {"response.temperature: missing", "response.metadata: missing", "part.logprobs: missing"} <= streamed
    assert "response.usage.input_tokens_details: missing" in streamed
    assert {"temperature: missing", "tools: missing"} <= _fields(report, "json-response", "http")
    assert "error.param: missing" in _fields(report, "invalid-json", "http")
    finding = next(
        f for r in report.results if r.probe == "sse-text" for f in r.findings if f.place.field == "response.top_p"
    )
    assert finding.place.event == 0 and finding.also  # reported once, at the first event, its repeats counted on it
