"""`rrkit conform` on what a client does beyond one turn (the opt-in scenarios `background-cancel`, `compaction` and
`conversation`, RRKIT_ACTION): rrkit's reference client and a client on the official Python SDK cancel a background
response they stop, start again from a compaction, and keep two turns in a conversation, holding every must; the
same client broken on purpose (BROKEN_CANCEL, BROKEN_COMPACT, BROKEN_CONVERSATION) breaks exactly that scenario's
must, with what it did wrong in what the referee says it saw."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rrkit.conform import CommandClient, ConformReport, catalogue, run
from rrkit.conform.drive import client_environment
from rrkit.conform.scenario import select
from rrkit.drive import ServerURLs

TIMEOUT = 30.0
SDK_CLIENT = [sys.executable, str(Path(__file__).parent / "sdk_client.py")]
ACTIONS = {"background-cancel": "cancel", "compaction": "compact", "conversation": "conversation"}


def failures(report: ConformReport) -> list[tuple[str, str]]:
    return [
        (verdict.expectation, verdict.seen)
        for result in report.results
        for verdict in result.verdicts
        if not verdict.held
    ]


def test_each_scenario_is_opt_in_and_tells_the_client_what_to_do() -> None:
    shipped = {scenario.name: scenario for scenario in catalogue(opt_in=True)}
    assert not set(ACTIONS) & {scenario.name for scenario in catalogue()}
    for name, action in ACTIONS.items():
        (scenario,) = select(list(shipped.values()), (name,))
        environment = client_environment(ServerURLs("http://127.0.0.1:1", "ws://127.0.0.1:1"), scenario, "http")
        assert environment["RRKIT_ACTION"] == action
    assert client_environment(ServerURLs("http://a", "ws://a"), shipped["text"], "http")["RRKIT_ACTION"] == ""


@pytest.mark.parametrize("scenario", list(ACTIONS))
def test_the_reference_client_holds_every_must(scenario: str) -> None:
    report = run(None, only=(scenario,), timeout=TIMEOUT)
    assert report.ok, failures(report)


@pytest.mark.parametrize("scenario", list(ACTIONS))
def test_a_client_on_the_official_sdk_holds_every_must(scenario: str) -> None:
    report = run(CommandClient(SDK_CLIENT), only=(scenario,), timeout=TIMEOUT)
    assert report.ok, failures(report)


def test_the_reference_client_cancels_the_response_it_created_and_reads_no_more() -> None:
    (result,) = run(None, only=("background-cancel",), timeout=TIMEOUT).results
    create, cancel = result.run.attempts
    assert (create.kind, cancel.kind, cancel.target) == ("full", "responses.cancel", create.response_id)


BROKEN = [
    ("background-cancel", "BROKEN_CANCEL", "none", "never cancelled"),
    ("background-cancel", "BROKEN_CANCEL", "resume", "resume after the cancel"),
    ("background-cancel", "BROKEN_CANCEL", "late", "the cancel was refused (400"),
    ("compaction", "BROKEN_COMPACT", "drop", "did not carry 1 of the 1 compaction item"),
    ("compaction", "BROKEN_COMPACT", "keep", "still carried what it replaced: function_call, function_call_output"),
    ("compaction", "BROKEN_COMPACT", "alter", "did not carry 1 of the 1 compaction item"),
    ("conversation", "BROKEN_CONVERSATION", "history", "sent again what the conversation already held: user message"),
    ("conversation", "BROKEN_CONVERSATION", "forget", "1 of 2 turn(s) named no conversation"),
    ("conversation", "BROKEN_CONVERSATION", "two", "the turns named 2 conversations"),
    ("conversation", "BROKEN_CONVERSATION", "previous", "a previous_response_id, which the API refuses"),
]


@pytest.mark.parametrize(("scenario", "variable", "mode", "seen"), BROKEN, ids=[f"{s}-{m}" for s, _, m, _ in BROKEN])
def test_a_client_broken_on_purpose_breaks_exactly_that_must(
    scenario: str, variable: str, mode: str, seen: str
) -> None:
    report = run(CommandClient(SDK_CLIENT, env={variable: mode}), only=(scenario,), timeout=TIMEOUT)
    ((expectation, said),) = failures(report)
    assert expectation == {"background-cancel": "cancelled", "compaction": "compacted"}.get(scenario, "in_conversation")
    assert seen in said


def test_the_codex_profile_s_identity_headers_are_judged_on_model_requests_not_on_resource_calls() -> None:
    """The reference client names its session on every create (the codex profile's rule holds), and its cancel and
    its conversation's creation, which carry no turn, are not held to the turn's headers."""
    report = run(None, only=("background-cancel", "conversation"), timeout=TIMEOUT, profile="codex")
    assert report.ok, failures(report)
    kinds = [attempt.kind for result in report.results for attempt in result.run.attempts]
    assert {"responses.cancel", "conversations.create"} <= set(kinds)
    held = [v.seen for result in report.results for v in result.verdicts if v.expectation.startswith("sends ")]
    assert held == ["all 1 attempt(s) carry them", "all 2 attempt(s) carry them"]
