"""`rrkit conform` on background responses (the opt-in scenarios `background-resume` and `background-poll`): rrkit's
reference client and a client on the official Python SDK resume a broken stream after the last event they got, the
SDK client polls a background response to its end, and each holds every must; the same client broken on purpose
(BROKEN_RESUME, BROKEN_POLL: posting again, resuming one event early or late, polling with no wait or past the end)
breaks exactly the `resumed` or `polled` must; the default run of the catalogue leaves the opt-in scenarios out."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rrkit.conform import CommandClient, ConformReport, catalogue, run
from rrkit.conform.scenario import select

SCENARIO = "background-resume"
TIMEOUT = 30.0
HERE = Path(__file__).parent


def judged(client: object) -> ConformReport:
    return run(client, only=(SCENARIO,), timeout=TIMEOUT)  # type: ignore[arg-type]


def failed(report: ConformReport) -> set[str]:
    return {verdict.expectation for result in report.results for verdict in result.verdicts if not verdict.held}


def test_the_opt_in_scenario_runs_only_when_named() -> None:
    assert SCENARIO not in {scenario.name for scenario in catalogue()}
    assert [scenario.name for scenario in select(catalogue(opt_in=True), (SCENARIO,))] == [SCENARIO]


def test_the_reference_client_resumes_after_the_last_event_it_got() -> None:
    report = judged(None)
    assert report.ok, [verdict.seen for result in report.results for verdict in result.verdicts]
    (result,) = report.results
    assert [attempt.kind for attempt in result.run.attempts] == ["full", "resume"]


def test_a_client_on_the_official_sdk_resumes_and_holds_every_must() -> None:
    report = judged(CommandClient([sys.executable, str(HERE / "sdk_client.py")]))
    assert report.ok, [verdict.seen for result in report.results for verdict in result.verdicts]


@pytest.mark.parametrize(
    ("mode", "seen"),
    [("repost", "posted again"), ("repeat", "repeats events"), ("skip", "skips events")],
)
def test_a_client_that_resumes_wrongly_breaks_exactly_the_resumed_must(mode: str, seen: str) -> None:
    report = judged(CommandClient([sys.executable, str(HERE / "sdk_client.py")], env={"BROKEN_RESUME": mode}))
    assert failed(report) == {"resumed"}
    (verdict,) = [v for result in report.results for v in result.verdicts if not v.held]
    assert seen in verdict.seen


POLL = "background-poll"


def test_a_client_on_the_official_sdk_polls_a_background_response_to_its_end_and_holds_every_must() -> None:
    report = run(CommandClient([sys.executable, str(HERE / "sdk_client.py")]), only=(POLL,), timeout=TIMEOUT)
    assert report.ok, [verdict.seen for result in report.results for verdict in result.verdicts]
    (result,) = report.results
    kinds = [attempt.kind for attempt in result.run.attempts]
    assert kinds[0] == "full" and set(kinds[1:]) == {"poll"} and len(kinds) >= 6  # 2 queued, 2 in progress, the end


@pytest.mark.parametrize(
    ("mode", "seen"),
    [("hot", "no wait"), ("past_end", "more time(s) after"), ("repost", "2 creates")],
)
def test_a_client_that_polls_wrongly_breaks_exactly_the_polled_must(mode: str, seen: str) -> None:
    client = CommandClient([sys.executable, str(HERE / "sdk_client.py")], env={"BROKEN_POLL": mode})
    report = run(client, only=(POLL,), timeout=TIMEOUT)
    assert {verdict.expectation for result in report.results for verdict in result.verdicts if not verdict.held} == {
        "polled"
    }
    (verdict,) = [v for result in report.results for v in result.verdicts if not v.held]
    assert seen in verdict.seen
