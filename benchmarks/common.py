"""What every benchmark shares: the `Row` it reports, the run `Profile`, interleaved rounds and medians, servers in
subprocesses with their CPU time read from /proc, and the one table (or JSON) the rows are printed as.

A benchmark module `benchmarks/bench_NAME.py` exposes `rows(profile: Profile) -> list[Row]` and a `main()` that
prints them (`run_main(rows)`); `python -m benchmarks` runs them all and prints one table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, Self, TypeVar

ROOT = Path(__file__).resolve().parent.parent
"""The repository's root: children run from here so that `-m benchmarks.servers` imports."""

T = TypeVar("T")


# -- what a benchmark reports -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A target of issue 13. `of="ratio"`: rrkit / baseline `op` limit; `of="value"`: the rrkit figure itself;
    `of="added"`: rrkit - baseline (in the row's unit)."""

    op: Literal["<=", ">="]
    limit: float
    of: Literal["ratio", "value", "added"] = "ratio"

    def met(self, row: Row) -> bool | None:
        if self.of == "ratio":
            figure = row.ratio
        elif self.of == "value":
            figure = row.rrkit
        else:
            figure = None if row.rrkit is None or row.baseline is None else row.rrkit - row.baseline
        if figure is None:
            return None
        return figure <= self.limit if self.op == "<=" else figure >= self.limit

    def text(self, unit: str) -> str:
        if self.of == "ratio":
            return f"{self.op} {self.limit:g}x"
        if self.of == "added":
            return f"{self.op} +{self.limit:g} {unit}"
        return f"{self.op} {self.limit:g} {unit}"


def at_most(limit: float, of: Literal["ratio", "value", "added"] = "ratio") -> Target:
    return Target("<=", limit, of)


def at_least(limit: float, of: Literal["ratio", "value", "added"] = "ratio") -> Target:
    return Target(">=", limit, of)


@dataclass
class Row:
    """One line of the table: a measure, rrkit's figure and the baseline's in `unit`, their ratio (rrkit /
    baseline, computed unless given) and the issue's target for it, if it names one."""

    measure: str
    rrkit: float | None
    baseline: float | None
    unit: str
    ratio: float | None = None
    target: Target | None = None
    baseline_name: str = ""
    note: str = ""
    bench: str = ""

    def __post_init__(self) -> None:
        if self.ratio is None and self.rrkit is not None and self.baseline:
            self.ratio = self.rrkit / self.baseline

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.target.met(self)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["target"] = None if self.target is None else self.target.text(self.unit)
        data["met"] = self.met
        return data


@dataclass(frozen=True)
class Profile:
    """How much to measure: `quick` (the whole command in about 3 minutes) or the default (about 6 minutes on 2 cores).
    `rounds` is the number of interleaved rounds a pair gets; a benchmark may scale it."""

    name: str = "default"
    rounds: int = 5

    @property
    def quick(self) -> bool:
        return self.name == "quick"


QUICK = Profile("quick", rounds=3)
DEFAULT = Profile("default", rounds=5)


# -- rounds and medians -------------------------------------------------------------------------------------


def interleaved(runs: dict[str, Callable[[], T]], rounds: int, *, warmup: int = 1) -> dict[str, list[T]]:
    """Each run `rounds` times, one of each per round, the order rotated every round so that no run always goes
    first (or always follows the same one); `warmup` rounds first, not kept."""
    names = list(runs)
    for _ in range(warmup):
        for name in names:
            runs[name]()
    results: dict[str, list[T]] = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(runs[name]())
    return results


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


# -- servers in subprocesses --------------------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds the process has used so far: the sum of its live threads' run time in nanoseconds from
    /proc/<pid>/task/*/schedstat, or else utime + stime from /proc/<pid>/stat (10 ms ticks). The servers measured
    keep their threads for their lifetime, so that no time is lost with a thread that ended."""
    try:
        total = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += int((task / "schedstat").read_text().split()[0])
        if total:
            return total / 1e9
    except (FileNotFoundError, ProcessLookupError):
        pass
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


class _Served:
    """A server in a subprocess on `port`: its URLs, its CPU time so far, and a stop that asks it to end
    (`_ask_to_stop`), then kills it after 30 s."""

    process: subprocess.Popen[str]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"

    def cpu(self) -> float:
        return process_cpu(self.process.pid)

    def _ask_to_stop(self) -> None:
        self.process.terminate()

    def stop(self) -> None:
        if self.process.poll() is None:
            self._ask_to_stop()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerProcess(_Served):
    """`python -m benchmarks.servers KIND ARGS...` in a subprocess: it prints its port on its first line and
    serves until its stdin closes. `cpu()` is its CPU time so far."""

    def __init__(self, kind: str, *args: str) -> None:
        self.kind = kind
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.servers", kind, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=child_env(),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip():
            self.process.wait(timeout=30)
            raise RuntimeError(
                f"benchmark server {kind} {' '.join(args)} did not start (exit {self.process.returncode})"
            )
        self.port = int(line)

    def _ask_to_stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()


class Watched(Protocol):
    """A server process whose CPU time a run is charged with."""

    def cpu(self) -> float: ...


class PeerProcess(_Served):
    """A peer's own server, started with its own documented command line (`{port}` filled with a free port) and
    ready once its port accepts; stopped with SIGTERM."""

    def __init__(self, command: Sequence[str], ready_timeout: float = 60.0) -> None:
        self.port = free_port()
        # a file, not a pipe, so that a chatty peer never blocks on it; it lives as long as the peer
        self._log = log = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.process = subprocess.Popen(
            [part.format(port=self.port) for part in command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{command[0]} exited with {self.process.returncode}: {log.read()[-800:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{command[0]} did not listen on port {self.port} within {ready_timeout:g} s")

    def stop(self) -> None:
        super().stop()
        self._log.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- streaming clients (light, so that the client costs little beside the server) --------------------------

STREAM_BODY = {"model": "m", "input": "go", "stream": True}
IDLE_WINDOW = 0.02
IDLE_CPU = 0.001  # CPU seconds a server may use in IDLE_WINDOW and count as idle
IDLE_WAIT = 3.0


def until_idle(watch: Sequence[Watched]) -> None:
    """Return once every watched server used under IDLE_CPU in an IDLE_WINDOW (or after IDLE_WAIT)."""
    if not watch:
        return
    deadline = time.monotonic() + IDLE_WAIT
    before = [server.cpu() for server in watch]
    while time.monotonic() < deadline:
        time.sleep(IDLE_WINDOW)
        now = [server.cpu() for server in watch]
        if all(b - a < IDLE_CPU for a, b in zip(before, now, strict=True)):
            return
        before = now


@dataclass
class StreamRun:
    """One streamed response read by a client: events, wall seconds, seconds to the first event, and the CPU
    seconds each watched server process used meanwhile."""

    events: int
    wall: float
    first: float
    cpu: list[float]

    @property
    def rate(self) -> float:
        return self.events / self.wall


def sse_stream(
    client: Any, base_url: str, watch: Sequence[Watched] = (), body: Mapping[str, Any] = STREAM_BODY
) -> StreamRun:
    """POST a streaming request (`body`) with an httpx client, count SSE events on the raw bytes."""
    before = [server.cpu() for server in watch]
    start = time.perf_counter()
    with client.stream("POST", base_url + "/responses", json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{base_url}: HTTP {response.status_code}")
        count, first = count_sse(response.iter_raw(), start)
    wall = time.perf_counter() - start
    until_idle(watch)  # what a server does after the last event (capture, closing, a peer's file) is this run's
    return StreamRun(count, wall, first, [server.cpu() - b for server, b in zip(watch, before, strict=True)])


def count_sse(chunks: Iterable[bytes], start: float) -> tuple[int, float]:
    """The SSE events in a body read chunk by chunk, and the seconds after `start` to the first one."""
    first = 0.0
    count = 0
    tail = b""
    for chunk in chunks:
        data = tail + chunk
        found = data.count(b"\n\n")
        if found and not count:
            first = time.perf_counter() - start
        count += found
        tail = data[-1:]  # an event boundary may straddle two chunks
        if tail == b"\n" and data.endswith(b"\n\n"):
            tail = b""
    return count, first


def sse_ceiling(chunks: Sequence[bytes]) -> StreamRun:
    """The reading client's own ceiling: `sse_stream`'s parse of a body held in memory, no server, no socket."""
    start = time.perf_counter()
    count, first = count_sse(chunks, start)
    return StreamRun(count, time.perf_counter() - start, first, [])


def ws_ceiling(data: bytes, read_size: int = 1 << 16) -> StreamRun:
    """The WebSocket client's own ceiling: the frames of a stream held in memory parsed by `websockets`' own
    protocol (as its client does under `recv`) in socket-sized reads and decoded as text, no server, no socket."""
    from websockets.client import ClientProtocol
    from websockets.frames import Frame
    from websockets.protocol import State
    from websockets.uri import parse_uri

    protocol = ClientProtocol(parse_uri("ws://127.0.0.1/"), state=State.OPEN, max_size=None)
    start = time.perf_counter()
    first = 0.0
    count = 0
    for offset in range(0, len(data), read_size):
        protocol.receive_data(data[offset : offset + read_size])
        for frame in protocol.events_received():
            assert isinstance(frame, Frame)
            bytes(frame.data).decode()
            count += 1
            if count == 1:
                first = time.perf_counter() - start
    return StreamRun(count, time.perf_counter() - start, first, [])


def ws_stream(url: str, watch: Sequence[Watched] = ()) -> StreamRun:
    """Open a WebSocket, send one `response.create`, receive frames until `response.completed`."""
    from websockets.sync.client import connect

    before = [server.cpu() for server in watch]
    start = time.perf_counter()
    first = 0.0
    count = 0
    with connect(url, max_size=None, compression=None) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "go"}))
        while True:
            frame = ws.recv()
            count += 1
            if count == 1:
                first = time.perf_counter() - start
            if '"response.completed"' in frame[:200] or '"error"' in frame[:40]:
                break
    wall = time.perf_counter() - start
    until_idle(watch)  # what a server does after the last event (capture, closing, a peer's file) is this run's
    return StreamRun(count, wall, first, [server.cpu() - b for server, b in zip(watch, before, strict=True)])


# -- printing -----------------------------------------------------------------------------------------------


def _figure(value: float | None) -> str:
    if value is None:
        return "-"
    magnitude = abs(value)
    if magnitude >= 10_000:
        return f"{value / 1000:,.1f}k"
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(rows: Sequence[Row]) -> str:
    """The rows as one aligned text table."""
    header = ["measure", "rrkit", "baseline", "unit", "ratio", "target", "met", "baseline is"]
    lines = [header]
    for row in rows:
        met = row.met
        lines.append(
            [
                row.measure,
                _figure(row.rrkit),
                _figure(row.baseline),
                row.unit,
                "-" if row.ratio is None else f"{row.ratio:.2f}",
                "" if row.target is None else row.target.text(row.unit),
                "" if met is None else ("yes" if met else "NO"),
                row.baseline_name + (f" ({row.note})" if row.note else ""),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    right = {1, 2, 4}
    out = []
    for index, line in enumerate(lines):
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(line[:-1])]
        out.append("  ".join(cells) + "  " + line[-1])
        if index == 0:
            out.append("  ".join("-" * width for width in widths) + "  " + "-" * len(header[-1]))
    return "\n".join(out)


def as_json(rows: Sequence[Row], **meta: Any) -> str:
    return json.dumps({**meta, "rows": [row.as_json() for row in rows]}, indent=2)


def profile_parser(description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the quick profile (fewer rounds and sizes)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per pair (overrides the profile)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    return parser


def profile_of(args: argparse.Namespace) -> Profile:
    base = QUICK if args.quick else DEFAULT
    return Profile(base.name, rounds=args.rounds or base.rounds)


def run_main(rows: Callable[[Profile], list[Row]], description: str | None) -> None:
    """A benchmark module's `main()`: its rows, printed as the table (or JSON)."""
    args = profile_parser(description).parse_args()
    profile = profile_of(args)
    got = rows(profile)
    print(as_json(got, profile=profile.name) if args.json else table(got))
