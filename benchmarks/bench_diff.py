"""`rrkit diff` cost against size: two recordings of one session (other ids and clocks), 10k and 100k events each.

Run: python -m benchmarks.bench_diff [--quick] [--json]
Prints the median time of `diff_cassettes` at each size and the per-event linearity (near 1: linear), beside
two baselines measured in the same run: plain equality of the two cassettes' JSON dumps (no normalization, no
report), and DeepDiff over the events of one exchange (1000 events; skipped, and said so, without the `bench`
extra).
"""

from __future__ import annotations

import importlib.util

from benchmarks.common import Profile, Row, interleaved, median, run_main, timed
from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange
from rrkit.protocol import IdGenerator, ResponseEvents
from rrkit.tools.diff import diff_cassettes

BENCH = "diff"
PER_EXCHANGE = 1000


def make_cassette(events: int, *, created_at: int, change: str = "") -> Cassette:
    """`events` events in exchanges of 1000, random ids; with `change` "delta", one delta of each exchange says
    more; with "missing", one is left out (the events are aligned again)."""
    ids = IdGenerator()  # random ids: what two recordings of one session differ in, with the clock
    exchanges = []
    for index in range(max(1, events // PER_EXCHANGE)):
        request = {"model": "m", "input": [{"role": "user", "content": f"question {index}"}]}
        builder = ResponseEvents(request, ids=ids, created_at=created_at)
        builder.start()
        builder.message("x" * (PER_EXCHANGE - 8), chunks=PER_EXCHANGE - 8)
        builder.completed()
        if change == "delta":
            builder.events[100]["delta"] += "!"
        recorded = [RecordedEvent.of(i * 0.001, event) for i, event in enumerate(builder.events)]
        if change == "missing":
            del recorded[500]
        exchanges.append(
            RecordedExchange(id=index, transport="http", wire_request=request, logical_request=request, events=recorded)
        )
    return Cassette(name="bench", exchanges=exchanges)


def rows(profile: Profile) -> list[Row]:
    """`diff_cassettes` against a plain equality of the two cassettes' dumps, in the same rounds (interleaved),
    at 10k events and (default profile) 100k events; DeepDiff of one exchange."""
    rounds = 1 if profile.quick else 2
    out: list[Row] = []
    per_event: dict[int, float] = {}
    for size in (10_000,) if profile.quick else (10_000, 100_000):
        a = make_cassette(size, created_at=1_700_000_000)
        cases = [("same session", ""), ("a delta per exchange", "delta"), ("a missing event per exchange", "missing")]
        if size > 10_000:
            cases = cases[:1]  # a 100k diff and dump take seconds each: the linearity figure only
        for case, change in cases:
            b = make_cassette(size, created_at=1_700_000_099, change=change)
            found: list[int] = []
            got = interleaved(
                {
                    "diff": lambda a=a, b=b, found=found: timed(
                        lambda: found.append(len(diff_cassettes(a, b).differences))
                    ),
                    "dump": lambda a=a, b=b: timed(lambda: a.model_dump(mode="json") == b.model_dump(mode="json")),
                },
                rounds,
                warmup=0,
            )
            diff, dump = median(got["diff"]), median(got["dump"])
            if case == "same session":
                per_event[size] = diff / size * 1e6
            out.append(
                Row(
                    f"rrkit diff, {size // 1000}k events, {case}",
                    diff,
                    dump,
                    "s",
                    baseline_name="equality of the two cassettes' JSON dumps",
                    note=f"{found[0]} differences",
                    bench=BENCH,
                )
            )
    if len(per_event) > 1:
        out.append(
            Row(
                "rrkit diff per event, 100k vs 10k events (linearity)",
                per_event[100_000],
                per_event[10_000],
                "us",
                baseline_name="the same at 10k events",
                bench=BENCH,
            )
        )
    out.append(_against_deepdiff(rounds))
    return out


def _against_deepdiff(rounds: int) -> Row:
    """One exchange of 1000 events, `rrkit diff` against DeepDiff of the two event lists; DeepDiff is in the
    `bench` extra, not a dependency: without it, the baseline is skipped and the row says so."""
    a, b = make_cassette(PER_EXCHANGE, created_at=1), make_cassette(PER_EXCHANGE, created_at=2, change="delta")
    events_a = [recorded.event for recorded in a.exchanges[0].events]
    events_b = [recorded.event for recorded in b.exchanges[0].events]
    measure = f"rrkit diff, one exchange of {len(events_a)} events"
    if importlib.util.find_spec("deepdiff") is None:
        ours = median([timed(lambda: diff_cassettes(a, b)) for _ in range(rounds)])
        skipped = "DeepDiff NOT INSTALLED: baseline skipped (pip install -e '.[bench]')"
        return Row(measure, ours * 1000, None, "ms", baseline_name=skipped, bench=BENCH)
    from deepdiff import DeepDiff

    got = interleaved(
        {
            "ours": lambda: timed(lambda: diff_cassettes(a, b)),
            "deep": lambda: timed(lambda: DeepDiff(events_a, events_b)),
        },
        rounds,
        warmup=0,
    )
    return Row(
        measure,
        median(got["ours"]) * 1000,
        median(got["deep"]) * 1000,
        "ms",
        baseline_name="DeepDiff of the two event lists",
        bench=BENCH,
    )


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
