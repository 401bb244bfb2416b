"""A conformance run's result, computed once and written as JSON, JUnit XML or (by `render`) a terminal table."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..protocol.vocabulary import TRANSPORTS, Transport
from .checks import ScenarioResult, Verdict, judge
from .drive import ConformClient, as_client, play
from .junit import Case, Suite
from .profile import Profile, load_profile
from .scenario import Scenario, catalogue, select

DEFAULT_TIMEOUT = 60.0
"""Seconds a client gets per scenario and transport."""


@dataclass(frozen=True)
class ConformReport:
    """Every scenario judged over every transport asked for, for one client."""

    client: str
    results: tuple[ScenarioResult, ...]
    profile: str | None = None

    @property
    def ok(self) -> bool:
        """Every must held."""
        return all(result.ok for result in self.results)

    @property
    def failures(self) -> list[Verdict]:
        return [verdict for result in self.results for verdict in result.verdicts if not verdict.held]

    def to_dict(self) -> dict[str, object]:
        return {
            "client": self.client,
            "profile": self.profile,
            "ok": self.ok,
            "results": [
                {
                    "scenario": result.run.scenario,
                    "transport": result.run.transport,
                    "ok": result.ok,
                    "outcome": result.run.outcome,
                    "detail": result.run.detail,
                    "flow": [str(attempt) for attempt in result.run.attempts],
                    "verdicts": [verdict.to_dict() for verdict in result.verdicts],
                }
                for result in self.results
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_junit(self) -> str:
        """JUnit XML: one test suite, one test case per scenario and transport, a failure per broken must."""
        cases = [
            Case(
                f"rrkit.conform.{result.run.transport}",
                result.run.scenario,
                [
                    (f"{verdict.expectation} ({verdict.strength}): {verdict.seen}", verdict.why)
                    for verdict in result.verdicts
                    if not verdict.held
                ],
                "\n".join(str(attempt) for attempt in result.run.attempts),
            )
            for result in self.results
        ]
        return Suite("rrkit conform", {"client": self.client}, cases).to_xml()


def run(
    client: ConformClient | Sequence[str] | Callable[[dict[str, str]], object] | None = None,
    *,
    only: Sequence[str] = (),
    transports: Sequence[Transport] = TRANSPORTS,
    timeout: float = DEFAULT_TIMEOUT,
    scenarios: Sequence[Scenario] | None = None,
    profile: Profile | str | None = None,
    on_result: Callable[[ScenarioResult], None] | None = None,
) -> ConformReport:
    """Judge `client` (rrkit's reference client by default; a command as a list of strings; a Python callable
    given the command's environment as a dict, see FunctionClient) on the catalogue (or `scenarios`), `only` the named
    ones, over each transport of `transports` a scenario applies to, on the musts and the rules of `profile` (a
    shipped profile's name, a file, or a Profile); `on_result` is called as each one ends."""
    client = as_client(client)
    every = list(scenarios) if scenarios is not None else catalogue(opt_in=bool(only))
    chosen = select(every, tuple(only))
    if isinstance(profile, str):
        profile = load_profile(profile)
    if profile is not None:
        profile.check_scenarios(every, f"profile {profile.name}")
    results = []
    for scenario in chosen:
        for transport in (t for t in transports if t in scenario.transports):
            result = judge(scenario, play(scenario, transport, client, timeout), profile)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return ConformReport(client.describe(), tuple(results), profile.name if profile is not None else None)
