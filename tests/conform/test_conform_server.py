"""`rrkit conform --server URL`: rrkit's own server passes every probe over both transports with no finding;
the report as JSON, JUnit and HTML; the command's exit statuses; probe files with errors are named with the
place and the problem; each check judges an answer by its shape alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.conform.server import (
    CHECKS,
    Expect,
    Target,
    accept_key,
    judge_server,
    load_probe,
    probe_catalogue,
    run_server,
)
from rrkit.conform.server.answer import Answer
from rrkit.conform.server.check_texts import CHECK_TEXTS
from rrkit.conform.server.checks import judge_answer
from rrkit.conform.server.fields import field_findings
from rrkit.conform.server.retry import LONGEST_WAIT, retry_delay
from rrkit.drive.ending import Ending
from rrkit.protocol.exceptions import ConformError, ServerUnreachable, SettingError
from rrkit.report import Severity
from rrkit.script import load_script
from rrkit.script.shipped import shipped_fixtures
from rrkit.server import FakeServer


@pytest.fixture(scope="module")
def served() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


def test_rrkit_serve_passes_every_probe_over_both_transports_with_no_finding(served: FakeServer) -> None:
    report = run_server(Target(served.http_url))
    ran = {(result.probe, result.transport) for result in report.results}
    every = {(probe.name, transport) for probe in probe_catalogue() for transport in probe.transports}
    assert ran == every and len(ran) >= 14
    assert report.ok and report.findings == [], [str(finding) for finding in report.findings]


def test_the_catalogue_holds_the_protocol_s_server_duties() -> None:
    probes = {probe.name: probe for probe in probe_catalogue()}
    checks = {expect.check for probe in probes.values() for step in probe.steps for expect in step.expect}
    assert checks == set(CHECKS)  # every check is used by a probe, and every probe's check exists
    assert list(CHECK_TEXTS) == list(CHECKS)  # each said in words, in the same order, for the list
    assert {"follow-up", "unknown-previous-id", "warmup", "upgrade", "invalid-json", "json-response"} <= set(probes)
    assert probes["follow-up"].transports == ["http", "ws"] and probes["follow-up"].steps[1].follows


def test_the_cli_exits_0_and_writes_json_junit_and_html(served: FakeServer, tmp_path: Path) -> None:
    junit, html = tmp_path / "server.xml", tmp_path / "server.html"
    args = ["conform", "--server", served.http_url, "--json", "--junit", str(junit), "--html", str(html)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["counts"]["must"] == 0 and report["subject"] == served.http_url
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests") or 0) == len(report["detail"]["results"])
    assert {case.get("name") for case in suite.iter("testcase")} == {r["probe"] for r in report["detail"]["results"]}
    assert "Content-Security-Policy" in html.read_text(encoding="utf-8")


def test_list_names_every_probe_and_every_check() -> None:
    result = CliRunner().invoke(main, ["conform", "--server", "http://127.0.0.1:9/v1", "--list"])
    assert result.exit_code == 0, result.output
    for name in [probe.name for probe in probe_catalogue()] + list(CHECKS):
        assert name in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--server", "http://127.0.0.1:9/v1"], "nothing answers at 127.0.0.1:9"),
        (["--server", "ftp://example.test/v1"], "invalid server URL 'ftp://example.test/v1'"),
        (["--server", "http://127.0.0.1:9/v1", "--only", "folow-up"], "(did you mean 'follow-up'?)"),
        (["--server", "http://127.0.0.1:9/v1", "--profile", "codex"], "no client command and no --profile"),
    ],
    ids=["unreachable", "bad-url", "unknown-probe", "with-a-profile"],
)
def test_usage_and_connection_errors_exit_2_saying_what_to_do(args: list[str], said: str) -> None:
    result = CliRunner().invoke(main, ["conform", *args])
    assert result.exit_code == 2, result.output
    assert said in result.output


def test_an_unreachable_server_is_a_connection_error_under_the_root() -> None:
    with pytest.raises(ServerUnreachable) as caught:
        run_server(Target("http://127.0.0.1:9/v1"))
    assert isinstance(caught.value, ConnectionError)
    with pytest.raises(SettingError):
        Target("not a url")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: x\ndescription: d\nsteps:\n  - expect: [{check: strem}]\n", "line 4"),
        ("name: x\ndescription: d\nsteps:\n  - follows: true\n    expect: [{check: stream}]\n", "no response to"),
        ("name: x\ndescription: d\nstep: []\n", "unknown key 'step' (did you mean 'steps'?)"),
        ("name: x\ndescription: d\nsteps:\n  - expect: [{check: refused, status: 500}]\n", "status"),
    ],
    ids=["unknown-check", "follows-nothing", "misspelt-key", "refused-with-a-5xx"],
)
def test_a_probe_file_with_an_error_is_refused_naming_the_file_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConformError) as caught:
        load_probe(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)


def test_the_accept_key_is_rfc_6455_s() -> None:
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455 section 1.3


def _answer(transport: str = "http", **fields: Any) -> Answer:
    return Answer("p", 0, transport, {}, **fields)  # type: ignore[arg-type]


def _musts(answer: Answer, *expects: Expect) -> list[str]:
    return [f.reason for f in judge_answer(answer, list(expects)) if f.severity is Severity.MUST]


def test_a_refusal_with_a_5xx_breaks_a_must_and_another_4xx_only_a_should() -> None:
    body = {"error": {"message": "no", "type": "invalid_request_error", "param": None, "code": None}}
    refused = Expect(check="refused", status=400)
    assert _musts(_answer(status=500, body=body), refused)
    other = list(judge_answer(_answer(status=422, body=body), [refused]))
    assert [f.severity for f in other] == [Severity.SHOULD] and "answered 400" in other[0].reason


def test_an_error_body_the_sdk_cannot_parse_is_a_should_naming_the_field() -> None:
    body = {"error": {"message": "no", "type": "invalid_request_error", "param": None, "code": 400}}
    findings = list(judge_answer(_answer(status=400, body=body), [Expect(check="refused", status=400)]))
    assert [(f.severity, f.reason) for f in findings] == [
        (Severity.SHOULD, "the error object parses as the official SDK's ErrorObject")
    ]
    assert findings[0].evidence.startswith("code: ")


def test_an_error_frame_without_status_or_code_is_named_at_its_event_and_field() -> None:
    frame = {"type": "error", "error": {"message": "gone", "type": "invalid_request_error", "param": None}}
    findings = list(
        judge_answer(_answer("ws", events=[frame]), [Expect(check="refused", code="previous_response_not_found")])
    )
    fields = {(f.place.field, f.severity) for f in findings}
    assert ("status", Severity.MUST) in fields
    assert ("error.code", Severity.MUST) in fields  # the code clients act on is not the one required
    assert all(f.place.event == 0 and f.place.event_type == "error" for f in findings)
    answer = _answer("ws", events=[frame])
    (missing,) = field_findings([answer])  # the spec requires `code` (null when there is none): the field check's
    assert (missing.place.field, missing.severity, missing.evidence) == (
        "error.code",
        Severity.MUST,
        "error.code: missing",
    )
    assert field_findings([answer], findings) == []  # named by the refused check already: once


def test_a_stream_cut_before_its_end_breaks_a_must_and_its_order_is_checked_as_a_prefix() -> None:
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}}
    cut = _answer(status=200, headers={"content-type": "text/event-stream"}, events=[created], ending=Ending.CUT)
    musts = _musts(cut, Expect(check="stream"))
    assert len(musts) == 1 and "an answer ends as the protocol says" in musts[0]


def test_data_that_is_not_json_is_named_at_its_place() -> None:
    answer = _answer(status=200, headers={"content-type": "text/event-stream"}, unreadable=[(0, "[DONE]")])
    findings = [f for f in judge_answer(answer, [Expect(check="stream")]) if "JSON object" in f.reason]
    assert len(findings) == 1 and findings[0].evidence == "got '[DONE]'"


def test_a_requirement_broken_at_every_event_is_one_finding_that_counts_the_others() -> None:
    events = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.in_progress", "response": {"id": "resp_1"}},
        {"type": "response.completed", "response": {"id": "resp_1", "output": []}},
    ]
    answer = _answer(status=200, headers={"content-type": "text/event-stream"}, events=events)
    sequence = [f for f in judge_answer(answer, [Expect(check="stream")]) if "sequence_number" in f.reason]
    assert len(sequence) == 1 and (sequence[0].place.event, sequence[0].also) == (0, (1, 2))
    assert str(sequence[0]).endswith("(and at 2 more events)") and sequence[0].model_dump()["also"] == (1, 2)


@pytest.mark.parametrize("fixture", sorted(shipped_fixtures()))
def test_rrkit_serve_with_every_shipped_fixture_has_no_must_finding(fixture: str) -> None:
    """A scripted fault the real service shows too (a 5xx, a 429, a cut, a stall, a refused upgrade, a failure a
    client does not retry) is retried as a client would, or named as a `should`: never taken for a broken shape."""
    with FakeServer(load_script(f"fixture:{fixture}")) as server:
        report = run_server(Target(server.http_url, timeout=10))
    assert [str(f) for f in report.findings if f.severity is Severity.MUST] == []


def test_a_transient_fault_is_retried_and_named_as_a_should() -> None:
    with FakeServer(load_script("fixture:http-500")) as server:
        report = run_server(Target(server.http_url), only=("sse-text",), transports=("http",))
    (finding,) = report.findings
    assert (finding.severity, finding.reason) == (Severity.SHOULD, "a request is answered the first time")
    assert finding.evidence == "answered after status 500"


@pytest.mark.parametrize(
    ("fields", "delay"),
    [
        ({"status": 500}, 0.0),
        ({"status": 429, "headers": {"retry-after": "30"}}, LONGEST_WAIT),
        ({"status": 400, "body": {"error": {"code": "invalid_value"}}}, None),
        ({"ending": Ending.CUT}, 0.0),
        ({"ending": Ending.UNSENT}, None),
        ({"events": [{"type": "response.failed", "response": {"error": {"code": "server_error"}}}]}, 0.0),
        ({"events": [{"type": "response.failed", "response": {"error": {"code": "context_length_exceeded"}}}]}, None),
        ({"events": [{"type": "response.completed", "response": {}}]}, None),
    ],
    ids=["5xx", "429-named-delay-capped", "400", "cut", "unsent", "retryable-failure", "final-failure", "completed"],
)
def test_a_step_is_sent_again_when_a_client_would_send_it_again(fields: dict[str, Any], delay: float | None) -> None:
    assert retry_delay(_answer(**fields)) == delay


def test_the_conformance_page_judges_every_probe_on_rrkit_serve_and_lists_each_server_s_findings() -> None:
    """docs/conformance.md is written by docs/make_conformance.py; a probe added since must be run there too."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text(encoding="utf-8")
    servers = page.split("## Servers", 1)[1]
    for probe in probe_catalogue():
        for transport in probe.transports:
            assert f"| {probe.name} | {transport} | ok |" in servers, (probe.name, transport)  # rrkit serve's column
    assert "### `rrkit serve`\n\nNo finding." in servers and "### `@copilotkit/aimock` 1.43.0" in servers


async def test_an_async_test_awaits_the_same_judgement(served: FakeServer) -> None:
    report = await judge_server(Target(served.http_url), only=("follow-up", "upgrade"))
    assert [(r.probe, r.transport) for r in report.results] == [
        ("follow-up", "http"),
        ("follow-up", "ws"),
        ("upgrade", "ws"),
    ]
    assert report.ok and report.findings == []
