"""This tree's benchmarks against an earlier revision's, row by row: is any row worse than before by more than its
own spread? Every benchmark both trees have runs in a worktree of REV and in this tree, interleaved (REV then this,
then this then REV, ...), `--rounds` times each; a row's figure is the median of its runs, its spread the largest
max - min of either tree's runs. A row is worse when this tree's median is past REV's by more than that spread, in
the row's direction (events/s: higher is better; times and sizes: lower is better; other units are not judged).

  python -m benchmarks.against 3622a36 --quick
  python -m benchmarks.against v0.1.0 --only proxy,replay --json

Each run is `python -m benchmarks --only NAME --json` in its tree, with that tree's rrkit first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.bench_server_stream import AIMOCK_ENV
from benchmarks.common import ROOT

LOWER_IS_BETTER = ("ms", "us", "s", "MB", "KiB", "ms CPU")
HIGHER_IS_BETTER = ("ev/s", "events/s")


@dataclass
class Compared:
    """One row of both trees: their medians, the spread allowed, and the verdict."""

    bench: str
    measure: str
    unit: str
    before: float
    after: float
    spread: float
    verdict: str  # "worse", "better", "same" or "not judged"


def direction(unit: str) -> int:
    """+1 when a higher figure is better, -1 when a lower one is, 0 when the unit is not judged (counts, checks)."""
    return 1 if unit in HIGHER_IS_BETTER else -1 if unit in LOWER_IS_BETTER else 0


def run_one(tree: Path, bench: str, quick: bool) -> dict[str, tuple[float, str]]:
    """measure -> (rrkit's figure, unit) of one benchmark run in `tree`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "toolkit"), str(tree), env.get("PYTHONPATH", "")])
    aimock = ROOT / ".ci" / "node-aimock"
    if aimock.exists():
        env.setdefault(AIMOCK_ENV, str(aimock))  # the same peer for both trees, wherever the worktree is
    command = [sys.executable, "-m", "benchmarks", "--only", bench, "--json", *(["--quick"] if quick else [])]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if not done.stdout.strip():
        raise SystemExit(f"{tree}: benchmark {bench} printed nothing (exit {done.returncode}):\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout)["rows"]
    return {row["measure"]: (row["rrkit"], row["unit"]) for row in rows if row["rrkit"] is not None}


def benchmarks_of(tree: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=tree, capture_output=True, text=True)
    return done.stdout.split()


def compare(
    before: list[dict[str, tuple[float, str]]], after: list[dict[str, tuple[float, str]]], bench: str
) -> list[Compared]:
    got = []
    for measure in [name for name in after[0] if all(name in run for run in before + after)]:
        unit = after[0][measure][1]
        old = [run[measure][0] for run in before]
        new = [run[measure][0] for run in after]
        spread = max(max(old) - min(old), max(new) - min(new))
        change = (statistics.median(new) - statistics.median(old)) * direction(unit)
        if direction(unit) == 0:
            verdict = "not judged"
        elif -change > spread:
            verdict = "worse"
        elif change > spread:
            verdict = "better"
        else:
            verdict = "same"
        got.append(Compared(bench, measure, unit, statistics.median(old), statistics.median(new), spread, verdict))
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the revision to compare with (a commit, tag or branch)")
    parser.add_argument("--rounds", type=int, default=4, help="runs of each benchmark in each tree (default 4)")
    parser.add_argument("--quick", action="store_true", help="the benchmarks' quick profile")
    parser.add_argument("--only", action="append", default=[], help="only these benchmarks (repeatable, or a,b)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rrkit-against-") as tmp:
        worktree = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.rev], cwd=ROOT, check=True)
        try:
            compared = _compare_trees(worktree, args)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    if args.json:
        print(json.dumps([asdict(row) for row in compared], indent=2))
        return
    for row in compared:
        print(
            f"{row.verdict:>10}  {row.bench:<15} {row.measure:<70} {row.before:>10.4g} -> {row.after:>10.4g} "
            f"{row.unit:<8} (spread {row.spread:.3g})"
        )
    worse = [row for row in compared if row.verdict == "worse"]
    judged = sum(row.verdict != "not judged" for row in compared)
    print(f"\n{len(worse)} of {judged} rows judged worse than {args.rev} by more than their spread")


def _compare_trees(worktree: Path, args: argparse.Namespace) -> list[Compared]:
    names = [name for item in args.only for name in item.split(",")] or benchmarks_of(ROOT)
    shared = [name for name in names if name in benchmarks_of(worktree)]
    compared: list[Compared] = []
    for bench in shared:
        runs: dict[str, list[Any]] = {"before": [], "after": []}
        for round_ in range(args.rounds):
            order = [("before", worktree), ("after", ROOT)]
            for which, tree in order if round_ % 2 == 0 else reversed(order):
                print(f"against: {bench} round {round_ + 1} in {which}", file=sys.stderr, flush=True)
                runs[which].append(run_one(tree, bench, args.quick))
        compared += compare(runs["before"], runs["after"], bench)
    return compared


if __name__ == "__main__":
    main()
