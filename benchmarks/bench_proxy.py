"""The recording proxy's cost: one response of 10k text deltas from a scripted FakeServer (the upstream), read
directly and through the recording proxy (`FakeServer(source=UpstreamSource(upstream))`, what `rrkit record`
runs), over SSE and over WebSocket, interleaved, each server in its own process. Prints events/s, time to the
first event and the CPU time per event of proxy + upstream beside the upstream's alone (/proc/<pid>/stat). And,
where `mitmdump` is installed (RRKIT_MITMDUMP, else PATH), the same SSE response through mitmproxy's recording
proxy (`mitmdump --mode reverse:UPSTREAM -w FLOWS`) in the same interleaved run.

Each run begins once both servers are idle (what one did after the previous run's last event, such as the
upstream's capture of 10k events, would otherwise delay the next run's first event), and a pair gets two more
rounds than the profile's: the time to the first event is a few milliseconds on a shared machine.

Run: python -m benchmarks.bench_proxy [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence

import httpx

from benchmarks.common import (
    PeerProcess,
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
    sse_stream,
    ws_stream,
)

BENCH = "proxy"
SIZE = 10_000
IDLE_WINDOW = 0.02
IDLE_CPU = 0.001  # CPU seconds a server may use in IDLE_WINDOW and count as idle
IDLE_WAIT = 3.0


def when_idle(watch: Sequence[Watched], run: Callable[[], StreamRun]) -> Callable[[], StreamRun]:
    """`run`, begun once every watched server used under IDLE_CPU in an IDLE_WINDOW (or after IDLE_WAIT)."""

    def quiet_run() -> StreamRun:
        deadline = time.monotonic() + IDLE_WAIT
        before = [server.cpu() for server in watch]
        while time.monotonic() < deadline:
            time.sleep(IDLE_WINDOW)
            now = [server.cpu() for server in watch]
            if all(b - a < IDLE_CPU for a, b in zip(before, now, strict=True)):
                break
            before = now
        return run()

    return quiet_run


MITMDUMP_ENV = "RRKIT_MITMDUMP"
"""The `mitmdump` to measure beside the proxy (else `mitmdump` on PATH); `pip install mitmproxy` provides it."""


def mitmdump() -> str | None:
    return os.environ.get(MITMDUMP_ENV) or shutil.which("mitmdump")


def rows(profile: Profile) -> list[Row]:
    peer = mitmdump()
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(ServerProcess("script", str(SIZE)))
        proxy = stack.enter_context(ServerProcess("proxy", upstream.base_url))
        client = stack.enter_context(httpx.Client(timeout=600))
        watch: list[Watched] = [proxy, upstream]
        runs = {
            "direct sse": when_idle(watch, lambda: sse_stream(client, upstream.base_url, watch)),
            "proxy sse": when_idle(watch, lambda: sse_stream(client, proxy.base_url, watch)),
            "direct ws": when_idle(watch, lambda: ws_stream(upstream.ws_url, watch)),
            "proxy ws": when_idle(watch, lambda: ws_stream(proxy.ws_url, watch)),
        }
        if peer is not None:
            flows = stack.enter_context(tempfile.TemporaryDirectory())
            origin = upstream.base_url.removesuffix("/v1")
            mitm = stack.enter_context(
                PeerProcess(
                    [
                        peer,
                        "-q",
                        "--mode",
                        f"reverse:{origin}",
                        "--listen-host",
                        "127.0.0.1",
                        "--listen-port",
                        "{port}",
                        "-w",
                        f"{flows}/flows",
                    ]
                )
            )
            peers: list[Watched] = [mitm, upstream]
            runs["mitmdump sse"] = when_idle(peers, lambda: sse_stream(client, mitm.base_url, peers))
        got: dict[str, list[StreamRun]] = interleaved(runs, profile.rounds + (2 if profile.quick else 4))
    rate = {name: median(r.rate for r in samples) for name, samples in got.items()}
    first = {name: median(r.first * 1000 for r in samples) for name, samples in got.items()}
    both = {name: median((r.cpu[0] + r.cpu[1]) / r.events * 1e6 for r in samples) for name, samples in got.items()}
    label = f"{SIZE // 1000}k"
    out = []
    for transport in ("sse", "ws"):
        proxied, direct = f"proxy {transport}", f"direct {transport}"
        name = f"recording proxy, {transport.upper()} {label} events"
        out += [
            Row(
                f"{name}, events/s",
                rate[proxied],
                rate[direct],
                "ev/s",
                target=at_least(0.8),
                baseline_name="the upstream reached directly",
                bench=BENCH,
            ),
            Row(
                f"{name}, time to first event",
                first[proxied],
                first[direct],
                "ms",
                target=at_most(2, "added"),
                baseline_name="the upstream reached directly",
                bench=BENCH,
            ),
            Row(
                f"{name}, CPU per event (proxy + upstream)",
                both[proxied],
                both[direct],
                "us",
                baseline_name="the upstream alone, reached directly",
                bench=BENCH,
            ),
        ]
    return out + mitmdump_rows(rate, first, both)


def mitmdump_rows(rate: dict[str, float], first: dict[str, float], both: dict[str, float]) -> list[Row]:
    """rrkit's recording proxy beside mitmproxy's (`mitmdump` in reverse mode writing its flow file), the
    recording proxy a user would otherwise pick, on the same SSE response in the same run."""
    name = f"recording proxy, SSE {SIZE // 1000}k events, beside mitmdump"
    if "mitmdump sse" not in rate:
        skipped = f"mitmdump NOT INSTALLED: baseline skipped (pip install mitmproxy, or set {MITMDUMP_ENV})"
        return [Row(f"{name}, events/s", rate["proxy sse"], None, "ev/s", baseline_name=skipped, bench=BENCH)]
    named = "mitmdump --mode reverse:UPSTREAM -w FLOWS (mitmproxy's recording proxy)"
    return [
        Row(
            f"{name}, events/s",
            rate["proxy sse"],
            rate["mitmdump sse"],
            "ev/s",
            target=at_least(1.0),
            baseline_name=named,
            bench=BENCH,
        ),
        Row(
            f"{name}, time to first event",
            first["proxy sse"],
            first["mitmdump sse"],
            "ms",
            baseline_name=named,
            bench=BENCH,
        ),
        Row(
            f"{name}, CPU per event (proxy + upstream)",
            both["proxy sse"],
            both["mitmdump sse"],
            "us",
            baseline_name=named,
            bench=BENCH,
        ),
    ]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
