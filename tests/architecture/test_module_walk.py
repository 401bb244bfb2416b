"""The walk of one recorded SSE request through `rrkit serve --cassette C --record-mode new_episodes --upstream URL`
stays within its budget (issue 45): the modules it visits, and how often it goes back into one it had left, counted
by benchmarks/module_walk.py (calls traced in the recording server's threads: counts of code, not of time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.module_walk import Walk

ROOT = Path(__file__).resolve().parents[2]

BUDGET = {"modules": 36, "returns": 82}
"""The walk as measured when it was shortened (before: 37 modules, 191 returns); 89 -> 93 returns when the journal
line began to take the events' texts as the cassette holds them (journal <-> format), no longer a model dump that
parsed each event again; 93 -> 94 when each thread's walk began to be counted apart and to its end (the journal's
thread waited for): interleaved, and cut wherever the journal's thread was when the trace stopped, it read 93 or
94 (more under load); 34 -> 35 modules when the server's state left `respond` for `state`, beside the sessions'
registry (which makes session states, so in one module with them: no import cycle), and each request finds its
state there (`state_of`); 35 -> 36 modules (92 returns) when `protocol.plan` (523 lines) was split to keep the
house rule of 500 lines a module: the planned events' wire forms (`wire_events`: a relay's `WireRun`,
`event_of_wire`) apart from the plan (`ResponsePlan`, `StreamFault.resolved`), both on the walk; 94 -> 96 when
the request head began to be bounded as it arrives (issue 65: the parser's callbacks, in `uvicorn_adapter`, run
before the app: 95), and 96 for the journal thread's interleaving, which still moves the count by one from run to
run (95 or 96 on one tree; an HTTP request to the resource no longer passing through Starlette, whose layers are no
rrkit module, changed no count); 96 -> 81 when a stream's runs stopped doubling from one event (one event, then up
to RUN_EVENTS: the recorded stream's eight sends became two), and 82 for the interleaving. To re-measure,
from the repository's root: `python -m benchmarks.module_walk --verbose` (the modules in the order entered, each
return marked). A change that shortens the walk lowers these; one that lengthens it says why in its commit, with
the new figures."""


def test_one_recorded_request_walks_no_more_modules_and_returns_than_the_budget() -> None:
    measured = subprocess.run(
        [sys.executable, "-m", "benchmarks.module_walk", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert measured.returncode == 0, measured.stderr
    walk = json.loads(measured.stdout)
    over = {name: walk[name] for name, most in BUDGET.items() if walk[name] > most}
    assert not over, (
        f"the walk of one recorded SSE request is over its budget {BUDGET}: {over}. See where it goes with "
        "`python -m benchmarks.module_walk --verbose`; shorten it, or raise BUDGET saying why."
    )


def test_a_return_is_an_entry_into_a_module_entered_before_another_one() -> None:
    walk = Walk.of(["a", "a", "b", "a", "c", "c", "b", "a"])
    assert walk.sequence == ("a", "b", "a", "c", "b", "a")
    assert walk.figures() == {"modules": 3, "returns": 3}
