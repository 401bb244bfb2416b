"""The differential harness's multi-turn and connect-timeout parts: turn marks, the connect-timeout wait, the driver."""

from __future__ import annotations

import pytest

from rrkit.differential.appserver import run_codex_turns
from rrkit.differential.observation import Attempt, WaitRanges
from rrkit.differential.run import next_turns_marked, observe_reference
from rrkit.script import Script, reject, reply
from rrkit.server import FakeServer
from rrkit.server.logs import quiet_server_logs

from .codex import require_codex
from .differential_cases import render

RANGES = WaitRanges(connect_timeout=15.0)


def _attempt(wait: str, turn: str | None) -> Attempt:
    return Attempt("http", "full", wait, "completed", turn_id=turn)


def test_the_first_attempt_of_each_later_turn_waits_turn() -> None:
    attempts = (_attempt("first", None), _attempt("none", "a"), _attempt("backoff", "a"), _attempt("backoff", "b"))
    assert [a.wait for a in next_turns_marked(attempts)] == ["first", "none", "backoff", "turn"]


def test_a_prewarm_between_turns_stays_a_row_of_its_own() -> None:
    attempts = (_attempt("first", "a"), _attempt("none", None), _attempt("none", "b"))
    assert [a.wait for a in next_turns_marked(attempts)] == ["first", "none", "turn"]


def test_a_wait_as_long_as_the_connect_timeout_is_named_so_and_what_follows_it_too() -> None:
    assert RANGES.classify(15.01) == "connect timeout"
    assert RANGES.classify(15.21) == "connect timeout + backoff"
    assert RANGES.classify(10.0) == "other(10.00s)"
    assert RANGES.classify(25.0) == "other(25.00s)"
    assert WaitRanges().classify(15.0).startswith("other")


def test_two_reference_turns_on_one_session_continue_on_the_open_socket() -> None:
    seen = observe_reference(Script(default=reply("Hi.")), turns=2, websockets=True)
    assert seen.outcome == "completed / completed"
    assert render(seen, ("tid", "chain")) == (
        "ws warmup -> completed | - | S1",
        "<none> ws incremental -> completed | T1 | S1 after #1",
        "<turn> ws incremental -> completed | T2 | S1 after #2",
    )


@pytest.mark.codex
def test_codex_app_server_runs_each_turn_of_one_thread_and_reports_a_failed_one() -> None:
    codex = require_codex()
    script = Script(default=reply("Hi.")).add(reject(400, None, "Bad request."))
    with quiet_server_logs(), FakeServer(script, log_level="critical") as server:
        run = run_codex_turns(codex, server.http_url, ["first", "second"], websockets=False, timeout=30.0)
        server.settle(5.0)
        threads = {exchange.request_headers.get("thread-id") for exchange in server.exchanges}
    assert run.outcomes == ("failed", "completed")
    assert "Bad request." in run.errors[0]
    assert len(server.exchanges) == 2 and len(threads) == 1
