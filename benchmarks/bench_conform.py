"""`rrkit conform` on the reference client: the whole catalogue over both transports, in seconds, beside the
seconds the scenarios make a correct client wait (the backoffs and the named delays before its retries, as
the server saw them): what is left is what playing and judging cost. And `rrkit conform --server` on `rrkit
serve` (its default script, in its own process): the whole probe catalogue over both transports, in seconds.

Run: python -m benchmarks.bench_conform [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import time

from benchmarks.common import Profile, Row, ServerProcess, median, run_main

BENCH = "conform"


def whole_catalogue() -> tuple[float, float, int]:
    """(wall seconds, seconds the client waited before retries, scenario runs) of one whole run."""
    from rrkit.conform import run

    start = time.perf_counter()
    report = run()
    wall = time.perf_counter() - start
    if not report.ok:
        raise RuntimeError(f"the reference client broke a must: {report.failures}")
    waited = sum(
        attempt.gap or 0.0
        for result in report.results
        for attempt in result.run.attempts
        if attempt.wait not in ("first", "none")
    )
    return wall, waited, len(report.results)


def server_catalogue(base_url: str) -> tuple[float, int]:
    """(wall seconds, probe runs) of one whole server catalogue against `base_url`."""
    from rrkit.conform.server import Target, run_server

    start = time.perf_counter()
    report = run_server(Target(base_url))
    wall = time.perf_counter() - start
    if not report.ok:
        raise RuntimeError(f"rrkit serve broke a probe: {[str(finding) for finding in report.findings]}")
    return wall, len(report.results)


def rows(profile: Profile) -> list[Row]:
    rounds = max(1, profile.rounds - 2)
    got = [whole_catalogue() for _ in range(rounds)]
    runs = got[0][2]
    with ServerProcess("default") as served:
        probed = [server_catalogue(served.base_url) for _ in range(rounds)]
    return [
        Row(
            "`rrkit conform --server`, rrkit serve, whole probe catalogue",
            median(wall for wall, _ in probed),
            None,
            "s",
            note=f"{probed[0][1]} probe runs, {rounds} rounds; target: seconds",
            bench=BENCH,
        ),
        Row(
            "`rrkit conform`, reference client, whole catalogue",
            median(wall for wall, _, _ in got),
            median(waited for _, waited, _ in got),
            "s",
            baseline_name="the waits the scenarios impose (backoffs, named delays)",
            note=f"{runs} scenario runs, {rounds} rounds; target: under 60 s",
            bench=BENCH,
        ),
    ]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
