"""A server conformance run: every probe over every transport asked for, its findings, computed once and
written as JSON, JUnit XML or (by `render`) a terminal table."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack
from urllib.parse import urlsplit

from ...protocol.exceptions import ServerUnreachable
from ...protocol.vocabulary import TRANSPORTS, Transport
from ..junit import Case, Suite
from .answer import Answer
from .checks import Finding, Severity, judge_answer, upgrade_broken
from .drive import Target, read_upgrade, run_probe
from .probe import Probe, probe_catalogue, select_probes
from .sdk import sdk_version


@dataclass(frozen=True)
class ProbeResult:
    """One probe over one transport: what each step was answered, and the findings."""

    probe: str
    transport: Transport
    answers: tuple[Answer, ...]
    findings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, object]:
        steps = [{"status": a.status, "ending": a.ending.value, "events": len(a.events)} for a in self.answers]
        findings = [finding.to_dict() for finding in self.findings]
        return dict(probe=self.probe, transport=self.transport, ok=self.ok, steps=steps, findings=findings)

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

    def to_dict(self) -> dict[str, object]:
        return {
            "server": self.server,
            "ok": self.ok,
            "sdk": self.sdk,
            "must": self.count(Severity.MUST),
            "should": self.count(Severity.SHOULD),
            "results": [result.to_dict() for result in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_junit(self) -> str:
        """JUnit XML: one test case per probe and transport, a failure per `must` finding (the `should` ones in
        its output)."""
        cases = [
            Case(
                f"rrkit.conform.server.{result.transport}",
                result.probe,
                [(f.requires, str(f)) for f in result.findings if f.severity is Severity.MUST],
                "\n".join(str(f) for f in result.findings if f.severity is Severity.SHOULD),
            )
            for result in self.results
        ]
        return Suite("rrkit conform --server", {"server": self.server}, cases).to_xml()


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
) -> ServerReport:
    """`run_server`, on the running event loop: every probe of `probes` (the catalogue), `only` the named ones, over
    each of `transports` a probe applies to; `on_result` is called as each one ends."""
    chosen = select_probes(list(probes) if probes is not None else probe_catalogue(), tuple(only))
    await asyncio.to_thread(_reachable, target)
    checked = "ws" in transports and any(
        "ws" in probe.transports and any(expect.check == "upgrade" for step in probe.steps for expect in step.expect)
        for probe in chosen
    )
    upgrade_reported = checked and upgrade_broken(await read_upgrade(target))
    results = []
    for probe in chosen:
        for transport in (t for t in transports if t in probe.transports):
            answers = await run_probe(probe, transport, target)
            findings = [
                finding
                for step, answer in zip(probe.steps, answers, strict=False)
                for finding in judge_answer(answer, step.expect, upgrade_reported=upgrade_reported)
            ]
            result = ProbeResult(probe.name, transport, tuple(answers), tuple(findings))
            results.append(result)
            if on_result is not None:
                on_result(result)
    return ServerReport(target.base_url, tuple(results), sdk_version())
