"""`rrkit conform --server URL` against servers broken on purpose (tests/conform/broken_servers.py), on the probes
of the create (the small server offers no other route; tests/conform/test_conform_server_routes.py judges those on
rrkit's own server): the correct server has no finding at all; each fault gets exactly the `must` finding it
deserves, at every place the probes meet it, and nothing else as `must`; the command exits 1 naming it, in its
output and in its JUnit report."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.conform.server import ProbeStep, ServerReport, Target, probe_catalogue, run_server
from rrkit.protocol import Rule
from rrkit.protocol import events as ev
from rrkit.protocol.vocabulary import TRANSPORTS, Transport
from rrkit.report import Finding, Severity

from ..errortrap import Serve
from .broken_servers import Faults, ResponsesServer

TIMEOUT = 30.0
CREATE_PROBES = tuple(probe.name for probe in probe_catalogue() if not probe.goes_to_routes)
"""The probes of `POST /v1/responses` and its WebSocket: what the small server offers."""
ONLY = [option for name in CREATE_PROBES for option in ("--only", name)]

Start = Callable[..., ResponsesServer]


@pytest.fixture
def start(serve: Serve) -> Iterator[Start]:
    """Start a (broken) server in the background, stopped at teardown; an error it logs fails the test."""

    def started(faults: Faults | None = None, *, chunks: int = 1) -> ResponsesServer:
        return serve.guard(ResponsesServer(faults, chunks=chunks).start_in_thread())

    yield started


def judge(server: ResponsesServer, transports: tuple[Transport, ...] = TRANSPORTS) -> ServerReport:
    return run_server(Target(server.url, timeout=TIMEOUT), transports=transports, only=CREATE_PROBES)


def musts(report: ServerReport) -> list[Finding]:
    return [finding for finding in report.findings if finding.severity is Severity.MUST]


def steps_where(
    held: Callable[[ProbeStep, Transport], bool], transports: tuple[Transport, ...] = TRANSPORTS
) -> set[str]:
    """The places (`probe [transport] step N`) of the catalogue's steps `held` says a fault shows at."""
    return {
        f"{probe.name} [{transport}] step {index + 1}"
        for probe in probe_catalogue()
        if probe.name in CREATE_PROBES
        for transport in probe.transports
        if transport in transports
        for index, step in enumerate(probe.steps)
        if held(step, transport)
    }


def checked(step: ProbeStep, name: str) -> bool:
    return any(expect.check == name for expect in step.expect)


@dataclass(frozen=True)
class Must:
    """The one `must` finding a fault deserves, matched on its check, a part of what it requires, and where in
    the answer it is (not on whole sentences); `places`: every step it shows at, each at least once."""

    check: str
    requires: str
    places: set[str]
    event_type: str | None = None
    field: str | None = None

    def matches(self, finding: Finding) -> bool:
        return (
            finding.rule == self.check
            and self.requires in finding.reason
            and (self.event_type is None or finding.place.event_type == self.event_type)
            and (self.field is None or finding.place.field == self.field)
        )


@dataclass(frozen=True)
class Broken:
    faults: Faults
    must: Must
    transports: tuple[Transport, ...] = TRANSPORTS


STREAMED = steps_where(lambda step, _: checked(step, "stream"))
"""Every streamed answer (a warmup's included), over either transport."""
REPLIES = steps_where(lambda step, _: checked(step, "stream") and not checked(step, "no_output"))
"""Every streamed answer with output: a text reply."""

BROKEN = {
    "no_sequence_number": Broken(Faults(no_sequence_number=True), Must("stream", Rule.SEQUENCE.value, STREAMED)),
    "delta_before_item": Broken(
        Faults(delta_before_item=True),
        Must("stream", Rule.ITEM_ADDED_FIRST.value, REPLIES, event_type=ev.TEXT_DELTA),
    ),
    "two_terminals": Broken(
        Faults(two_terminals=True), Must("stream", Rule.ONE_TERMINAL.value, STREAMED, event_type=ev.COMPLETED)
    ),
    "error_frame_without_status": Broken(
        Faults(error_frame_without_status=True),
        Must(
            "refused",
            "`status`",
            steps_where(lambda step, _: checked(step, "refused"), ("ws",)),
            event_type=ev.ERROR,
            field="status",
        ),
    ),
    "warmup_with_output": Broken(
        Faults(warmup_with_output=True),
        Must(
            "no_output",
            "without output",
            steps_where(lambda step, _: checked(step, "no_output")),
            event_type=ev.ITEM_ADDED,
        ),
    ),
    "crash_on_invalid_json": Broken(
        Faults(crash_on_invalid_json=True),
        Must("refused", "never a 5xx", steps_where(lambda step, _: step.raw is not None, ("http",))),
    ),
    "wrong_accept_key": Broken(
        Faults(wrong_accept_key=True),
        Must(
            "upgrade",
            "Sec-WebSocket-Accept",
            steps_where(lambda step, _: checked(step, "upgrade")),
            field="sec-websocket-accept",
        ),
    ),
}


def test_the_faults_are_one_flag_each_and_every_one_is_tested() -> None:
    assert {broken.faults.name for broken in BROKEN.values()} == set(Faults.__dataclass_fields__)
    for broken in BROKEN.values():
        assert sum(map(bool, vars(broken.faults).values())) == 1
        assert broken.must.places, broken  # the catalogue still has a step that meets the fault


@pytest.mark.parametrize("chunks", [1, 3], ids=["one-delta", "three-deltas"])
def test_the_correct_server_passes_every_probe_over_both_transports_with_no_finding(start: Start, chunks: int) -> None:
    report = judge(start(chunks=chunks))
    ran = {(result.probe, result.transport) for result in report.results}
    expected = {(probe.name, transport) for probe in probe_catalogue() for transport in probe.transports}
    assert ran == {(probe, transport) for probe, transport in expected if probe in CREATE_PROBES}
    assert report.ok and report.findings == [], [str(finding) for finding in report.findings]


def assert_exactly(report: ServerReport, must: Must) -> None:
    """Not ok; every `must` finding is the deserved one, and it is at every place it should be (and no other)."""
    found = musts(report)
    assert not report.ok
    others = [str(finding) for finding in found if not must.matches(finding)]
    assert others == [], "more than the deserved finding is reported as must"
    assert {finding.place.label for finding in found} == must.places


@pytest.mark.parametrize("broken", BROKEN.values(), ids=BROKEN)
def test_a_broken_server_gets_exactly_the_must_finding_it_deserves(start: Start, broken: Broken) -> None:
    report = judge(start(broken.faults), broken.transports)
    assert_exactly(report, broken.must)


def test_a_server_without_sequence_numbers_breaks_exactly_the_sequence_rule(start: Start) -> None:
    report = judge(start(Faults(no_sequence_number=True)))
    assert_exactly(report, BROKEN["no_sequence_number"].must)
    shoulds = [finding for finding in report.findings if finding.severity is Severity.SHOULD]
    assert shoulds and all("sequence_number" in finding.evidence for finding in shoulds)  # the SDK refuses them too


def test_a_server_with_two_terminal_events_over_sse_breaks_exactly_the_one_terminal_rule(start: Start) -> None:
    report = judge(start(Faults(two_terminals=True)), ("http",))
    over_sse = steps_where(lambda step, _: checked(step, "stream"), ("http",))
    assert_exactly(report, Must("stream", Rule.ONE_TERMINAL.value, over_sse, event_type=ev.COMPLETED))
    assert {finding.place.event for finding in musts(report)} == {9}  # the second completed, after the stream's end


def test_a_delta_before_its_item_among_several_breaks_only_the_item_first_rule(start: Start) -> None:
    report = judge(start(Faults(delta_before_item=True), chunks=3))
    assert_exactly(report, BROKEN["delta_before_item"].must)


def test_a_server_that_cannot_open_a_websocket_is_named_once_by_the_upgrade_and_its_http_is_clean(
    start: Start,
) -> None:
    """A wrong accept key: the upgrade probe names it; every other WebSocket step could not be sent because of it
    and says nothing more (the upgrade finding is the one to act on); HTTP is judged clean."""
    report = judge(start(Faults(wrong_accept_key=True)))
    must = BROKEN["wrong_accept_key"].must
    assert [finding for finding in musts(report) if not must.matches(finding)] == []
    named = [finding for finding in musts(report) if must.matches(finding)]
    assert [finding.place.label for finding in named] == sorted(must.places) and "the RFC's GUID" in named[0].reason
    for result in report.results:
        if result.transport == "http":
            assert result.findings == (), result.probe
        else:
            endings = {answer.ending.value for answer in result.answers}
            assert endings <= {"unsent", "skipped"}, result.probe
            assert all(
                "upgrade failed" in (answer.error or "") for answer in result.answers if answer.ending.value == "unsent"
            )


# -- the command --------------------------------------------------------------------------------------------------


def _failing_cases(junit: Path) -> dict[tuple[str, str], list[str]]:
    """(transport, probe) of every failing test case, with its failures' texts (`[must] place: reason; evidence`)."""
    suite = ElementTree.parse(junit).getroot()
    return {
        (str(case.get("classname")).rsplit(".", 1)[-1], str(case.get("name"))): [
            str(failure.text) for failure in case.iter("failure")
        ]
        for case in suite.iter("testcase")
        if case.find("failure") is not None
    }


def _probes_of(places: set[str]) -> set[tuple[str, str]]:
    """`probe [transport] step N` as (transport, probe)."""
    return {(place.split(" [")[1].split("]")[0], place.split(" [")[0]) for place in places}


@pytest.mark.parametrize(
    "name", ["crash_on_invalid_json", "error_frame_without_status", "warmup_with_output", "delta_before_item"]
)
def test_the_command_exits_1_naming_the_broken_duty_in_its_output_and_its_junit_report(
    start: Start, tmp_path: Path, name: str
) -> None:
    broken = BROKEN[name]
    server, junit = start(broken.faults), tmp_path / "server.xml"
    args = ["conform", "--server", server.url, "--timeout", str(TIMEOUT), "--junit", str(junit), *ONLY]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())  # the table and the findings are wrapped to the terminal's width
    expected = [finding for finding in musts(judge(server)) if broken.must.matches(finding)]
    for finding in expected:
        assert f"[must] {finding.place}: {finding.reason}" in said
    assert f"{len(expected)} must and 0 should finding(s)" in said
    failing = _failing_cases(junit)
    assert set(failing) == _probes_of(broken.must.places)
    assert all(broken.must.requires in text for texts in failing.values() for text in texts)


def test_the_command_s_json_report_names_the_finding_by_check_event_and_field(start: Start) -> None:
    server = start(Faults(error_frame_without_status=True))
    result = CliRunner().invoke(main, ["conform", "--server", server.url, "--timeout", str(TIMEOUT), "--json", *ONLY])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert report["counts"]["must"] == len(BROKEN["error_frame_without_status"].must.places)
    found = [finding for case in report["cases"] for finding in case["findings"]]
    assert {
        (f["rule"], f["severity"], f["place"]["event"], f["place"]["event_type"], f["place"]["field"]) for f in found
    } == {("refused", "must", 0, "error", "status")}
