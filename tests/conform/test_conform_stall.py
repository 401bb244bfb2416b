"""The stall must (`stall`, "ends on its own") is fair to a 60-second idle limit (issue 61): under `rrkit conform`'s
defaults a client whose only idle limit is a 60 s read timeout gives up on the silent stream, retries once and holds
every must of the scenario, while a client with no idle limit is still stopped and breaks `ends`. Each run waits out
a real idle limit or conform's whole default budget (a minute or more): marked `slow` (`pytest -m slow`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rrkit.conform import CommandClient, run
from rrkit.conform.drive import SETTLE
from rrkit.conform.timeouts import DEFAULT_TIMEOUT

MINIMAL_CLIENT = Path(__file__).with_name("minimal_client.py")
IDLE_LIMIT = 60.0
"""The read timeout of LlamaIndex and of many HTTP stacks: the longest idle limit the default budget is fair to."""
RETRY_ROOM = 30.0
"""What the retry after the stall may take on a busy machine (an interpreter started, a whole reply streamed)."""


def client(**env: str) -> CommandClient:
    return CommandClient([sys.executable, str(MINIMAL_CLIENT)], env=env)


def test_the_default_budget_leaves_room_for_a_60_s_idle_limit_and_the_retry_after_it() -> None:
    assert DEFAULT_TIMEOUT >= IDLE_LIMIT + RETRY_ROOM


@pytest.mark.slow
def test_a_client_whose_only_idle_limit_is_60_s_holds_the_stall_musts_under_the_defaults() -> None:
    report = run(client(IDLE_TIMEOUT=f"{IDLE_LIMIT:g}"), only=("stall",), transports=("http",))
    (result,) = report.results
    assert report.ok, [(verdict.expectation, verdict.seen) for verdict in report.failures]
    assert {verdict.expectation for verdict in result.verdicts if verdict.held} >= {"ends on its own", "answered"}
    # promptly, by its shape: the client gave up on the silent stream itself and one full retry answered the turn
    assert result.run.outcome == "completed"
    assert [(attempt.kind, attempt.outcome) for attempt in result.run.attempts] == [
        ("full", "stalled"),
        ("full", "completed"),
    ]


@pytest.mark.slow
@pytest.mark.timeout(DEFAULT_TIMEOUT + SETTLE + 120)
def test_a_client_with_no_idle_limit_still_breaks_ends_under_the_defaults() -> None:
    report = run(client(BROKEN="no-idle-timeout"), only=("stall",), transports=("http",))
    assert [(verdict.scenario, verdict.expectation) for verdict in report.failures] == [("stall", "ends on its own")]
    (result,) = report.results
    assert result.run.outcome == "timed out" and result.run.flow == "http full -> stalled"
    assert f"within {DEFAULT_TIMEOUT:g} s" in (result.run.detail or "")
