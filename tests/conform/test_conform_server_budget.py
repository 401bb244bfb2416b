"""`rrkit conform --server --budget` bounds the whole run: a probe still running when the budget is spent may wait
out the answer it waits for (one --timeout), no longer, and is reported cut, as the probes left are reported not
run."""

from __future__ import annotations

import asyncio
import time

import pytest

from rrkit.conform.server import Target
from rrkit.conform.server import report as server_report

from .test_conform_server_broken import CREATE_PROBES
from .test_conform_server_hostile import SilentServer


@pytest.mark.hostile
def test_conform_server_budget_bounds_a_probe_in_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """`rrkit conform --server --budget`: a probe still running when the budget is spent may wait out the answer
    it waits for (one --timeout), no longer; it is reported cut (a `must`), as the probes not run are."""

    async def slow_probe(probe: object, transport: str, target: object) -> list[object]:
        await asyncio.sleep(60)  # each of its steps answered just within the timeout: steps x timeout
        return []

    monkeypatch.setattr(server_report, "run_probe", slow_probe)
    with SilentServer() as url:
        started = time.monotonic()
        report = server_report.run_server(
            Target(url, timeout=0.5), only=[CREATE_PROBES[0]], transports=("http",), budget=1.0
        )
        took = time.monotonic() - started
    assert took < 15, f"a 1 s budget with a 0.5 s timeout took {took:.1f} s (was 60 s: the probe ran to its end)"
    (result,) = report.results
    assert [finding.evidence for finding in result.findings] == [
        "cut: the run's budget of 1 s was spent while it ran (its answers so far not judged; --budget)"
    ]
