"""A server conformance run: every probe over every transport asked for and its findings, computed once and
given to the report layer (`to_report`)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack
from urllib.parse import urlsplit

from ...protocol.exceptions import ServerUnreachable
from ...protocol.vocabulary import TRANSPORTS, Transport
from ...report import Case, Finding, Place, Report, Severity
from ..timeouts import RUN_BUDGET
from .answer import Answer
from .checks import judge_answer, upgrade_broken
from .drive import Target, read_target_upgrade, run_probe
from .fields import field_findings
from .probe import Probe, probe_catalogue, select_probes
from .sdk import sdk_version


@dataclass(frozen=True)
class ProbeResult:
    """One probe over one transport: what each step was answered, and the findings."""

    probe: str
    transport: Transport
    answers: tuple[Answer, ...]
    findings: tuple[Finding, ...]

    def steps(self) -> list[dict[str, object]]:
        """How each step was answered: its status, how it ended, how many events."""
        return [{"status": a.status, "ending": a.ending.value, "events": len(a.events)} for a in self.answers]

    @property
    def ok(self) -> bool:
        """No `must` finding."""
        return not any(finding.severity is Severity.MUST for finding in self.findings)


@dataclass(frozen=True)
class ServerReport:
    """Every probe judged over every transport asked for, for one server."""

    server: str
    results: tuple[ProbeResult, ...]
    sdk: str | None  # the `openai` SDK version whose types were checked (None: not installed, not checked)

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    @property
    def findings(self) -> list[Finding]:
        return [finding for result in self.results for finding in result.findings]

    def count(self, severity: Severity) -> int:
        return sum(finding.severity is severity for finding in self.findings)

    def summary(self) -> str:
        must, should = self.count(Severity.MUST), self.count(Severity.SHOULD)
        sdk = f"SDK types of openai {self.sdk}" if self.sdk else "SDK types not checked (no openai package)"
        return f"{self.server}: {len(self.results)} probe run(s), {must} must and {should} should finding(s); {sdk}"

    def to_report(self) -> Report:
        """The findings model every judge shares: a case per probe and transport; `detail` has how each step was
        answered and the SDK whose types were checked."""
        cases = tuple(
            Case(
                group=f"rrkit.conform.server.{result.transport}",
                name=result.probe,
                findings=result.findings,
                output=", ".join(f"{step['status']} {step['ending']}" for step in result.steps()),
            )
            for result in self.results
        )
        detail = {
            "sdk": self.sdk,
            "results": [
                {"probe": result.probe, "transport": result.transport, "ok": result.ok, "steps": result.steps()}
                for result in self.results
            ],
        }
        properties = {"server": self.server} | ({"sdk": self.sdk} if self.sdk else {})
        return Report(
            tool="conform --server",
            subject=self.server,
            summary=self.summary(),
            properties=properties,
            cases=cases,
            detail=detail,
        )


async def _probe_result(
    probe: Probe, transport: Transport, target: Target, left: float, upgrade_reported: bool, budget: float
) -> ProbeResult:
    """A probe run and judged within what is `left` of the budget and one answer's timeout (a probe in progress
    when the budget ends may finish the answer it waits for; one of several slow steps is cut there)."""
    try:
        answers = await asyncio.wait_for(run_probe(probe, transport, target), left + target.timeout)
    except TimeoutError:
        return _not_run(probe.name, transport, budget, cut=True)
    findings = [
        finding
        for step, answer in zip(probe.steps, answers, strict=False)
        for finding in judge_answer(answer, step.expect, upgrade_reported=upgrade_reported)
    ]
    findings += field_findings(answers, findings)
    return ProbeResult(probe.name, transport, tuple(answers), tuple(findings))


def _not_run(probe: str, transport: Transport, budget: float, cut: bool = False) -> ProbeResult:
    """A probe the run's budget left no time for (`cut`: it was running when the budget and one more answer's
    timeout were spent)."""
    spent = (
        f"cut: the run's budget of {budget:g} s was spent while it ran (its answers so far not judged; --budget)"
        if cut
        else f"not run: the run's budget of {budget:g} s was spent (see the findings before it; --budget)"
    )
    finding = Finding(
        rule="budget",
        place=Place(label=f"{probe} [{transport}]"),
        reason="every probe is judged within the run's budget",
        evidence=spent,
    )
    return ProbeResult(probe, transport, (), (finding,))


def _reachable(target: Target) -> None:
    """ServerUnreachable unless something accepts connections where the server should be."""
    parts = urlsplit(target.http_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=min(target.timeout, 10.0)).close()
    except OSError as error:
        raise ServerUnreachable(
            f"{target.base_url}: nothing answers at {parts.hostname}:{port} ({error.strerror or error}); "
            "start the server, or give its base URL (for example http://127.0.0.1:8000/v1)"
        ) from None


class RunOptions(TypedDict, total=False):
    """What narrows a run: `only` the named probes, over `transports`, from `probes` in place of the catalogue;
    `on_result`, called as each probe run ends."""

    only: Sequence[str]
    transports: Sequence[Transport]
    probes: Sequence[Probe] | None
    on_result: Callable[[ProbeResult], None] | None
    budget: float


def run_server(target: Target, **options: Unpack[RunOptions]) -> ServerReport:
    """Judge the server at `target` on the probe catalogue over each transport a probe applies to (see
    RunOptions). From a running event loop (an async test), await `judge_server` instead."""
    return asyncio.run(judge_server(target, **options))


async def judge_server(
    target: Target,
    *,
    only: Sequence[str] = (),
    transports: Sequence[Transport] = TRANSPORTS,
    probes: Sequence[Probe] | None = None,
    on_result: Callable[[ProbeResult], None] | None = None,
    budget: float = RUN_BUDGET,
) -> ServerReport:
    """`run_server`, on the running event loop: every probe of `probes` (the catalogue), `only` the named ones, over
    each of `transports` a probe applies to; `on_result` is called as each one ends. Once `budget` seconds are
    spent (a server that answers slowly, or never), the probes left are not run, each a `must` finding: a probe
    not judged does not pass."""
    ends = asyncio.get_running_loop().time() + budget  # the whole run, reaching the server included
    chosen = select_probes(list(probes) if probes is not None else probe_catalogue(), tuple(only))
    await asyncio.to_thread(_reachable, target)
    checked = "ws" in transports and any(
        "ws" in probe.transports and any(expect.check == "upgrade" for step in probe.steps for expect in step.expect)
        for probe in chosen
    )
    upgrade_reported = checked and upgrade_broken(await read_target_upgrade(target))
    results = []
    for probe in chosen:
        for transport in (t for t in transports if t in probe.transports):
            left = ends - asyncio.get_running_loop().time()
            if left <= 0:
                result = _not_run(probe.name, transport, budget)
            else:
                result = await _probe_result(probe, transport, target, left, upgrade_reported, budget)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return ServerReport(target.base_url, tuple(results), sdk_version())
