"""Reading what a server captured right after a client saw its stream end: the outcome is noted a moment after the
cut (or the terminal event) reached the client, so a reader waits for exchanges still ending, but not for a stall,
which ends only when its client leaves."""

from __future__ import annotations

import threading

from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.server.capture import Capture, Exchange


def ending_later(exchange: Exchange, outcome: Outcome, after: float = 0.2) -> threading.Timer:
    timer = threading.Timer(after, lambda: setattr(exchange, "outcome", outcome))
    timer.start()
    return timer


def test_a_reader_waits_for_an_exchange_whose_cut_the_client_saw_before_its_outcome_was_noted() -> None:
    capture = Capture()
    exchange = capture.new_exchange("http", {}, None)
    exchange.ending = Outcome(OutcomeKind.DROPPED, 4)  # the server has decided: a cut after 4 events
    ending_later(exchange, Outcome(OutcomeKind.DROPPED, 4))
    assert capture.wait_settled(30, except_stalls=True)
    assert exchange.outcome == Outcome(OutcomeKind.DROPPED, 4)


def test_a_stall_is_not_waited_for_except_by_a_reader_who_asks_for_every_outcome() -> None:
    capture = Capture()
    stalled = capture.new_exchange("http", {}, None)
    stalled.ending = Outcome(OutcomeKind.STALLED, 2)
    assert capture.wait_settled(30, except_stalls=True)  # at once: its client may wait for ever
    assert not capture.wait_settled(0.05)
    running = capture.new_exchange("http", {}, None)  # a stream still going: waited for either way
    assert not capture.wait_settled(0.05, except_stalls=True)
    ending_later(running, Outcome(OutcomeKind.ANSWERED, 10), after=0.05)
    assert capture.wait_settled(30, except_stalls=True)
