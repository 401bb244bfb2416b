"""`rrkit diff` cost against size: two recordings of one session (other ids and clocks), 10k and 100k events each.

Run: python benchmarks/bench_diff.py [--rounds 3]
Prints the median time of `diff_cassettes` at each size and the ratio (near 10 for 10x the events: linear), beside
two baselines measured in the same run: plain equality of the two cassettes' JSON dumps (no normalization, no
report), and DeepDiff over the events of one exchange (1000 events).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange
from rrkit.protocol import IdGenerator, ResponseEvents
from rrkit.tools.diff import diff_cassettes

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


def median_seconds(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'events':>8} {'case':<22} {'diff s':>8} {'us/event':>9} {'differences':>12} {'dump== s':>9}")
    results: dict[str, list[float]] = {}
    for size in (10_000, 100_000):
        a = make_cassette(size, created_at=1_700_000_000)
        for case, b in (
            ("same session", make_cassette(size, created_at=1_700_000_099)),
            ("a delta per exchange", make_cassette(size, created_at=1_700_000_099, change="delta")),
            ("missing event per ex.", make_cassette(size, created_at=1_700_000_099, change="missing")),
        ):
            found = len(diff_cassettes(a, b).differences)
            seconds = median_seconds(lambda a=a, b=b: diff_cassettes(a, b), args.rounds)
            dumps = median_seconds(lambda a=a, b=b: a.model_dump(mode="json") == b.model_dump(mode="json"), args.rounds)
            results.setdefault(case, []).append(seconds)
            print(f"{size:>8} {case:<22} {seconds:>8.3f} {seconds / size * 1e6:>9.2f} {found:>12} {dumps:>9.3f}")
    for case, (small, large) in results.items():
        print(f"ratio 100k / 10k, {case}: {large / small:.1f} (10 = linear)")

    from deepdiff import DeepDiff

    a, b = make_cassette(PER_EXCHANGE, created_at=1), make_cassette(PER_EXCHANGE, created_at=2, change="delta")
    events_a = [recorded.event for recorded in a.exchanges[0].events]
    events_b = [recorded.event for recorded in b.exchanges[0].events]
    deep = median_seconds(lambda: DeepDiff(events_a, events_b), args.rounds)
    ours = median_seconds(lambda: diff_cassettes(a, b), args.rounds)
    print(
        f"one exchange of {len(events_a)} events: DeepDiff {deep:.3f} s ({deep / len(events_a) * 1e6:.1f} us/event), "
        f"diff_cassettes {ours:.3f} s ({ours / len(events_a) * 1e6:.1f} us/event)"
    )


if __name__ == "__main__":
    main()
