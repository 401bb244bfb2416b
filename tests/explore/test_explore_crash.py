"""A crash inside a case is that case's finding, never the end of the run: the search goes on to its budget, the
crash is reported with the case that raised it (and written as a file), the other cases judged as ever."""

from __future__ import annotations

from pathlib import Path

import pytest

from rrkit import explore
from rrkit.conform.scenario import load_scenario_or_script
from rrkit.explore import search as search_module
from rrkit.explore.budget import Budget
from rrkit.explore.judge import CRASHES, Run
from rrkit.explore.stream import Expected, Stream, Verdict

WHOLE = {len(seed.events) for seed in explore.shipped_seeds()}
"""Events in each seed: a case with another count (an event dropped, added, the stream truncated) raises here."""


def test_a_case_that_raises_inside_rrkit_is_its_finding_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    played: list[Stream] = []

    def play(stream: Stream, transport: str, expected: Expected, client: object, timeout: float) -> Run:
        played.append(stream)
        if len(stream.events) not in WHOLE:  # rrkit itself failing on this case, not the client
            raise ZeroDivisionError("integer modulo by zero")
        return Run("failed", "refused") if expected.verdict is not Verdict.ANSWER else Run("completed")

    monkeypatch.setattr(search_module, "play", play)
    exploration, report = explore.run(
        lambda env: True, seeds=explore.shipped_seeds(), transports=("http",), seed=3, budget=Budget(cases=30)
    )
    first_crash = next(at for at, stream in enumerate(played) if len(stream.events) not in WHOLE)
    ran_on = [stream for stream in played[first_crash + 1 :] if len(stream.events) in WHOLE]
    assert ran_on and exploration.cases >= 20  # cases ran and were judged after the crash: it ended nothing
    crashes = [found for found in exploration.findings if found.broken.must is CRASHES]
    assert [found.broken.key[1:] for found in crashes] == [("crash", "crashed (ZeroDivisionError)")]
    assert [found for found in exploration.findings if found.broken.must is not CRASHES] == []
    assert len(crashes[0].stream.events) not in WHOLE and "integer modulo by zero" in crashes[0].broken.seen
    assert not report.ok and [f.rule for f in report.findings] == [CRASHES.name]
    written = explore.run(
        lambda env: True,
        seeds=explore.shipped_seeds(),
        transports=("http",),
        seed=3,
        budget=Budget(cases=30),
        out=tmp_path,
    )
    assert written[0].findings and [path.name for path in tmp_path.iterdir()] == [
        "explore-01-crash-crashed-zerodivisionerror.yaml"
    ]
    path = tmp_path / "explore-01-crash-crashed-zerodivisionerror.yaml"
    assert load_scenario_or_script(path) is not None  # the case that raised, as a script to reproduce it with
    assert f"# rrkit explore finding: {CRASHES.name} (crash)" in path.read_text(encoding="utf-8")
