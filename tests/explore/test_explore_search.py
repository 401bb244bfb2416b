"""`rrkit explore` against deliberately broken clients: each bug is found within the default budget and shrunk to a
script of a handful of events, which, served again (`rrkit conform --scenario`), breaks the broken client the same
way and passes the correct one; the same seed gives the same cases and the same report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rrkit import explore
from rrkit.conform.report import run as conform
from rrkit.conform.scenario import load_scenario_or_script
from rrkit.drive import ReferenceClient
from rrkit.explore.budget import Budget
from rrkit.explore.search import Found

from . import explore_client

HANDFUL = 10  # events a minimal script keeps at most: a whole answer takes 9


def client(broken: str = "") -> Callable[[dict[str, str]], bool]:
    def explored(env: dict[str, str]) -> bool:
        return explore_client.main({**env, "BROKEN": broken}) == 0

    explored.__qualname__ = f"explore_client[{broken or 'correct'}]"
    return explored


BUGS: dict[str, Callable[[Found], bool]] = {
    # how each bug shows: a finding a correct client never gives
    "utf8-split": lambda found: "chunks" in found.operators or found.broken.behaviour == "wrong answer",
    "trust-first-completed": lambda found: found.broken.key[1:] == ("completed_output", "answered"),
    "crash-unknown-event": lambda found: found.broken.behaviour == "failed (KeyError)",
    "early-end-is-answer": lambda found: found.broken.reason in ("cut", "stall", "terminal_required"),
    "ignore-seq-gaps": lambda found: found.broken.reason == "sequence" and found.broken.behaviour == "answered",
}


BUDGETS = [
    pytest.param(Budget(cases=40), id="40 cases"),
    pytest.param(Budget(), id="the default budget", marks=pytest.mark.load),  # the whole budget is explored
]


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("broken", sorted(BUGS))
def test_each_broken_client_is_found_and_shrunk_to_a_script_that_breaks_it_again_and_passes_the_correct_one(
    broken: str, budget: Budget, tmp_path: Path
) -> None:
    seeds = explore.shipped_seeds()  # rrkit's own: characters of 2 to 4 bytes, where a byte-level split shows
    exploration, report = explore.run(
        client(broken), seeds=seeds, transports=("http",), seed=1, budget=budget, out=tmp_path
    )
    shows = [found for found in exploration.findings if BUGS[broken](found)]
    assert shows, f"{broken}: found {[f.broken.key for f in exploration.findings]} in {exploration.cases} cases"
    found = shows[0]
    assert len(found.stream.events) <= HANDFUL, found.stream.events
    assert not report.ok and report.counts["failed"] == len(exploration.findings)
    name = f"{found.broken.reason}: {found.broken.behaviour}"
    written = next(Path(case.file) for case in report.cases if case.name == name and case.file)
    scenario = load_scenario_or_script(written)
    again = conform(client(broken), scenarios=[scenario], transports=("http",))
    assert not again.ok, f"{written.name} no longer breaks {broken}"
    assert conform(client(), scenarios=[scenario], transports=("http",)).ok, f"{written.name} fails the correct client"


def test_the_same_seed_gives_the_same_cases_and_the_same_report(tmp_path: Path) -> None:
    runs = []
    for attempt in ("a", "b"):
        cases: list[str] = []

        def seen(case: object, broken: object, cases: list[str] = cases) -> None:
            cases.append(f"{case} -> {getattr(broken, 'key', 'held')}")

        _, report = explore.run(
            client("ignore-seq-gaps"),
            transports=("http",),
            seed=5,
            budget=Budget(cases=25),
            out=tmp_path / attempt,
            on_case=seen,
        )
        detail = {key: value for key, value in report.detail.items() if key != "seconds"}
        detail["findings"] = [{**f, "file": Path(f["file"]).name} for f in detail["findings"]]
        files = {path.name: path.read_text() for path in sorted((tmp_path / attempt).iterdir())}
        runs.append((cases, report.summary, detail, files))
    assert runs[0] == runs[1] and runs[0][0]


def test_a_minimal_script_names_its_must_seed_and_command_and_is_a_script_rrkit_serves(tmp_path: Path) -> None:
    from rrkit.script.loader import load_script

    budget = Budget(cases=15)
    explore.run(
        client("ignore-seq-gaps"),
        transports=("http",),
        seed=2,
        budget=budget,
        out=tmp_path,
        command="rrkit explore X",
    )
    path = next(tmp_path.glob("explore-*.yaml"))
    head = path.read_text().splitlines()[:6]
    assert head[0].startswith("# rrkit explore finding: never answers a broken stream")
    assert "--seed 2" in head[2] and head[4] == "# explored: rrkit explore X"
    script = load_script(path)
    assert script.expect.answer is False and script.responses[0].repeat


@pytest.mark.load
@pytest.mark.parametrize(
    ("explored", "transports"),
    [(client(), ("http",)), (ReferenceClient(strict_streams=True), ("http", "ws"))],
    ids=["the minimal correct client", "the reference client with strict streams"],
)
def test_a_correct_client_has_no_finding_over_the_default_budget(
    explored: Callable[[dict[str, str]], bool] | ReferenceClient, transports: tuple[str, ...]
) -> None:
    exploration, report = explore.run(explored, transports=transports, seed=0)
    assert report.ok, [str(f.case) + ": " + f.broken.seen for f in exploration.findings]
    assert exploration.cases >= 100


CODEX_ANSWERS = {"sequence", "created_first", "one_response_id", "completed_output"}
"""The broken streams the guide lists Codex answering (docs/guide/explore.md: What it finds in real clients)."""


@pytest.mark.load
def test_the_reference_client_by_default_answers_the_broken_streams_codex_answers_and_no_more() -> None:
    exploration, _ = explore.run(None, transports=("http", "ws"), seed=0)
    found = {(f.broken.must.name, f.broken.reason, f.broken.behaviour) for f in exploration.findings}
    # Codex's twin: a broken stream that ends with response.completed is answered; a valid stream never fails
    assert {behaviour for _, _, behaviour in found} == {"answered"}, found
    assert {must for must, _, _ in found} == {"never answers a broken stream"}, found
    assert {reason for _, reason, _ in found} >= CODEX_ANSWERS, found
