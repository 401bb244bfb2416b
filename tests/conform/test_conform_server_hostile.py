"""A referee a hostile server cannot knock over nor fool: one answer too large to read is that probe's finding,
every other probe still runs, and the report and its JUnit file are written; a correct stream sent gzip-encoded
is read as the official SDK reads it, with no finding, and one that is not UTF-8 text is a finding, as the SDK
refuses it."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.conform.server import Target, run_server
from rrkit.drive.remote import MAX_BODY

from ..errortrap import Serve
from .broken_servers import ResponsesServer
from .test_conform_server_broken import CREATE_PROBES, ONLY, TIMEOUT


@pytest.fixture
def huge(serve: Serve) -> ResponsesServer:
    """The small correct server, but its first stream over SSE opens with a 100 MB event."""
    return serve.guard(ResponsesServer(huge_first_event=True).start_in_thread())


def test_a_100_mb_event_is_one_probe_s_finding_and_every_other_probe_runs(
    huge: ResponsesServer, tmp_path: Path
) -> None:
    server, junit = huge, tmp_path / "server.xml"
    args = ["conform", "--server", server.url, "--transport", "http", "--timeout", str(TIMEOUT), "--json"]
    result = CliRunner().invoke(main, [*args, "--junit", str(junit), *ONLY])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    failed = [case for case in report["cases"] if not case["ok"]]
    assert len(failed) == 1, [case["name"] for case in failed]
    musts = [f for f in failed[0]["findings"] if f["severity"] == "must"]
    assert any(f"went past {MAX_BODY} bytes" in finding["evidence"] for finding in musts), musts
    http_probes = {case["name"] for case in report["cases"]}
    assert http_probes and http_probes <= set(CREATE_PROBES) and len(report["cases"]) > 1
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("tests") == str(len(report["cases"])) and suite.get("failures") == "1"


def test_reading_a_100_mb_event_costs_the_referee_a_bounded_amount_of_memory(huge: ResponsesServer) -> None:
    server = huge
    first = CREATE_PROBES[:1]
    tracemalloc.start()
    try:
        report = run_server(Target(server.url, timeout=TIMEOUT), transports=("http",), only=first)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not report.ok
    assert peak < 6 * MAX_BODY, f"the referee peaked at {peak} bytes reading a {100 << 20}-byte event"


def test_a_correct_stream_sent_gzip_encoded_gets_no_finding(serve: Serve) -> None:
    server = serve.guard(ResponsesServer(gzip=True).start_in_thread())
    report = run_server(Target(server.url, timeout=TIMEOUT), transports=("http",), only=CREATE_PROBES)
    assert report.ok and [str(finding) for finding in report.findings if finding.severity == "must"] == []
    streamed = [answer for result in report.results for answer in result.answers if answer.streamed]
    assert streamed and all(answer.headers.get("content-encoding") == "gzip" for answer in streamed)


def test_a_stream_that_is_not_utf8_text_is_a_must_finding_over_http(serve: Serve) -> None:
    server = serve.guard(ResponsesServer(latin1=True).start_in_thread())
    report = run_server(Target(server.url, timeout=TIMEOUT), transports=("http",), only=CREATE_PROBES)
    musts = [finding for finding in report.findings if finding.severity == "must"]
    assert not report.ok and musts
    assert {finding.reason for finding in musts} == {"a stream is UTF-8 text (the official SDKs refuse any other)"}
    assert all(finding.evidence.startswith("byte ") for finding in musts)
