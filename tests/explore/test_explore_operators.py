"""The operators and the oracle, without a socket: each operator does what it claims to a valid stream at every
place it applies (`keeps` its verdict, `no answer`), and the oracle reads a stream as a client does, up to its first
terminal event."""

from __future__ import annotations

import itertools

import pytest

from rrkit.explore.operators import OPERATORS, UNKNOWN_EVENT, Op, apply
from rrkit.explore.seeds import shipped_seeds
from rrkit.explore.stream import Delivery, Stream, Verdict, expected
from rrkit.protocol.order_rules import ANSWER_RULES, Rule

SEEDS = {seed.name: seed for seed in shipped_seeds()}


def test_every_seed_is_a_whole_answer_with_its_text() -> None:
    verdicts = {name: expected(Stream(seed.events)) for name, seed in SEEDS.items()}
    assert {name: (v.verdict, v.text) for name, v in verdicts.items()} == {
        "short": (Verdict.ANSWER, "é"),
        "text": (Verdict.ANSWER, "Hello! Grüße, 世界 👋 done."),
    }


@pytest.mark.parametrize("operator", OPERATORS, ids=lambda operator: operator.name)
def test_each_operator_does_what_it_claims_to_a_valid_stream_wherever_it_applies(operator: object) -> None:
    chosen = next(o for o in OPERATORS if o is operator)
    for seed, at, value in itertools.product(SEEDS.values(), range(12), range(6)):
        for transport in chosen.transports:
            stream = Stream(seed.events)
            changed = apply(stream, [Op(chosen.name, at, value)], transport)
            verdict = expected(changed).verdict
            if chosen.claim == "keeps":
                assert verdict is Verdict.ANSWER, (chosen.name, seed.name, at, value)
            elif chosen.claim == "no answer":
                assert changed != stream and verdict is Verdict.NO_ANSWER, (chosen.name, seed.name, at, value)


def test_an_unknown_event_is_numbered_in_and_ignored_by_the_oracle() -> None:
    changed = apply(Stream(SEEDS["short"].events), [Op("unknown_event", 0, 0)], "http")
    assert [event["type"] for event in changed.events].count(UNKNOWN_EVENT) == 1
    assert [event["sequence_number"] for event in changed.events] == list(range(len(changed.events)))
    assert expected(changed).verdict is Verdict.ANSWER


def test_what_follows_the_first_terminal_event_is_not_read() -> None:
    events = SEEDS["short"].events
    trailing = ({"type": "response.output_text.delta", "sequence_number": 99, "delta": "late"},)
    assert expected(Stream(events + trailing)).verdict is Verdict.ANSWER


def test_a_break_of_the_delivery_after_the_terminal_event_leaves_the_answer_whole() -> None:
    events = SEEDS["short"].events
    assert expected(Stream(events, Delivery(cut_after=len(events)))).verdict is Verdict.ANSWER
    assert expected(Stream(events, Delivery(cut_after=len(events) - 1))).why == "cut"


def test_a_rule_outside_the_answer_rules_leaves_the_client_free() -> None:
    events = list(SEEDS["short"].events)
    del events[1]  # response.in_progress: its place numbered again, only IN_PROGRESS is broken
    renumbered = tuple({**event, "sequence_number": index} for index, event in enumerate(events))
    assert Rule.IN_PROGRESS not in ANSWER_RULES
    assert (expected(Stream(renumbered)).verdict, expected(Stream(renumbered)).why) == (Verdict.EITHER, "in_progress")


def test_an_operator_that_does_not_apply_leaves_the_stream_as_it_was() -> None:
    stream = Stream(SEEDS["short"].events)
    assert apply(stream, [Op("chunks", 0, 3)], "ws") == stream  # WebSocket messages arrive whole
    cut = apply(stream, [Op("cut", 2, 0)], "http")
    assert apply(cut, [Op("stall", 1, 0)], "http") == cut  # one break per stream: the first stands
