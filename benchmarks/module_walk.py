"""The walk of one recorded SSE request through rrkit's modules (issue 45): how many modules it visits, and how
often it goes back into a module it had left, in `rrkit serve --cassette C --record-mode new_episodes --upstream URL`.

The recording server is built in-process by the code `rrkit serve` runs (`cassette_server`, its options parsed by
the `serve` command itself, with `--quiet`: the per-exchange line is a printer beside the path), in front of an
upstream FakeServer playing the default script on an event loop of its own thread. The cassette holds one exchange;
after one warm-up request, ONE streamed POST /v1/responses that it does not hold (a cassette miss, relayed upstream
and recorded) is traced with a profile hook (`sys.setprofile`) in the recording server's threads only (its event
loop and the worker threads it starts), from the request until its exchange is journaled. Neither the client's
thread nor the upstream's thread is traced: the upstream's own handling of the relayed request is left out.

Counting: each *call* of a function defined in an `rrkit` module is the entry into that module; resuming a
suspended coroutine or generator is not a new entry (how often one resumes depends on how the bytes arrive, not on
the code). From the modules entered, in order, with consecutive repeats collapsed: `modules` is how many distinct
ones there are, `returns` how many entries go into a module seen earlier in that sequence. Both are counts of
code, not of time: the same on every run (each thread counted apart, the journal's thread to its end).

Run: python -m benchmarks.module_walk [--verbose] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.recordmode import parse_record_mode
from rrkit.cli.server_options import ServerOptions
from rrkit.cli.serving import cassette_server, serve
from rrkit.server.runner import FakeServer

BEFORE = {"modules": 37, "returns": 191}
"""The walk on the code of issue 45, before it was shortened (192 returns on some runs: there, the near-miss report
was built in a worker thread, whose calls interleave with the event loop's by a call, one way or the other)."""

_RESUME = 151  # dis.opmap["RESUME"]: oparg 0 starts a frame, any other resumes it after a yield or an await


@dataclass(frozen=True)
class Walk:
    """The modules one request entered, in order (consecutive repeats collapsed), and what they count to."""

    sequence: tuple[str, ...]

    @classmethod
    def of(cls, entered: Sequence[str]) -> Walk:
        return cls(tuple(module for i, module in enumerate(entered) if i == 0 or entered[i - 1] != module))

    @property
    def modules(self) -> int:
        return len(set(self.sequence))

    @property
    def returns(self) -> int:
        """Entries into a module that appeared earlier in the sequence."""
        return len(self.sequence) - self.modules

    def figures(self) -> dict[str, int]:
        return {"modules": self.modules, "returns": self.returns}


class _Tracer:
    """A profile hook that, while `on`, notes the rrkit module of each function called in a thread not left out,
    each thread's apart: how the threads' calls interleave depends on the machine's load, not on the code."""

    def __init__(self) -> None:
        self.on = False
        self.left_out: set[int] = set()
        self.by_thread: dict[str, list[str]] = {}

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or not self.on or threading.get_ident() in self.left_out:
            return
        module = frame.f_globals.get("__name__", "")
        code = frame.f_code.co_code
        if module.startswith("rrkit") and code[frame.f_lasti] == _RESUME and code[frame.f_lasti + 1] == 0:
            self.by_thread.setdefault(threading.current_thread().name, []).append(module)

    @property
    def entered(self) -> list[str]:
        """The modules entered, thread after thread (by the threads' names), each thread's in its order."""
        return [module for name in sorted(self.by_thread) for module in self.by_thread[name]]


_TRACER = _Tracer()  # one for the process: threads keep the hook they were started with


@contextlib.contextmanager
def _upstream() -> Iterator[tuple[FakeServer, int]]:
    """A FakeServer playing the default script on an event loop in a thread of its own (and that thread's id)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="upstream", daemon=True)
    thread.start()
    server = FakeServer()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result()
    try:
        assert thread.ident is not None
        yield server, thread.ident
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


@contextlib.contextmanager
def _recording_server(cassette: Path, upstream: str) -> Iterator[tuple[FakeServer, CassetteDeck]]:
    """What `rrkit serve --cassette CASSETTE --record-mode new_episodes --upstream UPSTREAM --quiet` serves,
    running in the background; the cassette is written when it stops."""
    args = ["--cassette", str(cassette), "--record-mode", "new_episodes", "--upstream", upstream, "--quiet"]
    with serve.make_context("serve", args) as context:  # the command's own defaults; its limits in force
        names = [field.name for field in dataclasses.fields(ServerOptions) if field.init]
        options = ServerOptions(**{name: context.params[name] for name in names})
        mode = parse_record_mode(context.params["record_mode"])
        fake, deck = cassette_server(
            cassette,
            mode,
            options,
            options.upstream(upstream),
            options.match(),
            hint="",
            keep=context.params["keep"],
            time_scale=context.params["time_scale"],
            source_name="proxy",
        )
        with fake:
            yield fake, deck
        deck.save(fake.exchanges, fake.connections)


def _post(client: httpx.Client, server: FakeServer, text: str) -> None:
    with client.stream("POST", server.http_url + "/responses", json={"model": "m", "input": text, "stream": True}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {r.read().decode(errors='replace')}")
        r.read()
    server.settle()


def _drain(server: FakeServer) -> None:
    """Return once the server's loop has run what it had scheduled (an exchange's journaling, a turn after it)."""
    loop = server._loop
    assert loop is not None
    for _ in range(2):
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result()


def measure() -> Walk:
    """The walk of one cassette miss relayed upstream and recorded, after one warm-up request."""
    tracer = _TRACER
    tracer.on, tracer.by_thread = False, {}
    tracer.left_out = {threading.get_ident()}
    with tempfile.TemporaryDirectory() as folder, _upstream() as (upstream, upstream_thread):
        tracer.left_out.add(upstream_thread)
        cassette = Path(folder) / "walk.json"
        with _recording_server(cassette, upstream.http_url) as (recording, _), httpx.Client() as client:
            _post(client, recording, "recorded")  # the one exchange the cassette holds
        threading.setprofile(tracer)  # the recording server's threads started from now on
        try:
            with _recording_server(cassette, upstream.http_url) as (recording, deck), httpx.Client() as client:
                loop = recording._loop
                assert loop is not None
                loop.call_soon_threadsafe(sys.setprofile, tracer)  # its loop's thread, if it was running already
                _post(client, recording, "warm up")
                _drain(recording)
                deck.settle_journal()
                tracer.on = True
                _post(client, recording, "traced")
                _drain(recording)
                deck.settle_journal()  # its journal's thread done with it: where the trace ends is not a race
                tracer.on = False
                loop.call_soon_threadsafe(sys.setprofile, None)
        finally:
            tracer.on = False
            threading.setprofile(None)
    return Walk.of(tracer.entered)


def report(walk: Walk, *, verbose: bool = False) -> str:
    lines = [
        f"modules visited: {walk.modules} (before: {BEFORE['modules']})",
        f"returns to a module already left: {walk.returns} (before: {BEFORE['returns']})",
    ]
    if verbose:
        seen: set[str] = set()
        lines.append("the modules entered, in order (* a return):")
        for module in walk.sequence:
            lines.append(f"  {'*' if module in seen else ' '} {module}")
            seen.add(module)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="print the sequence of modules entered")
    parser.add_argument("--json", action="store_true", help="print the figures (and the sequence) as JSON")
    args = parser.parse_args(argv)
    walk = measure()
    if args.json:
        data: dict[str, Any] = {**walk.figures(), "before": BEFORE, "sequence": list(walk.sequence)}
        print(json.dumps(data, indent=2))
    else:
        print(report(walk, verbose=args.verbose))


if __name__ == "__main__":
    main()
