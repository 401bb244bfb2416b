"""The recording proxy's cost: one response of 10k text deltas from a scripted FakeServer (the upstream), read
directly and through the recording proxy (`FakeServer(source=UpstreamSource(upstream))`, what `rrkit record`
runs), over SSE and over WebSocket, interleaved, each server in its own process. Prints events/s, time to the
first event and the CPU time per event of proxy + upstream beside the upstream's alone (/proc/<pid>/stat). And, in
the same interleaved run, the same SSE response through the peers' recording proxies where they are installed:
mitmproxy's (`mitmdump --mode reverse:UPSTREAM -w FLOWS`; RRKIT_MITMDUMP, else PATH) and @copilotkit/aimock's record
mode (`llmock --record --provider-openai UPSTREAM -f FIXTURES`, UPSTREAM the origin; RRKIT_AIMOCK, else
.ci/node-aimock's), each request to aimock with its own `input`: one it has recorded, it answers from its fixture.

Each run begins once both servers are idle (what one did after the previous run's last event, such as the
upstream's capture of 10k events, would otherwise delay the next run's first event). A pair gets three times the
profile's rounds (quick: two more): a run takes 50-100 ms, and the time to the first event is a few milliseconds,
on a machine shared with the other servers of the run; with 9 rounds the medians of one full run moved by 0.1 of
the direct rate from one run to the next.

Run: python -m benchmarks.bench_proxy [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from benchmarks.bench_server_stream import AIMOCK_ENV, aimock_cli
from benchmarks.common import (
    STREAM_BODY,
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
    until_idle,
    ws_stream,
)

BENCH = "proxy"
SIZE = 10_000

Figures = dict[str, float]
"""A figure per run name (the medians of its samples)."""


def when_idle(watch: Sequence[Watched], run: Callable[[], StreamRun]) -> Callable[[], StreamRun]:
    """`run`, begun once every watched server is idle (`until_idle`)."""

    def quiet_run() -> StreamRun:
        until_idle(watch)
        return run()

    return quiet_run


MITMDUMP_ENV = "RRKIT_MITMDUMP"
"""The `mitmdump` to measure beside the proxy (else `mitmdump` on PATH); `pip install mitmproxy` provides it."""


def mitmdump() -> str | None:
    return os.environ.get(MITMDUMP_ENV) or shutil.which("mitmdump")


def mitmdump_command(origin: str, flows: Path) -> list[str] | None:
    """mitmproxy's recording proxy in front of `origin`, writing its flows into the folder `flows`, or None when
    mitmdump is missing."""
    peer = mitmdump()
    if peer is None:
        return None
    listen = ["--listen-host", "127.0.0.1", "--listen-port", "{port}"]
    return [peer, "-q", "--mode", f"reverse:{origin}", *listen, "-w", f"{flows}/flows"]


def aimock_record_command(origin: str, fixtures: Path) -> list[str] | None:
    """aimock's documented record command (`llmock --record --provider-openai UPSTREAM -f FIXTURES`), or None when
    node or the package is missing. UPSTREAM is the origin: aimock appends the request's path (`/v1/responses`) to
    it. It writes a fixture per request it proxies into FIXTURES/recorded."""
    cli = aimock_cli()
    if cli is None:
        return None
    return [*cli, "--record", "--provider-openai", origin, "-f", str(fixtures), "-h", "127.0.0.1", "-p", "{port}"]


def new_inputs() -> Iterator[Mapping[str, Any]]:
    """STREAM_BODY with a new `input` each time: a request aimock has recorded, it answers from the fixture."""
    return ({**STREAM_BODY, "input": f"go {n}"} for n in itertools.count())


def peer_run(
    stack: contextlib.ExitStack,
    command: list[str],
    upstream: ServerProcess,
    client: httpx.Client,
    bodies: Iterator[Mapping[str, Any]],
) -> Callable[[], StreamRun]:
    """A run through the peer's recording proxy `command` (in front of `upstream`, started for the rest of
    `stack`) that posts the next of `bodies` and is charged with the CPU time of the peer and the upstream."""
    peer = stack.enter_context(PeerProcess(command))
    watch: list[Watched] = [peer, upstream]
    return when_idle(watch, lambda: sse_stream(client, peer.base_url, watch, next(bodies)))


def peer_runs(
    stack: contextlib.ExitStack, upstream: ServerProcess, client: httpx.Client
) -> dict[str, Callable[[], StreamRun]]:
    """The runs through the peers' recording proxies that are installed, each in front of `upstream`."""
    origin = upstream.base_url.removesuffix("/v1")
    runs = {}
    mitm = mitmdump_command(origin, Path(stack.enter_context(tempfile.TemporaryDirectory())))
    if mitm is not None:
        runs["mitmdump sse"] = peer_run(stack, mitm, upstream, client, itertools.repeat(STREAM_BODY))
    aimock = aimock_record_command(origin, Path(stack.enter_context(tempfile.TemporaryDirectory())))
    if aimock is not None:
        runs["aimock sse"] = peer_run(stack, aimock, upstream, client, new_inputs())
    return runs


def rows(profile: Profile) -> list[Row]:
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(ServerProcess("script", str(SIZE)))
        proxy = stack.enter_context(ServerProcess("proxy", upstream.base_url))
        relay = stack.enter_context(ServerProcess("limit-relay", upstream.base_url))
        client = stack.enter_context(httpx.Client(timeout=600))
        watch: list[Watched] = [proxy, upstream]
        piped: list[Watched] = [relay, upstream]
        runs = {
            "limit sse": when_idle(piped, lambda: sse_stream(client, relay.base_url, piped)),
            "limit ws": when_idle(piped, lambda: ws_stream(relay.ws_url, piped)),
            "direct sse": when_idle(watch, lambda: sse_stream(client, upstream.base_url, watch)),
            "proxy sse": when_idle(watch, lambda: sse_stream(client, proxy.base_url, watch)),
            "direct ws": when_idle(watch, lambda: ws_stream(upstream.ws_url, watch)),
            "proxy ws": when_idle(watch, lambda: ws_stream(proxy.ws_url, watch)),
            **peer_runs(stack, upstream, client),
        }
        got: dict[str, list[StreamRun]] = interleaved(runs, profile.rounds + 2 if profile.quick else profile.rounds * 3)
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
        limit = "limit: a bare byte relay (asyncio, a connection upstream per client's, no parsing, nothing kept)"
        for what, figures, unit in (("events/s", rate, "ev/s"), ("time to first event", first, "ms")):
            relayed = figures[f"limit {transport}"]
            out.append(
                Row(f"{name} vs the limit, {what}", figures[proxied], relayed, unit, baseline_name=limit, bench=BENCH)
            )
    return out + mitmdump_rows(rate, first, both) + aimock_rows(rate, first, both)


def mitmdump_rows(rate: Figures, first: Figures, both: Figures) -> list[Row]:
    """rrkit's recording proxy beside mitmproxy's (`mitmdump` in reverse mode writing its flow file), the
    recording proxy a user would otherwise pick, on the same SSE response in the same run."""
    named = "mitmdump --mode reverse:UPSTREAM -w FLOWS (mitmproxy's recording proxy)"
    skipped = f"mitmdump NOT INSTALLED: baseline skipped (pip install mitmproxy, or set {MITMDUMP_ENV})"
    return peer_rows("mitmdump", "mitmdump sse", named, skipped, (rate, first, both))


def aimock_rows(rate: Figures, first: Figures, both: Figures) -> list[Row]:
    """rrkit's recording proxy beside aimock's record mode (proxying to the upstream and writing a fixture per
    request), the record/replay mock a user would otherwise pick, on the same SSE response in the same run."""
    named = (
        "llmock --record --provider-openai UPSTREAM_ORIGIN -f FIXTURES (@copilotkit/aimock's recording proxy, "
        "node dist/cli.js), a new input per request"
    )
    install = "npm install --prefix .ci/node-aimock @copilotkit/aimock"
    skipped = f"aimock NOT INSTALLED: baseline skipped ({install}, or set {AIMOCK_ENV})"
    return peer_rows("aimock --record", "aimock sse", named, skipped, (rate, first, both))


def peer_rows(peer: str, run: str, named: str, skipped: str, figures: tuple[Figures, Figures, Figures]) -> list[Row]:
    """rrkit's SSE run beside the peer's `run` (events/s, target 1.0x; time to first event; CPU per event of proxy
    + upstream), or one row saying the peer was `skipped` when it did not run."""
    rate, first, both = figures
    name = f"recording proxy, SSE {SIZE // 1000}k events, beside {peer}"
    if run not in rate:
        return [Row(f"{name}, events/s", rate["proxy sse"], None, "ev/s", baseline_name=skipped, bench=BENCH)]
    return [
        Row(
            f"{name}, events/s",
            rate["proxy sse"],
            rate[run],
            "ev/s",
            target=at_least(1.0),
            baseline_name=named,
            bench=BENCH,
        ),
        Row(f"{name}, time to first event", first["proxy sse"], first[run], "ms", baseline_name=named, bench=BENCH),
        Row(
            f"{name}, CPU per event (proxy + upstream)",
            both["proxy sse"],
            both[run],
            "us",
            baseline_name=named,
            bench=BENCH,
        ),
    ]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()
