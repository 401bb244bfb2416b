"""The observation model of the differential tests: waits named by range, delays an answer names, attempts."""

from __future__ import annotations

import httpx
import pytest

from rrkit.differential import observe
from rrkit.differential.codex import config_toml
from rrkit.differential.observation import WaitRanges
from rrkit.differential.settings import Budgets
from rrkit.script import Script, failed, reject, reply

from ..errortrap import Serve

RANGES = WaitRanges(idle_timeout=1.5)
NAMED = (1.0,)


@pytest.mark.parametrize(
    ("gap", "kind"),
    [
        (0.01, "none"),
        (0.2, "backoff"),
        (0.23, "backoff"),
        (0.29, "backoff"),  # the first step, a busy machine late (seen in CI)
        (0.42, "backoff"),
        (0.86, "backoff"),
        (1.02, "named"),
        (1.23, "named"),  # the named delay kept, the client late on a busy machine (seen in CI)
        (1.4, "named"),  # later still, inside the 1.6 s backoff step's range (seen beside two busy loops)
        (4.0, "named"),
        (0.87, "backoff"),  # sooner than the named delay: never taken for it
        (0.6, "backoff"),  # the 0.4 s step kept late beside two busy loops (seen in CI)
    ],
)
def test_a_wait_is_named_by_its_range(gap: float, kind: str) -> None:
    assert RANGES.classify(gap, named=NAMED) == kind


def test_a_wait_after_an_answer_that_named_no_delay_is_never_named() -> None:
    assert RANGES.classify(1.02) == "backoff"
    assert RANGES.classify(4.0) == "backoff"


def test_a_wait_longer_than_twice_the_longest_backoff_step_is_other() -> None:
    assert RANGES.classify(6.4) == "backoff"  # twice the fifth retry's 3.2 s step
    assert RANGES.classify(6.5) == "other(6.50s)"
    assert WaitRanges(max_retries=2).classify(0.9) == "other(0.90s)"


def test_a_wait_after_a_quiet_connection_as_long_as_the_idle_timeout_is_idle() -> None:
    assert RANGES.classify(0.2, quiet=1.5) == "idle"
    assert RANGES.classify(0.2, quiet=0.3) == "backoff"


def test_each_wait_is_judged_by_the_delay_the_answer_before_it_named(serve: Serve) -> None:
    script = Script(default=reply("ok")).add(reject(429, retry_after=2)).add(reject(503, retry_after_ms=1500))
    script.add(failed("rate_limit_exceeded", "Please try again in 28ms.")).add(reject(500))
    with serve.running(script) as server, httpx.Client(trust_env=False) as client:
        for _ in range(5):
            client.post(server.http_url + "/responses", json={"model": "m", "input": "hi", "stream": True})
        server.settle()
    exchanges = server.exchanges
    # each retry later than the delay its previous answer named (by 0.9 s, 0.9 s, 0.87 s); the last one after a
    # 500 that named none, a backoff step's wait
    for before, now, gap in zip(exchanges[:-1], exchanges[1:], (2.9, 2.4, 0.9, 0.2), strict=True):
        end = before.started_at + (before.events[-1].at if before.events else 0.0)
        now.started_at = end + gap
    seen = observe(exchanges, server.connections, "completed", RANGES)
    assert [attempt.wait for attempt in seen.attempts] == ["first", "named", "named", "named", "backoff"]


def test_codex_config_leaves_out_a_budget_that_is_not_set() -> None:
    text = config_toml("http://127.0.0.1:1/v1", websockets=True, budgets=Budgets(None, 2, 0.5))
    assert "stream_max_retries = 2" in text and "request_max_retries" not in text
    assert "stream_idle_timeout_ms = 500" in text and "supports_websockets = true" in text


def test_observe_lists_attempts_with_the_wait_before_each(serve: Serve) -> None:
    script = Script(default=reply("ok")).add(reject(503, "server_error", retry_after=1))
    with serve.running(script) as server, httpx.Client(trust_env=False) as client:
        body = {"model": "m", "input": "hi", "stream": True}
        client.post(server.http_url + "/responses", json=body)
        client.post(server.http_url + "/responses", json=body, headers={"session-id": "s", "x-codex-turn-state": "t"})
        server.settle()
    first, second = server.exchanges
    second.started_at = first.started_at + 0.2  # a backoff step's wait after a refusal, whatever the machine's load
    seen = observe(server.exchanges, server.connections, "completed", RANGES)
    assert seen.flow == ("http full -> refused 503", "<backoff> http full -> completed")
    assert seen.attempts[1].headers == frozenset({"session-id", "x-codex-turn-state"})
    assert seen.attempts[1].turn_state == "t" and seen.fallback is None


def test_a_gap_after_a_completed_response_is_the_clients_work_not_a_wait_until_half_a_second() -> None:
    """A tool output or the request after a warmup follows a completed response: a loaded machine stretches the
    client's work (seen: over 170 ms for Codex 0.171.0 beside another busy worker), which is still no wait."""
    assert RANGES.classify(0.3) == "backoff"  # after a failure: a retry that waited
    assert RANGES.classify(0.3, answered=True) == "none"
    assert RANGES.classify(0.6, answered=True) == "backoff"
