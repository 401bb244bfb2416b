"""Never lose a recording: each exchange is journaled next to the cassette as it ends, a crash (kill -9) loses at
most the exchanges in flight and its journal is recovered once on the next open; a clean stop (SIGTERM) writes
the cassette and removes the journal; a value no JSON file can hold is escaped, integers of any size kept exact."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from rrkit.cassette.format import CassetteWarning
from rrkit.cassette.journal import Journal, journal_paths, recover_journals
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.replay import CassetteSource
from rrkit.cassette.store import load_cassette, save_cassette
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.script.loader import default_script
from rrkit.script.models import Script
from rrkit.script.select import NoMatch, RequestView
from rrkit.server.capture import Capture, SentEvent

from ..errortrap import Serve

BIG = 2**70


def one_exchange_recording(cassette: Path) -> tuple[CassetteDeck, Capture, Journal]:
    """A recording into `cassette` that has journaled one exchange (the client left), still running."""
    deck = CassetteDeck.open(cassette, "all", upstream=Script())
    capture = Capture()
    journal = deck.journal_to(capture)
    assert journal is not None
    exchange = capture.new_exchange("http", {}, {"model": "m", "input": "hi"})
    exchange.outcome = Outcome(OutcomeKind.DISCONNECTED)
    return deck, capture, journal


@contextmanager
def rrkit(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`rrkit ARGS --port 0` until it prints its HTTP base URL; killed at the end if still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", *args, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = None
        for line in process.stdout:
            if found := re.search(r"HTTP base URL:\s+(\S+)", line):
                url = found.group(1)
                break
        assert url, process.stderr.read() if process.stderr else ""
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=20)


def journaled_exchanges(cassette: Path) -> int:
    return sum(
        1
        for journal in journal_paths(cassette)
        for line in journal.read_text(encoding="utf-8").splitlines()
        if line.startswith('{"exchange"')
    )


def ask(client: httpx.Client, url: str, question: str) -> None:
    answer = client.post(url + "/responses", json={"model": "m", "input": question, "stream": True}, timeout=10)
    assert answer.status_code == 200 and "response.completed" in answer.text, answer.text


COMMANDS = {
    "serve": lambda cassette, upstream: [
        "serve",
        "--cassette",
        cassette,
        "--record-mode",
        "all",
        "--upstream",
        upstream,
    ],
    "record": lambda cassette, upstream: ["record", "--upstream", upstream, "--cassette", cassette],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_kill_9_during_a_recording_of_100_exchanges_loses_none_and_the_cassette_loads_with_all_100(
    command: str, serve: Serve, tmp_path: Path
) -> None:
    upstream = serve(default_script())  # a short text reply to anything
    cassette = tmp_path / "session.json"
    with rrkit(*COMMANDS[command](str(cassette), upstream.http_url)) as (process, url), httpx.Client() as client:
        for number in range(100):
            ask(client, url, f"question {number}")
        # An exchange is complete once the server has its outcome, a moment after the client read the last event.
        deadline = time.monotonic() + 60
        while journaled_exchanges(cassette) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    assert not cassette.exists()  # nothing was written at a stop: all is in the journal
    assert journaled_exchanges(cassette) == 100
    with pytest.warns(CassetteWarning, match=r"recovered 100 exchange\(s\) from session\.json\.\d+\.journal\.jsonl"):
        deck = CassetteDeck.open(cassette, "none")
    assert deck.existing is not None
    questions = [e.wire_request["input"] for e in deck.existing.exchanges if e.wire_request]
    assert questions == [f"question {number}" for number in range(100)]
    assert all(e.outcome is not None and e.outcome.kind is OutcomeKind.COMPLETED for e in deck.existing.exchanges)
    assert all(e.event_types[-1] == "response.completed" for e in deck.existing.exchanges)
    assert journal_paths(cassette) == []


def test_sigterm_writes_the_final_cassette_and_removes_the_journal(serve: Serve, tmp_path: Path) -> None:
    upstream = serve(default_script())
    cassette = tmp_path / "session.json"
    with rrkit(*COMMANDS["serve"](str(cassette), upstream.http_url)) as (process, url), httpx.Client() as client:
        for number in range(5):
            ask(client, url, f"question {number}")
        assert len(journal_paths(cassette)) == 1  # while recording
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert f"wrote {cassette}" in out
    assert journal_paths(cassette) == []
    assert len(load_cassette(cassette).exchanges) == 5


def test_a_recovered_journal_is_merged_once_after_what_the_cassette_held(serve: Serve, tmp_path: Path) -> None:
    upstream = serve(default_script())
    cassette = tmp_path / "session.json"
    with rrkit(*COMMANDS["serve"](str(cassette), upstream.http_url)) as (process, url), httpx.Client() as client:
        ask(client, url, "first")
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    with rrkit(*COMMANDS["serve"](str(cassette), upstream.http_url)) as (process, url), httpx.Client() as client:
        for question in ("second", "third"):
            ask(client, url, question)
        deadline = time.monotonic() + 60
        while journaled_exchanges(cassette) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    with pytest.warns(CassetteWarning, match=r"recovered 2 exchange\(s\)"):
        assert recover_journals(cassette) == 2
    assert recover_journals(cassette) == 0  # the journal is gone: a second open adds nothing
    recovered = load_cassette(cassette)
    assert [e.wire_request["input"] for e in recovered.exchanges if e.wire_request] == ["first", "second", "third"]
    assert [e.id for e in recovered.exchanges] == [0, 1, 2]


def test_a_journal_whose_cassette_was_written_just_before_the_crash_is_dropped_not_merged_again(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "c.json"
    deck, capture, journal = one_exchange_recording(cassette)
    final = deck.recorded(capture.exchanges, capture.connections)
    assert final is not None
    save_cassette(final, cassette, before_replace=journal.mark_saved)  # what `save` does, then the process dies
    os.close(journal._fd)  # the process dies before removing the journal: its lock goes with it
    journal._live.release()
    assert journal.path.exists()
    assert recover_journals(cassette) == 0
    assert not journal.path.exists()
    assert len(load_cassette(cassette).exchanges) == 1


def test_a_live_recordings_journal_is_left_alone_by_another_open(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    deck = CassetteDeck.open(cassette, "all", upstream=Script())
    capture = Capture()
    deck.journal_to(capture)
    exchange = capture.new_exchange("http", {}, {"model": "m", "input": "hi"})
    exchange.outcome = Outcome(OutcomeKind.DISCONNECTED)
    assert recover_journals(cassette) == 0  # locked by its session
    assert len(journal_paths(cassette)) == 1
    deck.save(capture.exchanges, capture.connections)
    assert journal_paths(cassette) == []
    assert len(load_cassette(cassette).exchanges) == 1


def test_a_lone_surrogate_is_recorded_escaped_with_a_warning_and_a_huge_integer_round_trips_exactly(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "odd.json"
    deck = CassetteDeck.open(cassette, "rewrite", upstream=Script())
    capture = Capture()
    deck.journal_to(capture)
    wire = {"model": "m", "instructions": "bad \ud800 text", "input": "hi", "tools": [{"maximum": BIG}]}
    odd = capture.new_exchange("http", {}, wire)
    odd.events = [SentEvent(0.0, {"type": "response.created", "note": "\udc00", "big": BIG})]
    with pytest.warns(CassetteWarning) as journaled:
        odd.outcome = Outcome(OutcomeKind.DROPPED, 1)
    assert {str(w.message).split(":")[1].strip() for w in journaled} == {"wire_request.instructions", "events[0].note"}
    fine = capture.new_exchange("http", {}, {"model": "m", "input": "next"})
    fine.outcome = Outcome(OutcomeKind.DISCONNECTED)
    assert journaled_exchanges(cassette) == 2  # the odd exchange did not stop the journal
    with pytest.warns(CassetteWarning) as saved:
        deck.save(capture.exchanges, capture.connections)
    assert all(str(w.message).startswith("exchange 0: ") for w in saved)
    loaded = load_cassette(cassette)
    assert len(loaded.exchanges) == 2
    recorded = loaded.exchanges[0]
    assert recorded.wire_request is not None
    assert recorded.wire_request["instructions"] == "bad \\ud800 text"
    assert recorded.wire_request["tools"][0]["maximum"] == BIG
    assert type(recorded.wire_request["tools"][0]["maximum"]) is int
    assert recorded.events[0].event == {"type": "response.created", "note": "\\udc00", "big": BIG}
    json.loads(cassette.read_text(encoding="utf-8"))  # valid UTF-8 JSON


async def test_a_request_with_an_integer_beyond_64_bits_matches_its_own_recording(tmp_path: Path) -> None:
    cassette = tmp_path / "big.json"
    deck = CassetteDeck.open(cassette, "rewrite", upstream=Script())
    capture = Capture()
    wire = {"model": "m", "input": "hi", "tools": [{"type": "function", "parameters": {"maximum": BIG}}]}
    exchange = capture.new_exchange("http", {}, wire)
    exchange.logical_request = wire
    exchange.events = [SentEvent(0.0, {"type": "response.created", "response": {"id": "resp_1"}})]
    exchange.outcome = Outcome(OutcomeKind.DROPPED, 1)
    deck.save(capture.exchanges, capture.connections)
    source = CassetteSource(load_cassette(cassette))
    answer = await source.select(RequestView("http", {}, wire, wire))
    assert not isinstance(answer, NoMatch), answer
