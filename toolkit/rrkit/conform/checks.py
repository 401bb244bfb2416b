"""The judge: each expectation of a scenario held against what the server saw of one client's run (pure
functions of the run, each returning whether it held and what was seen)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..differential.observation import Attempt
from ..protocol.routes import CANCEL, COMPACT, ROUTE_NAMES
from ..report.text import quoted
from .profile import Profile
from .scenario import CHECKS, Expectation, Scenario

NAMED_DELAY_SLACK = 0.05
"""A wait counts as the named delay from 95 % of it on (timers and clocks round; no client waits early on purpose)."""


CREATES = ("full", "incremental")
"""The kinds of attempt that ask for a new response at the user's turn (not a warmup, not a compaction)."""


@dataclass(frozen=True)
class AfterCompaction:
    """The first compaction the server answered (the `encrypted_content` of each compaction item it returned) and
    the first create after it: which of those items it carried unchanged, and the items from before the
    compaction that it still carried (`followed`: there was such a create)."""

    returned: tuple[str, ...]
    carried: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    followed: bool = False


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
    compaction: AfterCompaction | None = None
    repeated: tuple[str, ...] = ()
    """Items a create sent that the conversation it named already held."""
    called: tuple[str, ...] = ()
    """The names of the tools the server's responses called."""
    declared: tuple[str, ...] = ()
    """The names of the tools the client's requests declared."""
    answer: str | None = None
    """The answer the client wrote to $RRKIT_ANSWER (None: it wrote none)."""

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
    na: str = ""
    """Why the expectation could not apply to this client (empty: it applied): neither held nor broken."""


@dataclass(frozen=True)
class ScenarioResult:
    """A scenario over one transport: the run and its verdicts."""

    run: ConformRun
    verdicts: tuple[Verdict, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(verdict.held or verdict.na for verdict in self.verdicts)

    @property
    def not_applicable(self) -> str:
        """Why the scenario could not be judged for this client (empty: it was)."""
        return next((verdict.na for verdict in self.verdicts if verdict.na), "")


def _ended(run: ConformRun) -> str:
    return f"the client's run {run.outcome}" + (f" ({run.detail})" if run.detail else "")


def _outcome(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    return run.outcome == expectation.is_, _ended(run)


def _answer(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    """The turn completes, with the stream's text when the client says its text ($RRKIT_ANSWER)."""
    held, seen = run.outcome == "completed", _ended(run)
    if run.answer is None:
        return held, f"{seen}; it wrote no answer to $RRKIT_ANSWER, so its text was not judged"
    answered = quoted(repr(run.answer))  # a client may answer megabytes
    if run.answer != expectation.is_:
        return False, f"{seen}; it answered {answered}, the stream's text is {expectation.is_!r}"
    return held, f"{seen}; it answered {answered}"


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
        return False, "the server sent no call for the client to run (no request got that far)"
    missing = [call for call in run.calls_sent if call not in run.outputs_sent]
    if missing:
        answered = ", ".join(run.outputs_sent) or "none"
        return False, f"no answer to call {', '.join(missing)} (calls answered: {answered})"
    return True, f"answered call {', '.join(run.calls_sent)}"


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
    """The headers every request for the model carries (creates, upgrades, a background stream resumed or polled);
    a call that manages the resource (a cancel, a conversation made) is no model request and carries no turn."""
    wanted = set(expectation.headers or ())
    judged = [
        attempt
        for attempt in run.attempts
        if expectation.applies(attempt.transport) and attempt.kind not in ROUTE_NAMES
    ]
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
    creates = [attempt for attempt in run.attempts if attempt.kind in CREATES]
    broken = next((attempt for attempt in creates if attempt.outcome in ("dropped", "stalled")), None)
    if broken is None:
        return False, f"no create's stream broke, so nothing was to resume: {run.flow}"
    after = run.attempts[run.attempts.index(broken) + 1 :]
    resumes = [attempt for attempt in after if attempt.kind == "resume"]
    if any(attempt.kind in CREATES for attempt in after):
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
    creates = [attempt for attempt in run.attempts if attempt.kind in CREATES]
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


def _cancelled(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    """A background response the client stops is cancelled while it runs (`POST /v1/responses/{id}/cancel`, the
    id of the response it created), and neither resumed nor posted again after."""
    creates = [attempt for attempt in run.attempts if attempt.kind in CREATES]
    if len(creates) != 1:
        return False, f"{len(creates)} creates, where one background response was to be cancelled: {run.flow}"
    cancels = [index for index, attempt in enumerate(run.attempts) if attempt.kind == CANCEL]
    if not cancels:
        return False, f"the response was never cancelled, and runs on (billed) on the server: {run.flow}"
    cancel = run.attempts[cancels[0]]
    if cancel.target != creates[0].response_id:
        return False, f"cancelled {cancel.target}, where the response created was {creates[0].response_id}"
    if cancel.status is not None:
        return False, f"the cancel was refused ({cancel.status}: the response had ended, or is unknown): {run.flow}"
    after = [attempt for attempt in run.attempts[cancels[0] + 1 :] if attempt.kind in (*CREATES, "resume")]
    if after:
        return False, f"{after[0].kind} after the cancel: {run.flow}"
    return run.outcome == "completed", f"the client's run {run.outcome}: {run.flow}"


def _compacted(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    """After a compaction the client's next request starts from it: every compaction item it returned, unchanged,
    and nothing of what it replaced."""
    if not any(attempt.kind in ("compaction", COMPACT) for attempt in run.attempts):
        return False, f"the client never asked for a compaction: {run.flow}"
    after = run.compaction
    if after is None:
        return False, f"no compaction was answered: {run.flow}"
    if not after.followed:
        return False, f"no request after the compaction: the compacted history was never used: {run.flow}"
    missing = [content for content in after.returned if content not in after.carried]
    if missing:
        return False, (
            f"the request after the compaction did not carry {len(missing)} of the {len(after.returned)} compaction "
            "item(s) as they were returned (encrypted_content goes back byte for byte)"
        )
    if after.stale:
        return False, f"the request after the compaction still carried what it replaced: {', '.join(after.stale)}"
    return run.outcome == "completed", f"the client's run {run.outcome}: {run.flow}"


def _in_conversation(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    """Turns kept in a server conversation each name it, never with `previous_response_id`, and send only their
    new input: the conversation holds the rest."""
    creates = [attempt for attempt in run.requests if attempt.kind in CREATES]
    if len(creates) < 2:
        return False, f"{len(creates)} turn(s), where two were to be kept in one conversation: {run.flow}"
    unnamed = [attempt for attempt in creates if attempt.conversation is None]
    if unnamed:
        return False, f"{len(unnamed)} of {len(creates)} turn(s) named no conversation: {run.flow}"
    named = sorted({str(attempt.conversation) for attempt in creates})
    if len(named) > 1:
        return False, f"the turns named {len(named)} conversations ({', '.join(named)}), where one was to hold both"
    if any(attempt.previous_response_id for attempt in creates):
        return False, f"a turn named its conversation and a previous_response_id, which the API refuses: {run.flow}"
    if run.repeated:
        return False, f"sent again what the conversation already held: {', '.join(run.repeated)}"
    return run.outcome == "completed", f"the client's run {run.outcome}: {run.flow}"


def _flow(expectation: Expectation, run: ConformRun) -> tuple[bool, str]:
    seen = [str(attempt) for attempt in run.attempts]
    return seen == expectation.flow, run.flow


_JUDGES: dict[str, Callable[[Expectation, ConformRun], tuple[bool, str]]] = {
    "outcome": _outcome,
    "answer": _answer,
    "answered": _answered,
    "retries": _retries,
    "named_delay": _named_delay,
    "tool_output": _tool_output,
    "transport_after": _transport_after,
    "full_after_failure": _full_after_failure,
    "resumed": _resumed,
    "polled": _polled,
    "cancelled": _cancelled,
    "compacted": _compacted,
    "in_conversation": _in_conversation,
    "incremental_accepted": _incremental_accepted,
    "ends": _ends,
    "flow": _flow,
    "turn_states": _turn_states,
    "headers": _headers,
}
assert tuple(_JUDGES) == CHECKS, "every check kind a scenario may name has its judge"


def unobserved(run: ConformRun) -> str | None:
    """Why the server saw nothing of the run that the scenario is about (None: it saw the client at work): no
    request at all, or, over `ws`, no WebSocket ever tried. A verdict is never better than what was observed."""
    if not run.attempts:
        return "the server saw no request from the client, so nothing of the scenario was observed"
    if run.transport == "ws" and not any(attempt.transport == "ws" for attempt in run.attempts):
        return "the client never tried a WebSocket, and the scenario is about the ws transport"
    return None


def not_applicable(run: ConformRun) -> str | None:
    """Why the scenario cannot apply to this client (None: it can): the server called a tool the client never
    declared, and the client answered no call; a client without that tool cannot answer it."""
    if not run.calls_sent or run.outputs_sent:
        return None
    missing = [name for name in run.called if name not in run.declared]
    if not missing:
        return None
    declared = ", ".join(run.declared) or "none"
    return (
        f"the scenario calls the tool {', '.join(missing)}, which the client did not declare (its tools: "
        f"{declared}): a client without that tool cannot answer the call"
    )


def judge(scenario: Scenario, run: ConformRun, profile: Profile | None = None) -> ScenarioResult:
    """The scenario's musts, then the profile's rules for every scenario and for this one, held against the run
    (those for its transport); none holds when the server saw nothing of what the scenario is about
    (`unobserved`)."""
    chosen = [("must", expectation) for expectation in scenario.musts]
    if profile is not None:
        rules = [*profile.every, *profile.rules.get(scenario.name, [])]
        chosen += [(f"profile {profile.name}", rule) for rule in rules]
    verdicts = []
    missing, na = unobserved(run), not_applicable(run)
    for strength, expectation in chosen:
        if expectation.applies(run.transport):
            held, seen = _JUDGES[expectation.check](expectation, run)
            if held and missing is not None:
                held, seen = False, f"{seen}; but {missing}"
            verdict = Verdict(scenario.name, run.transport, expectation.label, held, seen, expectation.why, strength)
            verdicts.append(replace(verdict, held=False, na=na) if na else verdict)
    return ScenarioResult(run, tuple(verdicts))
