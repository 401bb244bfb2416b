"""rrkit's minimal correct client (`explore_client`) keeps both musts of exploration on every seed: the cases that
once caught it on the catalogue's hosted tools (an item's event before the item, a done before its delta), and,
over seeds 0 to 4 at the default budget, no finding at all (issue 61's acceptance)."""

from __future__ import annotations

import pytest

from rrkit import explore
from rrkit.drive import as_client
from rrkit.explore.case import Case
from rrkit.explore.judge import judge, play
from rrkit.explore.operators import Op
from rrkit.explore.stream import Verdict, expected

from .test_explore_search import client

SEEDS = {seed.name: seed for seed in explore.default_seeds()}


@pytest.mark.parametrize(
    ("ops", "why"),
    [
        pytest.param((Op("reorder", 2, 0),), "item_added_first", id="a hosted tool's event before its item"),
        pytest.param((Op("reorder", 11, 0),), "done_matches_deltas", id="a done before its only delta"),
    ],
)
def test_the_correct_client_refuses_the_hosted_tool_streams_that_once_caught_it(ops: tuple[Op, ...], why: str) -> None:
    case = Case("catalogue:hosted-tools", "http", ops)
    stream = case.stream(SEEDS)
    oracle = expected(stream)
    assert (oracle.verdict, oracle.why) == (Verdict.NO_ANSWER, why)
    run = play(stream, "http", oracle, as_client(client()), 15.0)
    assert run.outcome == "failed" and judge(oracle, run) is None, run


@pytest.mark.load
@pytest.mark.parametrize("seed", range(5))
def test_the_correct_client_has_no_finding_over_seeds_0_to_4(seed: int) -> None:
    exploration, report = explore.run(client(), transports=("http",), seed=seed)
    assert report.ok, [f"{f.case}: {f.broken.seen}" for f in exploration.findings]
    assert exploration.cases >= 150
