"""The judge: each expectation of a scenario held against what the server saw of one client's run (pure
functions of the run, each returning whether it held and what was seen)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..differential.observation import Attempt
from .profile import Profile
from .scenario import CHECKS, Expectation, Scenario

NAMED_DELAY_SLACK = 0.05
"""A wait counts as the named delay from 95 % of it on (timers and clocks round; no client waits early on purpose)."""


@dataclass(frozen=True)
class ConformRun:
    """One client's run of one scenario over one transport, as the server saw it: the attempts (with the wait
    before each), how the client said it ended (`completed`, `failed`, `timed out`), the function calls the
    server sent, and the `call_id`s of the tool outputs the client's requests carried afterwards."""

    scenario: str
    transport: str
    attempts: tuple[Attempt, ...]
    outcome: str
    calls_sent: tuple[str, ...] = ()
    outputs_sent: tuple[str, ...] = ()
    detail: str = ""

    @property
    def requests(self) -> tuple[Attempt, ...]:
        """The attempts at the user's turn: every request but a warmup, refused upgrades included."""
        return tuple(attempt for attempt in self.attempts if attempt.kind != "warmup")

    @property
    def flow(self) -> str:
        return ", ".join(str(attempt) for attempt in self.attempts) or "no request"


@dataclass(frozen=True)
class Verdict:
    """One expectation judged: held or not, what was seen, and what a correct client does (`why`)."""

    scenario: str
    transport: str
    expectation: str
    held: bool
    seen: str
    why: str
    strength: str = "must"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "transport": self.transport,
            "expectation": self.expectation,
            "strength": self.strength,
            "held": self.held,
            "seen": self.seen,
            "why": self.why,
        }


@dataclass(frozen=True)
class ScenarioResult:
    """A scenario over one transport: the run and its verdicts."""

    run: ConformRun
    verdicts: tuple[Verdict, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(verdict.held for verdict in self.verdicts)


def _outcome(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    return run.outcome == expectation.is_, f"the client's run {run.outcome}" + (
        f" ({run.detail})" if run.detail else ""
    )


def _answered(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    last = run.requests[-1].outcome if run.requests else "no request"
    if run.outcome != "completed":
        return True, f"the client's run {run.outcome}; the last response: {last}"
    return last == "completed", f"the client's run completed; the last response: {last}"


def _retries(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    retries = max(0, len(run.requests) - 1)
    held = (expectation.at_least is None or retries >= expectation.at_least) and (
        expectation.at_most is None or retries <= expectation.at_most
    )
    return held, f"{retries} retr{'y' if retries == 1 else 'ies'}: {run.flow}"


def _named_delay(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    assert expectation.seconds is not None  # the scenario's loader requires it
    if len(run.requests) < 2:
        return True, "no retry"
    gap = run.requests[1].gap or 0.0
    return gap >= expectation.seconds * (1 - NAMED_DELAY_SLACK), f"waited {gap:.2f} s before the retry"


def _tool_output(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    if not run.calls_sent:
        return False, "the server sent no function call (no request got that far)"
    missing = [call for call in run.calls_sent if call not in run.outputs_sent]
    if missing:
        answered = ", ".join(run.outputs_sent) or "none"
        return False, f"no function_call_output for call_id {', '.join(missing)} (call_ids answered: {answered})"
    return True, f"answered call_id {', '.join(run.calls_sent)}"


def _transport_after(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    requests = run.requests
    failed = next((index for index, attempt in enumerate(requests) if attempt.outcome != "completed"), None)
    if failed is None or failed + 1 >= len(requests):
        return False, f"no request after the refusal: {run.flow}"
    after = requests[failed + 1].transport
    return after == expectation.is_, f"the request after the refusal went over {after}"


def _full_after_failure(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    # a failed warmup counts: it leaves no response to continue from either
    after = [now for before, now in itertools.pairwise(run.attempts) if before.outcome != "completed"]
    wrong = [attempt for attempt in after if attempt.kind == "incremental"]
    if wrong:
        return False, f"an incremental request after a failed one: {run.flow}"
    return True, f"{len(after)} request(s) after a failure, all full" if after else "no request after a failure"


def _incremental_accepted(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    incremental = [attempt for attempt in run.requests if attempt.kind == "incremental"]
    refused = [attempt for attempt in incremental if attempt.outcome == "refused"]
    if refused:
        return False, f"{len(refused)} of {len(incremental)} incremental request(s) refused: {run.flow}"
    return True, f"{len(incremental)} incremental request(s), each answered"


def _ends(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    if run.outcome == "timed out":
        return False, f"the client was stopped: {run.detail or 'it did not end'}; {run.flow}"
    return True, f"the client's run {run.outcome} on its own"


def _turn_states(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    seen = [attempt.turn_state for attempt in run.attempts]
    shown = ", ".join(f"{attempt.transport} {attempt.kind}: {attempt.turn_state or '-'}" for attempt in run.attempts)
    return seen == expectation.turn_states, shown or "no request"


def _headers(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    wanted = set(expectation.headers or ())
    judged = [attempt for attempt in run.attempts if expectation.applies(attempt.transport)]
    short = [(attempt, sorted(wanted - attempt.headers)) for attempt in judged if not wanted <= attempt.headers]
    if short:
        attempt, missing = short[0]
        return (
            False,
            f"{len(short)} of {len(judged)} attempt(s) without some; the first, {attempt}: no {', '.join(missing)}",
        )
    return True, f"all {len(judged)} attempt(s) carry them"


def _resumed(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    """A background response whose stream broke is resumed from the last event the client got (`starting_after`
    = the last sequence number the server sent on the broken stream: each event once), never posted again."""
    creates = [attempt for attempt in run.attempts if attempt.kind in ("full", "incremental")]
    broken = next((attempt for attempt in creates if attempt.outcome in ("dropped", "stalled")), None)
    if broken is None:
        return False, f"no create's stream broke, so nothing was to resume: {run.flow}"
    after = run.attempts[run.attempts.index(broken) + 1 :]
    resumes = [attempt for attempt in after if attempt.kind == "resume"]
    if any(attempt.kind in ("full", "incremental") for attempt in after):
        return False, f"the request was posted again instead of resumed: {run.flow}"
    if not resumes:
        return False, f"the broken stream was never resumed: {run.flow}"
    first = resumes[0]
    if first.starting_after != broken.last_sent:
        lost = "repeats" if (first.starting_after or -1) < (broken.last_sent or -1) else "skips"
        seen = f"resumed after {first.starting_after}, where the last event sent was {broken.last_sent} ({lost} events)"
        return False, f"{seen}: {run.flow}"
    return run.outcome == "completed", f"the client's run {run.outcome}: {run.flow}"


def _polled(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    """A background response is polled (`GET /v1/responses/{id}`) with a wait between two polls, until the first
    poll that sees it ended, and never posted again."""
    creates = [attempt for attempt in run.attempts if attempt.kind in ("full", "incremental")]
    polls = [attempt for attempt in run.attempts if attempt.kind == "poll"]
    if len(creates) != 1:
        return False, f"{len(creates)} creates, where one background response was to be polled: {run.flow}"
    if not polls:
        return False, f"the background response was never polled: {run.flow}"
    ended = next(
        (index for index, poll in enumerate(polls) if poll.outcome in ("completed", "failed", "incomplete")), None
    )
    if ended is None:
        return False, f"no poll saw the response end: {run.flow}"
    if ended != len(polls) - 1:
        return False, f"polled {len(polls) - 1 - ended} more time(s) after a poll saw the response end: {run.flow}"
    hot = [index for index, poll in enumerate(polls) if index and poll.wait == "none"]
    if hot:
        return False, f"polled again with no wait between two polls ({len(hot)} time(s)): {run.flow}"
    return run.outcome == "completed", f"the client's run {run.outcome}: {run.flow}"


def _flow(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    seen = [str(attempt) for attempt in run.attempts]
    return seen == expectation.flow, run.flow


_JUDGES: dict[str, Callable[[Expectation, ConformRun], tuple[bool, str]]] = {
    "outcome": _outcome,
    "answered": _answered,
    "retries": _retries,
    "named_delay": _named_delay,
    "tool_output": _tool_output,
    "transport_after": _transport_after,
    "full_after_failure": _full_after_failure,
    "resumed": _resumed,
    "polled": _polled,
    "incremental_accepted": _incremental_accepted,
    "ends": _ends,
    "flow": _flow,
    "turn_states": _turn_states,
    "headers": _headers,
}
assert tuple(_JUDGES) == CHECKS, "every check kind a scenario may name has its judge"


def judge(scenario: Scenario, run: ConformRun, profile: Profile | None = None) -> ScenarioResult:
    """The scenario's musts, then the profile's rules for every scenario and for this one, held against the run
    (those for its transport)."""
    chosen = [("must", expectation) for expectation in scenario.musts]
    if profile is not None:
        rules = [*profile.every, *profile.rules.get(scenario.name, [])]
        chosen += [(f"profile {profile.name}", rule) for rule in rules]
    verdicts = []
    for strength, expectation in chosen:
        if expectation.applies(run.transport):
            held, seen = _JUDGES[expectation.check](expectation, run)
            verdicts.append(
                Verdict(scenario.name, run.transport, expectation.label, held, seen, expectation.why, strength)
            )
    return ScenarioResult(run, tuple(verdicts))
