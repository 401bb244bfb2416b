"""Time to first event: how long a client waits for the first SSE event of a response of N events, from rrkit
(scripted, and replaying a cassette of the same response) beside a bare uvicorn + Starlette endpoint that
streams the same events pre-encoded (`benchmarks.servers bare-sse`). Each server runs in its own process; the
rounds are interleaved (the whole response is read each time, so that the next round starts on an idle server).

Run: python -m benchmarks.bench_first_event [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx

from benchmarks.common import Profile, Row, ServerProcess, at_most, interleaved, median, run_main, sse_stream

BENCH = "first_event"


def size_rows(size: int, rounds: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp, httpx.Client(timeout=600) as client:
        cassette = Path(tmp) / f"{size}.json"
        ServerProcess("record", str(size), str(cassette)).stop()
        with (
            ServerProcess("bare-sse", str(size)) as bare,
            ServerProcess("script", str(size)) as scripted,
            ServerProcess("replay", str(cassette)) as replayed,
        ):
            got = interleaved(
                {
                    name: lambda server=server: sse_stream(client, server.base_url).first * 1000
                    for name, server in (("bare", bare), ("script", scripted), ("replay", replayed))
                },
                rounds,
            )
    ms = {name: median(values) for name, values in got.items()}
    label = f"{size // 1000}k" if size >= 1000 else str(size)
    return [
        Row(
            f"time to first SSE event of {label} events, {how}",
            ms[name],
            ms["bare"],
            "ms",
            target=at_most(3.0) if size >= 100_000 else None,  # issue 11: no longer grows with the response
            baseline_name="bare uvicorn + Starlette",
            bench=BENCH,
        )
        for name, how in (("script", "scripted"), ("replay", "replayed"))
    ]


def rows(profile: Profile) -> list[Row]:
    got = []
    for size in (100_000,) if profile.quick else (1000, 10_000, 100_000):
        got += size_rows(size, profile.rounds)
    return got


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
