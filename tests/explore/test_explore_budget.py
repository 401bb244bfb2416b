"""`rrkit explore --seconds` bounds the whole run, shrinking included: no run of the client starts after it, so a
client that hangs ends the search within the seconds plus one case timeout; a finding the budget left unshrunk is
reported as found, not minimal (in its file's header, its evidence and the JSON detail)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rrkit import explore
from rrkit.explore import search as search_module
from rrkit.explore.budget import Budget
from rrkit.explore.judge import Run
from rrkit.explore.report import NOT_MINIMAL
from rrkit.explore.stream import Expected, Stream

HANGS = "import time; time.sleep(1000)"


@pytest.mark.hostile
def test_explore_seconds_bounds_a_hanging_client_shrinking_included(tmp_path: Path) -> None:
    seconds, case_timeout = 10, 5
    command = [sys.executable, "-m", "rrkit", "explore", "--seconds", str(seconds), "--case-timeout", str(case_timeout)]
    command += ["--transport", "http", "--out", str(tmp_path), "--json", "--", sys.executable, "-c", HANGS]
    started = time.monotonic()
    ran = subprocess.run(command, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    # About 11 s on an idle machine (10 s, then the run in progress to its 5 s timeout; start-up); it was 75 s:
    # shrinking went on for a minute past the budget. A generous bound, not a timing.
    assert took < 60, f"rrkit explore --seconds {seconds} --case-timeout {case_timeout} took {took:.1f} s"
    assert ran.returncode == 1, ran.stderr[-2000:]
    findings = json.loads(ran.stdout)["detail"]["findings"]
    assert findings and all(found["behaviour"] == "timed out" for found in findings)
    assert all(isinstance(found["minimal"], bool) for found in findings)


def test_a_finding_the_budget_left_unshrunk_is_reported_as_found_not_minimal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clock = [0.0]

    def play(stream: Stream, transport: str, expected: Expected, client: object, timeout: float) -> Run:
        clock[0] += 4.0  # each run takes 4 s of a 10 s budget: the third starts past it
        return Run("timed out", f"the command did not finish within {timeout:g} s")

    monkeypatch.setattr(search_module, "play", play)
    monkeypatch.setattr(search_module, "_clock", lambda: clock[0])
    exploration, report = explore.run(
        lambda env: True,
        seeds=explore.shipped_seeds(),
        transports=("http",),
        budget=Budget(cases=50, seconds=10),
        out=tmp_path,
    )
    assert clock[0] <= 12.0  # three runs at most, shrinking's included: none started past the budget's 10 s
    assert exploration.findings and not any(found.minimal for found in exploration.findings)
    (case,) = [case for case in report.cases if case.findings][:1]
    assert f"not minimal ({NOT_MINIMAL})" in case.findings[0].evidence
    assert all(entry["minimal"] is False for entry in report.detail["findings"])
    written = [path.read_text(encoding="utf-8") for path in tmp_path.glob("explore-*.yaml")]
    assert written and all(f"(not minimal: {NOT_MINIMAL})" in text for text in written)
