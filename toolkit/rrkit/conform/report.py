"""A client conformance run's result, computed once and given to the report layer as findings (`to_report`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..drive import ClientUnderTest, as_client
from ..protocol.vocabulary import TRANSPORTS, Transport
from ..report import Case, Finding, Held, Place, Report, Severity
from .checks import ScenarioResult, Verdict, judge
from .drive import play
from .profile import Profile, load_profile
from .scenario import Scenario, catalogue, select
from .timeouts import DEFAULT_TIMEOUT


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
        return [
            verdict for result in self.results for verdict in result.verdicts if not verdict.held and not verdict.na
        ]

    def to_report(self) -> Report:
        """The findings model every judge shares: a case per scenario and transport, a finding per broken
        expectation, the held ones listed; `detail` keeps each run's flow as the server saw it."""
        cases = tuple(_case(result) for result in self.results)
        kinds = "musts" if self.profile is None else f"musts and {self.profile} rules"
        judged = [result for result in self.results if not result.not_applicable]
        total = sum(len(result.verdicts) for result in judged)
        held = total - len(self.failures)
        summary = f"{self.client}: {held} of {total} {kinds} held in {len(judged)} scenario run(s)"
        if skipped := len(self.results) - len(judged):
            summary += f"; {skipped} not applicable to this client"
        detail = {
            "profile": self.profile,
            "results": [
                {
                    "scenario": result.run.scenario,
                    "transport": result.run.transport,
                    "ok": result.ok,
                    "outcome": result.run.outcome,
                    "detail": result.run.detail,
                    "flow": [str(attempt) for attempt in result.run.attempts],
                }
                for result in self.results
            ],
        }
        properties = {"client": self.client} | ({"profile": self.profile} if self.profile else {})
        return Report(
            tool="conform", subject=self.client, summary=summary, properties=properties, cases=cases, detail=detail
        )


def _case(result: ScenarioResult) -> Case:
    run = result.run
    place = Place(label=f"{run.scenario} [{run.transport}]")
    findings = tuple(
        Finding(
            rule=verdict.expectation,
            severity=Severity.SHOULD if verdict.strength == "should" else Severity.MUST,
            place=place,
            reason=verdict.why,
            evidence=verdict.seen,
            profile=verdict.strength.removeprefix("profile ") if verdict.strength.startswith("profile ") else None,
        )
        for verdict in result.verdicts
        if not verdict.held
    )
    held = tuple(Held(rule=verdict.expectation, evidence=verdict.seen) for verdict in result.verdicts if verdict.held)
    ended = f"the client: {run.outcome}" + (f" ({run.detail})" if run.detail else "")
    output = f"{ended}; the server saw: {run.flow}"
    group = f"rrkit.conform.{run.transport}"
    if result.not_applicable:
        return Case(group=group, name=run.scenario, output=output, skipped=result.not_applicable)
    return Case(group=group, name=run.scenario, findings=findings, held=held, output=output)


def run(
    client: ClientUnderTest | Sequence[str] | Callable[[dict[str, str]], object] | None = None,
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
