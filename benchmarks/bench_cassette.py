"""Cassette load + save of 100k events beside orjson and vcrpy's JSON serializer on the same file's data,
interleaved; the memory used while loading (tracemalloc's peak) and while holding the loaded cassette (the
resident set's growth in a fresh process, the cassette kept; also the traced memory still allocated and the
peak resident set), against the file's size; and the linearity of the per-event load time (100k against 10k).

Run: python -m benchmarks.bench_cassette [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import orjson
from vcr.serializers import jsonserializer

from benchmarks.common import Profile, Row, at_most, child_env, interleaved, median, run_main
from rrkit.cassette import Cassette, RecordedEvent, RecordedExchange, load_cassette, save_cassette
from rrkit.protocol import ResponseEvents

BENCH = "cassette"


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


def _timed(run: object) -> float:
    gc.collect()
    start = time.perf_counter()
    run()  # type: ignore[operator]
    return time.perf_counter() - start


def load_save_rows(folder: Path, rounds: int, quick: bool) -> list[Row]:
    path, out = folder / "c100k.json", folder / "out.json"
    cassette = make_cassette(100_000)
    count = cassette.event_count
    save_cassette(cassette, path)
    del cassette

    def rrkit() -> None:
        save_cassette(load_cassette(path), out)

    def with_orjson() -> None:
        out.write_bytes(orjson.dumps(orjson.loads(path.read_bytes())))

    def with_vcrpy() -> None:
        out.write_text(jsonserializer.serialize(jsonserializer.deserialize(path.read_text())))

    runs = {"rrkit": lambda: _timed(rrkit), "orjson": lambda: _timed(with_orjson)}
    if not quick:  # vcrpy's serializer (json.dumps with indent, the pure-Python encoder) is several times slower
        runs["vcrpy"] = lambda: _timed(with_vcrpy)
    got = interleaved(runs, rounds)
    seconds = {name: median(values) for name, values in got.items()}
    if quick:
        seconds["vcrpy"] = _timed(with_vcrpy)
    name = f"cassette load+save, {count // 1000}k events"
    rows = [
        Row(
            name,
            seconds["rrkit"],
            seconds["orjson"],
            "s",
            target=at_most(1.5),
            baseline_name="orjson, same data",
            bench=BENCH,
        ),
        Row(
            name,
            seconds["rrkit"],
            seconds["vcrpy"],
            "s",
            baseline_name="vcrpy JSON serializer, same data",
            note="1 round" if quick else "",
            bench=BENCH,
        ),
    ]
    rows += memory_rows(path, count)
    return rows


def memory_rows(path: Path, count: int) -> list[Row]:
    """Traced memory while loading (peak) and after the load with the cassette still held, against the file."""
    file_mb = path.stat().st_size / 1e6
    gc.collect()
    tracemalloc.start()
    try:
        loaded = load_cassette(path)
        held, peak = tracemalloc.get_traced_memory()
        assert loaded.event_count == count  # still holding it: `held` is what the loaded cassette keeps
    finally:
        tracemalloc.stop()
    del loaded
    resident, resident_peak = resident_mb(path, count)
    label = f"{file_mb:.1f} MB / {count // 1000}k-event cassette"
    return [
        Row(
            f"peak memory while loading a {label}",
            peak / 1e6,
            file_mb,
            "MB",
            target=at_most(3),
            baseline_name="the file's size",
            note="tracemalloc peak",
            bench=BENCH,
        ),
        Row(
            f"resident after loading a {label}, held",
            resident,
            file_mb,
            "MB",
            target=at_most(1.5),
            baseline_name="the file's size",
            note="RSS growth in a fresh process, cassette kept",
            bench=BENCH,
        ),
        Row(
            f"traced memory held after loading a {label}",
            held / 1e6,
            file_mb,
            "MB",
            baseline_name="the file's size",
            note="tracemalloc, cassette kept",
            bench=BENCH,
        ),
        Row(
            f"peak resident while loading a {label}",
            resident_peak,
            file_mb,
            "MB",
            baseline_name="the file's size",
            note="VmHWM growth in a fresh process",
            bench=BENCH,
        ),
    ]


RESIDENT_PROBE = """
import gc, sys
from pathlib import Path
from rrkit.cassette import load_cassette

def status(field):
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field + ":"))
    return int(line.split()[1]) * 1024

gc.collect()
before = status("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
loaded = load_cassette(sys.argv[1])
gc.collect()
assert loaded.event_count == int(sys.argv[2])
print(status("VmRSS") - before, status("VmHWM") - before)
"""


def resident_mb(path: Path, count: int) -> tuple[float, float]:
    """(RSS growth with the loaded cassette held, peak RSS growth while loading) in MB, in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", RESIDENT_PROBE, str(path), str(count)],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    held, peak = (int(value) / 1e6 for value in result.stdout.split())
    return held, peak


def linearity_rows(folder: Path, rounds: int) -> list[Row]:
    per_event: dict[int, float] = {}
    for size in (10_000, 100_000):
        path = folder / f"lin{size}.json"
        if size == 100_000 and (folder / "c100k.json").exists():
            path = folder / "c100k.json"
        else:
            save_cassette(make_cassette(size), path)
        per_event[size] = median(_timed(lambda path=path: load_cassette(path)) for _ in range(rounds)) / size * 1e6
    return [
        Row(
            "cassette load per event, 100k vs 10k events (linearity)",
            per_event[100_000],
            per_event[10_000],
            "us",
            baseline_name="the same at 10k events",
            bench=BENCH,
        )
    ]


def rows(profile: Profile) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        got = load_save_rows(Path(folder), profile.rounds, profile.quick)
        got += linearity_rows(Path(folder), 1 if profile.quick else 3)
    return got


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
