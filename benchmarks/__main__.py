"""`python -m benchmarks`: every benchmark, side by side with its baseline, as one table.

Each pair is measured interleaved in the same run (medians of the rounds); the streaming rows give the servers'
own CPU time per event (/proc/<pid>/task/*/schedstat) beside the wall-clock rates, the steadier figure on a
shared machine. ratio = rrkit / baseline; `target` is issue 13's where it names one.

  python -m benchmarks                 the default profile (about 6 minutes on 2 cores)
  python -m benchmarks --quick         fewer rounds and sizes (about 3 minutes)
  python -m benchmarks --only proxy    one benchmark (repeatable, or comma-separated); --list names them
  python -m benchmarks --json          the rows as JSON, for machines
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable

from benchmarks.common import Profile, Row, as_json, profile_of, profile_parser, table

BENCHMARKS = [
    "server_stream",
    "proxy",
    "proxy_readers",
    "replay",
    "first_event",
    "cassette",
    "plugin_overhead",
    "launch",
    "commands",
    "import",
    "diff",
    "soak",
    "load",
    "fleet",
    "stop",
    "conform",
    "references",
    "bounds",
]
"""Run in this order; each is `benchmarks/bench_NAME.py` exposing `rows(profile) -> list[Row]`."""


def load(name: str) -> Callable[[Profile], list[Row]]:
    module = importlib.import_module(f"benchmarks.bench_{name}")
    rows: Callable[[Profile], list[Row]] | None = getattr(module, "rows", None)
    if rows is None:
        raise AttributeError(f"benchmarks/bench_{name}.py has no `rows(profile) -> list[Row]`")
    return rows


def chosen(only: list[str]) -> list[str]:
    if not only:
        return BENCHMARKS
    names = [part.strip() for item in only for part in item.split(",") if part.strip()]
    picked = []
    for name in names:
        matches = [known for known in BENCHMARKS if known == name] or [k for k in BENCHMARKS if k.startswith(name)]
        if len(matches) != 1:
            raise SystemExit(f"--only {name}: {'ambiguous' if matches else 'unknown'}; one of {', '.join(BENCHMARKS)}")
        picked.append(matches[0])
    return picked


def main() -> None:
    parser = profile_parser(__doc__)
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this benchmark")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args()
    if args.list:
        for name in BENCHMARKS:
            print(name)
        return
    profile = profile_of(args)
    load_before = os.getloadavg()
    started = time.perf_counter()
    rows: list[Row] = []
    timings: dict[str, float] = {}
    failed = []
    for name in chosen(args.only):
        try:
            run = load(name)
        except Exception as error:
            traceback.print_exc()
            failed.append(name)
            rows.append(Row(f"{name}: FAILED to import ({type(error).__name__}: {error})", None, None, "", bench=name))
            continue
        print(f"benchmarks: {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            got = run(profile)
        except Exception as error:
            traceback.print_exc()
            failed.append(name)
            got = [Row(f"{name}: FAILED ({type(error).__name__}: {error})", None, None, "", bench=name)]
        timings[name] = time.perf_counter() - start
        print(f"benchmarks: {name} done in {timings[name]:.1f} s", file=sys.stderr, flush=True)
        for row in got:
            row.bench = row.bench or name
        rows.extend(got)
    total = time.perf_counter() - started
    load_after = os.getloadavg()
    meta = {
        "profile": profile.name,
        "rounds": profile.rounds,
        "seconds": round(total, 1),
        "seconds_per_benchmark": {name: round(seconds, 1) for name, seconds in timings.items()},
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "failed": failed,
    }
    if args.json:
        print(as_json(rows, **meta))
    else:
        print(table(rows))
        met = [row.met for row in rows if row.met is not None]
        print(
            f"\nprofile {profile.name} ({profile.rounds} rounds a pair), {total:.0f} s on {os.cpu_count()} CPUs; "
            f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
            f"targets met: {sum(met)} of {len(met)}"
        )
        print("ratio = rrkit / baseline; medians of interleaved rounds; server CPU from /proc (its own threads)")
        print("time per benchmark: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items()))
        if failed:
            print(f"FAILED: {', '.join(failed)}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
