"""Cassette load/save cost against size: prints seconds per event at each size and the memory/file ratio.

Run: python benchmarks/bench_cassette.py [--max-events 100000]
Linear means the per-event time stays flat as the cassette grows (ratio near 1).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange, load_cassette, save_cassette
from rrkit.protocol import ResponseEvents


def make_cassette(events: int, per_exchange: int = 1000) -> Cassette:
    exchanges = []
    for index in range(max(1, events // per_exchange)):
        builder = ResponseEvents({"model": "m", "input": [{"role": "user", "content": f"question {index}"}]})
        builder.start()
        builder.message("x" * (per_exchange - 8), chunks=per_exchange - 8)
        builder.completed()
        recorded = [RecordedEvent.of(i * 0.001, event) for i, event in enumerate(builder.events)]
        exchanges.append(
            RecordedExchange(
                id=index,
                transport="http",
                wire_request=builder.request,
                logical_request=builder.request,
                events=recorded,
            )
        )
    return Cassette(name="bench", exchanges=exchanges)


def measure(events: int, folder: Path) -> tuple[int, float, float, int, int]:
    cassette = make_cassette(events)
    count = cassette.event_count
    path = folder / f"c{events}.json"
    start = time.perf_counter()
    save_cassette(cassette, path)
    save_s = time.perf_counter() - start
    del cassette
    gc.collect()
    start = time.perf_counter()
    loaded = load_cassette(path)
    load_s = time.perf_counter() - start
    assert loaded.event_count == count
    del loaded
    gc.collect()
    tracemalloc.start()  # a second load, traced: tracing slows it down, so it is not timed
    load_cassette(path)
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return count, save_s, load_s, path.stat().st_size, current


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-events", type=int, default=100_000)
    args = parser.parse_args()
    sizes = [size for size in (10_000, 30_000, 100_000, 300_000) if size <= args.max_events]
    print(
        f"{'events':>8} {'save s':>8} {'load s':>8} {'save us/ev':>11} {'load us/ev':>11} {'file MB':>8} "
        f"{'mem MB':>8} {'mem/file':>9}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            count, save_s, load_s, file_bytes, memory = measure(size, Path(folder))
            rows.append((count, save_s, load_s))
            print(
                f"{count:>8} {save_s:>8.3f} {load_s:>8.3f} {save_s / count * 1e6:>11.2f} {load_s / count * 1e6:>11.2f} "
                f"{file_bytes / 1e6:>8.2f} {memory / 1e6:>8.2f} {memory / file_bytes:>9.2f}"
            )
    small, large = rows[0], rows[-1]
    print(
        f"linearity (per-event time, largest / smallest): save {large[1] / large[0] / (small[1] / small[0]):.2f}, "
        f"load {large[2] / large[0] / (small[2] / small[0]):.2f}"
    )


if __name__ == "__main__":
    main()
