"""`rrkit conform --server URL` on the routes beyond the create: rrkit's fake server, correct on every route, has no
finding at all; broken one duty at a time (tests/conform/broken_routes.py), it gets exactly the `must` finding that
duty deserves, at every step that meets it; a server that offers no other route is told so as `should` findings,
never failed for it, and no step after an unanswered one is judged."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rrkit.conform.server import ServerReport, Target, probe_catalogue, run_server
from rrkit.protocol import Rule
from rrkit.report import Finding, Severity

from ..errortrap import Serve
from .broken_routes import BrokenRouteServer, RouteFault
from .broken_servers import ResponsesServer

TIMEOUT = 30.0
ROUTE_PROBES = tuple(probe.name for probe in probe_catalogue() if any(step.path for step in probe.steps))

Start = Callable[[RouteFault | None], BrokenRouteServer]


@pytest.fixture
def start(serve: Serve) -> Iterator[Start]:
    def started(fault: RouteFault | None) -> BrokenRouteServer:
        return serve.guard(BrokenRouteServer(fault).start_in_thread())

    yield started


def judge(url: str, only: tuple[str, ...] = ROUTE_PROBES) -> ServerReport:
    return run_server(Target(url, timeout=TIMEOUT), only=only)


def musts(report: ServerReport) -> list[Finding]:
    return [finding for finding in report.findings if finding.severity is Severity.MUST]


def test_the_catalogue_has_a_probe_for_every_route_duty() -> None:
    assert set(ROUTE_PROBES) == {
        "background-poll",
        "cancel",
        "conversations",
        "delete",
        "input-items",
        "resource-routes",
        "resume-stream",
    }


def test_rrkit_s_own_server_passes_every_probe_with_no_finding(start: Start) -> None:
    report = judge(start(None).http_url, only=())
    ran = {(result.probe, result.transport) for result in report.results}
    assert ran == {(probe.name, transport) for probe in probe_catalogue() for transport in probe.transports}
    assert report.ok and report.findings == [], [str(finding) for finding in report.findings]


DESERVED: dict[RouteFault, tuple[str, str, set[str]]] = {
    RouteFault.RESUME_REPEATS: ("resumed", Rule.SEQUENCE.value, {"resume-stream [http] step 2"}),
    RouteFault.RESUME_SKIPS: ("resumed", Rule.SEQUENCE.value, {"resume-stream [http] step 2"}),
    RouteFault.CANCEL_ANYTHING: ("refused", "never accepted", {"cancel [http] step 3"}),
    RouteFault.DELETE_KEEPS: ("refused", "never accepted", {"delete [http] step 4"}),
    RouteFault.ITEMS_ANY_ORDER: (
        "page",
        "in the order asked",
        {"input-items [http] step 2", "input-items [http] step 3"},
    ),
    RouteFault.ITEMS_UNPAGED: ("page", "at most `limit`", {"input-items [http] step 2", "input-items [http] step 4"}),
    RouteFault.CONVERSATION_AND_PREVIOUS: ("refused", "never accepted", {"conversations [http] step 4"}),
}


def test_every_fault_is_tested() -> None:
    assert set(DESERVED) == set(RouteFault)


@pytest.mark.parametrize("fault", list(RouteFault), ids=[fault.value for fault in RouteFault])
def test_a_server_broken_on_one_route_gets_exactly_the_must_finding_it_deserves(
    start: Start, fault: RouteFault
) -> None:
    check, requires, places = DESERVED[fault]
    report = judge(start(fault).http_url)
    found = musts(report)
    assert not report.ok
    others = [str(finding) for finding in found if finding.rule != check or requires not in finding.reason]
    assert others == [], "more than the deserved finding is reported as must"
    assert {finding.place.label.split(" (")[0] for finding in found} == places


def test_a_server_that_offers_no_other_route_gets_should_findings_and_no_later_step_is_judged(serve: Serve) -> None:
    server = serve.guard(ResponsesServer().start_in_thread())  # POST /v1/responses only: every other path a 404
    report = judge(server.url)
    assert report.ok and musts(report) == [], [str(finding) for finding in musts(report)]
    unanswered = {finding.place.label.split(" (")[0] for finding in report.findings}
    assert "delete [http] step 2" in unanswered and "resume-stream [http] step 2" in unanswered
    assert not any(place.startswith("delete [http] step 4") for place in unanswered)  # after a step unanswered
