"""`rrkit conform --server` on a Responses server nobody here wrote: the `@copilotkit/aimock` npm package
(pinned in .ci/run), started with its own documented command (`llmock -p PORT -f FIXTURES`) and a one-line
fixture. The run completes over both transports, and what it finds is this version's own, finding by finding."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rrkit.conform.server import ServerReport, Severity, Target, run_server

AIMOCK_VERSION = "1.43.0"
AIMOCK = Path(__file__).resolve().parents[2] / ".ci" / "node-aimock" / "node_modules" / "@copilotkit" / "aimock"
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


@pytest.fixture(scope="module")
def aimock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the aimock server needs it")
    if not (AIMOCK / "package.json").exists():
        pytest.skip(
            f"@copilotkit/aimock is not installed: npm install --prefix {AIMOCK.parents[2]} "
            f"@copilotkit/aimock@{AIMOCK_VERSION}"
        )
    assert json.loads((AIMOCK / "package.json").read_text())["version"] == AIMOCK_VERSION
    fixtures = tmp_path_factory.mktemp("aimock") / "fixtures.json"
    fixtures.write_text(json.dumps({"fixtures": [{"match": {}, "response": {"content": "Hello!"}}]}))
    command = [node, str(AIMOCK / "dist" / "cli.js"), "-h", "127.0.0.1", "-p", "0", "-f", str(fixtures)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line)
            if found := LISTENING.search(line):
                threading.Thread(target=process.stdout.read, daemon=True).start()  # keep its pipe drained
                yield found.group(1) + "/v1"
                break
        else:
            pytest.fail(f"aimock exited before listening: {''.join(lines)}")
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def report(aimock: str) -> ServerReport:
    return run_server(Target(aimock))


def _musts(report: ServerReport, probe: str, transport: str) -> set[str]:
    return {
        f.requires
        for result in report.results
        if (result.probe, result.transport) == (probe, transport)
        for f in result.findings
        if f.severity is Severity.MUST
    }


def test_the_run_completes_over_both_transports_and_names_findings(report: ServerReport) -> None:
    assert {result.transport for result in report.results} == {"http", "ws"}
    assert all(answer.ending.value == "whole" for result in report.results for answer in result.answers)
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
