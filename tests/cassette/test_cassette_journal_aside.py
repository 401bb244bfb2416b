"""The journal is written off the forwarding path: a recorded exchange is made into its journal line on the
journal's own thread, in slices of bounded time, each followed by a turn for the server's loop (a long one while the
server answers anything), so a long exchange never holds the loop (the next stream is answered while it is
written), and the line is the exchange as the cassette holds it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from rrkit.cassette import modes
from rrkit.cassette.journal import Journal, exchange_line
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.store import load_cassette
from rrkit.script import Script, reply, text

from ..errortrap import Serve

LONG = reply(text("x" * 2_000, chunks=2_000))


def _stream(url: str) -> int:
    body = {"model": "gpt-test", "input": "hi", "stream": True}
    with httpx.stream("POST", url + "/responses", json=body, timeout=60, trust_env=False) as response:
        return sum(1 for line in response.iter_lines() if line.startswith("data:"))


def test_a_journal_write_that_never_ends_holds_no_stream_and_the_save_waits_for_it(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, release = threading.Event(), threading.Event()
    append = Journal.append

    def slow_append(journal: Journal, *records: dict[str, object]) -> None:
        held.set()
        release.wait(60)
        append(journal, *records)

    monkeypatch.setattr(Journal, "append", slow_append)
    deck = CassetteDeck.open(tmp_path / "long.json", "rewrite", upstream=Script(default=LONG))
    server = serve(source=deck.source())
    deck.journal_to(server.state.capture)
    first = _stream(server.http_url)
    assert held.wait(60), "the first exchange never reached the journal"
    second = _stream(server.http_url)  # answered whole while the first exchange's journal write is held
    assert first == second > 2_000 and deck.journaled == 0
    release.set()
    saved = deck.save(server.settle(30).exchanges, server.connections)
    assert saved is not None and deck.journaled == 2
    assert len(load_cassette(saved).exchanges) == 2


def test_an_exchange_s_journal_line_is_the_exchange_as_the_cassette_holds_it(serve: Serve, tmp_path: Path) -> None:
    odd = reply(text('déjà vu 𝄞 "quoted" \\ back', chunks=3))
    deck = CassetteDeck.open(tmp_path / "odd.json", "rewrite", upstream=Script(default=odd))
    server = serve(source=deck.source())
    _stream(server.http_url)
    saved = deck.save(server.settle(30).exchanges, server.connections)
    assert saved is not None
    (recorded,) = load_cassette(saved).exchanges
    assert json.loads(exchange_line(recorded)) == recorded.model_dump(mode="json", exclude={"successor_of"})
    assert recorded.successor_of is None  # left out of the line, as out of the cassette, but on a successor


class _Clock:
    """perf_counter and sleep of the journal's thread, on a clock the test moves."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, list[float]()

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_the_journal_s_thread_gives_the_loop_a_turn_after_each_slice_and_a_long_one_while_the_server_answers() -> None:
    clock, answering = _Clock(), [False]
    between = modes.GiveWay(lambda: answering[0], clock.perf_counter, clock.sleep)
    between()  # within a slice: no turn
    clock.now += modes.SLICE_SECONDS
    between()
    answering[0] = True
    between()  # a new slice began at the turn
    clock.now += modes.SLICE_SECONDS
    between()
    assert clock.slept == [modes.IDLE_PAUSE, modes.BUSY_PAUSE]
    assert modes.IDLE_PAUSE < modes.SLICE_SECONDS < modes.BUSY_PAUSE


def test_the_server_counts_the_requests_it_is_answering_for_the_journal_to_give_way_to(serve: Serve) -> None:
    server = serve(Script(default=reply(text("abcd", chunks=4)).stall_after(2)))
    capture = server.state.capture
    body = {"model": "gpt-test", "input": "hi", "stream": True}
    with httpx.stream("POST", server.http_url + "/responses", json=body, timeout=60, trust_env=False) as response:
        lines = response.iter_lines()  # kept: a reader dropped closes the response
        next(lines)
        assert capture.answering == 1  # stalled mid-stream
    deadline = time.monotonic() + 30  # the call ends a moment after its exchange's outcome
    while capture.answering and time.monotonic() < deadline:
        time.sleep(0.01)
    assert capture.answering == 0
