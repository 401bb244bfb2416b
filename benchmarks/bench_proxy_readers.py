"""The recording proxy as users meet it: `rrkit record`'s server (the proxy, each exchange journaled as it ends)
in front of a scripted upstream, read with the readers users run: httpx's line reader (as the official SDK reads
SSE), the official `openai` SDK's event stream over SSE, and the `websockets` client; at 1k, 10k and 100k events
(quick: 1k and 10k), each beside the same reader on the upstream directly, interleaved. Time to the first event
and events/s for a request on idle servers, CPU per event of proxy + upstream beside the upstream's alone; and the
first event of a request sent as soon as the previous one ended (the proxy still writing that one down), beside
the same pair sent directly.

Run: python -m benchmarks.bench_proxy_readers [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from benchmarks.common import (
    STREAM_BODY,
    Profile,
    Row,
    ServerProcess,
    StreamRun,
    Watched,
    at_least,
    at_most,
    interleaved,
    median,
    run_main,
    until_idle,
    ws_stream,
)

BENCH = "proxy_readers"
READERS = ("httpx lines", "openai SDK", "websockets")


def lines_stream(client: httpx.Client, base_url: str, watch: Sequence[Watched]) -> StreamRun:
    """One streamed response read with httpx's line reader, counting its `data:` lines."""
    before = [server.cpu() for server in watch]
    start = time.perf_counter()
    first, count = 0.0, 0
    with client.stream("POST", base_url + "/responses", json=STREAM_BODY) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                count += 1
                if count == 1:
                    first = time.perf_counter() - start
    wall = time.perf_counter() - start
    until_idle(watch)
    return StreamRun(count, wall, first, [server.cpu() - b for server, b in zip(watch, before, strict=True)])


def sdk_stream(base_url: str, watch: Sequence[Watched]) -> StreamRun:
    """One streamed response read with the official SDK (`responses.create(stream=True)`), event by event."""
    import openai

    sdk = openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    before = [server.cpu() for server in watch]
    start = time.perf_counter()
    first, count = 0.0, 0
    with sdk.responses.create(model="m", input="go", stream=True) as events:
        for _ in events:
            count += 1
            if count == 1:
                first = time.perf_counter() - start
    wall = time.perf_counter() - start
    until_idle(watch)
    sdk.close()
    return StreamRun(count, wall, first, [server.cpu() - b for server, b in zip(watch, before, strict=True)])


def one_after_another(client: httpx.Client, base_url: str, watch: Sequence[Watched]) -> float:
    """Two requests on idle servers, the second sent as soon as the first one's last line was read: the second's
    first event."""
    until_idle(watch)
    for index in range(2):
        start = time.perf_counter()
        with client.stream("POST", base_url + "/responses", json=STREAM_BODY) as response:
            first = 0.0
            for line in response.iter_lines():
                if not first and line.startswith("data:"):
                    first = time.perf_counter() - start
        if index:
            return first
    raise AssertionError("unreachable")


def size_rows(size: int, rounds: int) -> list[Row]:
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(ServerProcess("script", str(size)))
        proxy = stack.enter_context(ServerProcess("record-proxy", upstream.base_url))
        client = stack.enter_context(httpx.Client(timeout=600, trust_env=False))
        ends: dict[str, tuple[ServerProcess, list[Watched]]] = {
            "direct": (upstream, [upstream]),
            "record": (proxy, [proxy, upstream]),
        }
        runs: dict[str, Callable[[], Any]] = {}
        for end, (server, watch) in ends.items():
            runs[f"{end} httpx lines"] = lambda s=server, w=watch: lines_stream(client, s.base_url, w)
            runs[f"{end} openai SDK"] = lambda s=server, w=watch: sdk_stream(s.base_url, w)
            runs[f"{end} websockets"] = lambda s=server, w=watch: ws_stream(s.ws_url, w)
            runs[f"{end} back to back"] = lambda s=server, w=watch: one_after_another(client, s.base_url, w)
        got = interleaved(runs, rounds)
    label = f"{size // 1000}k events"
    out = []
    for reader in READERS:
        record, direct = got[f"record {reader}"], got[f"direct {reader}"]
        name = f"through rrkit record, {reader}, {label}"
        baseline = f"{reader} on the upstream directly"
        out += [
            Row(
                f"{name}, time to first event",
                median(r.first * 1000 for r in record),
                median(r.first * 1000 for r in direct),
                "ms",
                target=at_most(2, "added"),
                baseline_name=baseline,
                bench=BENCH,
            ),
            Row(
                f"{name}, events/s",
                median(r.rate for r in record),
                median(r.rate for r in direct),
                "ev/s",
                target=at_least(0.8),
                baseline_name=baseline,
                bench=BENCH,
            ),
            Row(
                f"{name}, CPU per event (proxy + upstream)",
                median(sum(r.cpu) / r.events * 1e6 for r in record),
                median(sum(r.cpu) / r.events * 1e6 for r in direct),
                "us",
                baseline_name="the upstream alone, reached directly",
                bench=BENCH,
            ),
        ]
    out.append(
        Row(
            f"through rrkit record, {label}, first event of a request sent as the previous one ended",
            median(ms * 1000 for ms in got["record back to back"]),
            median(ms * 1000 for ms in got["direct back to back"]),
            "ms",
            target=at_most(2, "added"),
            baseline_name="the same two requests on the upstream directly (httpx lines)",
            bench=BENCH,
        )
    )
    return out


def rows(profile: Profile) -> list[Row]:
    sizes = (1_000, 10_000) if profile.quick else (1_000, 10_000, 100_000)
    return [row for size in sizes for row in size_rows(size, profile.rounds if size < 100_000 else 3)]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
