"""`rrkit conform --server` probes steering (issue 48): the `steer` probe sends a `response.steer` frame once its
response is created; a server that answers it as the protocol says has no finding (one that does not steer and
says so, one that accepts, stops the response and creates the successor), a server that ignores the frame or
accepts without a successor gets a `must` naming what it broke."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rrkit.conform.server import ServerReport, Target, run_server
from rrkit.conform.server.checks import STEER_RULES
from rrkit.protocol.events import Event
from rrkit.protocol.ids import IdGenerator
from rrkit.report import Severity
from rrkit.script import Script, SteerStep, reply, text
from rrkit.script.select import ScriptState
from rrkit.script.steering import answer_steer

from ..errortrap import Serve

SLOW = reply(*(text(f"{n}\n") for n in range(1, 51))).delayed(each=0.01)
"""Fifty numbers, one item each, 10 ms between events: several seconds of item boundaries for a steer to land on."""


SHORT = reply(*(text(f"{n}\n") for n in range(1, 4))).delayed(each=0.01)
IDLE = 1.0
"""Seconds a probe waits for a frame where the server stays silent: 100 times the gap between two of its events."""


def steer_report(serve: Serve, *, idle: float = 10.0, **server: Any) -> ServerReport:
    running = serve(**server)
    return run_server(Target(running.http_url, timeout=idle), transports=("ws",), only=("steer",))


def musts(report: ServerReport) -> set[str]:
    return {finding.reason for finding in report.findings if finding.severity is Severity.MUST}


class IgnoresSteering(ScriptState):
    """A server that takes a steer frame and says nothing back."""

    async def steer(self, frame: Mapping[str, Any], *, connection_id: int | None, ids: IdGenerator) -> list[Event]:
        return []


class AcceptsWithoutSuccessor(ScriptState):
    """A server that says it accepted the input, and never creates the successor that would commit it."""

    async def steer(self, frame: Mapping[str, Any], *, connection_id: int | None, ids: IdGenerator) -> list[Event]:
        return answer_steer(frame, SteerStep(), ids)


def test_a_server_that_does_not_steer_and_says_so_has_no_finding(serve: Serve) -> None:
    report = steer_report(serve, script=Script(default=reply(text("1 2 3"))))
    assert not report.findings, [finding.reason for finding in report.findings]


def test_a_server_that_stops_the_response_and_creates_the_successor_has_no_finding(serve: Serve) -> None:
    script = Script(steer=[SteerStep(repeat=True)], default=reply(text("ok"))).queue(SLOW, reply(text("1 2 3")))
    report = steer_report(serve, script=script)
    assert not report.findings, [finding.reason for finding in report.findings]
    [result] = report.results
    steered = result.answers[0]
    types = [event.get("type") for event in steered.events]
    assert "response.steer.accepted" in types and types.count("response.created") == 2


def test_a_server_that_ignores_a_steer_frame_gets_a_must(serve: Serve) -> None:
    report = steer_report(serve, idle=IDLE, source=IgnoresSteering(Script(default=SHORT)))
    assert STEER_RULES["answered"] in musts(report)


def test_a_server_that_accepts_without_a_successor_gets_a_must(serve: Serve) -> None:
    report = steer_report(serve, idle=IDLE, source=AcceptsWithoutSuccessor(Script(default=SHORT)))
    assert STEER_RULES["successor"] in musts(report)
