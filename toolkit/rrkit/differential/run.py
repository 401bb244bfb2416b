"""One script, one transport, one client (Codex or the reference client) on a fresh fake server: the observation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..client import ClientOptions, Conversation, ModelClient, ModelClientError, Prompt, RetryPolicy
from ..drive import Assignment, ClientEnd, ClientUnderTest, ReferenceClient, ServerURLs
from ..protocol.calls import CallResult, stand_in
from ..protocol.ids import IdGenerator
from ..protocol.outcome import OutcomeKind
from ..protocol.request import Item
from ..script.models import Script
from ..server.logs import quiet_server_logs
from ..server.runner import FakeServer
from .appserver import run_codex_turns
from .codex import run_codex
from .observation import Attempt, Observation, WaitRanges, observe
from .settings import DEFAULT_BUDGETS, Budgets

PROMPT = Prompt(model="gpt-test", instructions="You are a differential test client.")
USER_INPUT = "say hi"
SETTLE_TIMEOUT = 5.0
REFERENCE_TIMEOUT = 300.0
"""Seconds the reference client's turns may take in a differential run (a stall costs its idle timeout)."""


def reference_options(budgets: Budgets, *, strict_streams: bool = False) -> ClientOptions:
    """The reference client configured as Codex's provider is: the same budgets, backoff and idle timeout;
    `strict_streams`, stricter than Codex (`ClientOptions.strict_streams`)."""
    policy = RetryPolicy(base_delay=0.2, jitter=0.1)
    if budgets.stream_max_retries is not None:
        policy = replace(policy, max_retries=budgets.stream_max_retries)
    if budgets.request_max_retries is not None:
        policy = replace(policy, request_max_retries=budgets.request_max_retries)
    return ClientOptions(
        retry=policy,
        idle_timeout=budgets.idle_timeout,
        connect_timeout=5.0,
        warmup_timeout=5.0,
        strict_streams=strict_streams,
    )


async def _tool(call: Item) -> CallResult:
    return stand_in(call, "ok")


async def reference_turn(
    base_url: str,
    *,
    websockets: bool,
    budgets: Budgets,
    asks: Mapping[str, Any] | None = None,
    action: str | None = None,
    strict_streams: bool = False,
) -> tuple[str, str]:
    """One session of the reference client, prewarmed over WebSocket as Codex is: ("completed"|"failed", the
    errors); `asks`: fields its requests carry (`{"background": True}`); `action` (a conformance scenario's): its
    one turn cancelled on its first output (`cancel`), or two turns with a compaction between them (`compact`) or
    kept in a conversation on the server (`conversation`); `strict_streams`: stricter than Codex."""
    turns = 2 if action in ("compact", "conversation") else 1
    outcomes, errors = await reference_turns(
        base_url, turns, websockets=websockets, budgets=budgets, asks=asks, action=action, strict_streams=strict_streams
    )
    failed = "failed" in outcomes
    return ("failed" if failed else "completed"), "; ".join(errors)


@dataclass(frozen=True)
class CodexClient:
    """The real Codex CLI as the client under test: `codex exec` one turn in a fresh CODEX_HOME configured for the
    assignment's server (with `turns`, that many turns of one `codex app-server` session, their outcomes joined by
    TURNS_SEPARATOR)."""

    binary: str
    websockets: bool
    budgets: Budgets = DEFAULT_BUDGETS
    turns: int | None = None

    def describe(self) -> str:
        return f"the Codex CLI ({self.binary})"

    async def run(self, assignment: Assignment, timeout: float) -> ClientEnd:
        return await asyncio.to_thread(self._run, assignment.urls.http_url, timeout)

    def _run(self, base_url: str, timeout: float) -> ClientEnd:
        if self.turns is None:
            run = run_codex(self.binary, base_url, websockets=self.websockets, budgets=self.budgets, timeout=timeout)
            outcome = "timed out" if run.timed_out else "completed" if run.returncode == 0 else "failed"
            return ClientEnd(outcome, f"exit status {run.returncode}", tuple(run.errors))
        prompts = [USER_INPUT] * self.turns
        session = run_codex_turns(
            self.binary, base_url, prompts, websockets=self.websockets, budgets=self.budgets, timeout=timeout
        )
        return ClientEnd(TURNS_SEPARATOR.join(session.outcomes), errors=tuple(session.errors))


def observe_codex(
    binary: str,
    script: Script,
    *,
    websockets: bool,
    turns: int | None = None,
    budgets: Budgets = DEFAULT_BUDGETS,
    ranges: WaitRanges | None = None,
    timeout: float = 30.0,
    unanswered: bool = False,
) -> Observation:
    """`codex exec` one turn against a fresh server playing `script` (`unanswered`: see `observe`); with `turns`,
    that many turns of one Codex session (`codex app-server`, one thread), the outcome their outcomes joined by
    TURNS_SEPARATOR."""
    client = CodexClient(binary, websockets, budgets, turns)
    return _observed(script, client, None, timeout, ranges or _ranges(budgets), unanswered=unanswered, turns=turns)


def observe_reference(
    script: Script,
    *,
    websockets: bool,
    turns: int | None = None,
    budgets: Budgets = DEFAULT_BUDGETS,
    ranges: WaitRanges | None = None,
    unanswered: bool = False,
) -> Observation:
    """The reference client's turn against a fresh server playing `script` (real waits, as Codex's); with `turns`,
    that many turns of one session, as `observe_codex`'s."""

    def session(urls: ServerURLs) -> Callable[[ReferenceClient], Awaitable[ClientEnd]]:
        async def turns_of(_: ReferenceClient) -> ClientEnd:
            outcomes, errors = await reference_turns(urls.http_url, turns or 1, websockets=websockets, budgets=budgets)
            return ClientEnd(TURNS_SEPARATOR.join(outcomes), errors=errors)

        return turns_of

    ranges = ranges or _ranges(budgets)
    return _observed(script, ReferenceClient(), session, REFERENCE_TIMEOUT, ranges, unanswered=unanswered, turns=turns)


def _observed(
    script: Script,
    client: ClientUnderTest,
    reference: Callable[[ServerURLs], Callable[[ReferenceClient], Awaitable[ClientEnd]]] | None,
    timeout: float,
    ranges: WaitRanges,
    *,
    unanswered: bool = False,
    turns: int | None = None,
) -> Observation:
    """What a fresh server playing `script` saw while `client` ran against it (its outcome, its errors); with
    `turns`, each turn after the first marked as one (`next_turns_marked`)."""
    with quiet_server_logs(), FakeServer(script, log_level="critical", ids=IdGenerator.counting()) as server:
        urls = ServerURLs(server.http_url, server.ws_url)
        assignment = Assignment(urls, {}, reference(urls) if reference else None, name="differential")
        end = asyncio.run(client.run(assignment, timeout))
        _settle(server)
        seen = observe(server.exchanges, server.connections, end.outcome, ranges, unanswered=unanswered)
        attempts = next_turns_marked(seen.attempts) if turns is not None else seen.attempts
        return Observation(attempts, seen.outcome, end.errors)


def _ranges(budgets: Budgets) -> WaitRanges:
    return WaitRanges(idle_timeout=budgets.idle_timeout, max_retries=budgets.max_retries)


def _settle(server: FakeServer) -> None:
    with contextlib.suppress(TimeoutError):  # an exchange left running (a stall) is observed as it is
        server.settle(SETTLE_TIMEOUT)


TURNS_SEPARATOR = " / "
"""Joins the outcomes of a multi-turn observation's turns: "completed / completed"."""
BETWEEN_TURNS = 0.05
"""The reference client's pause between two turns, as Codex's (the server sees 12-27 ms between a turn's last
response and the next turn's first request through `codex app-server`): what the server did in between (closing
the socket) has reached the client. Without it the reference client can send on a socket whose close it has not
read yet, and retries after backoff (6 runs in 20)."""


async def reference_turns(
    base_url: str,
    turns: int,
    *,
    websockets: bool,
    budgets: Budgets,
    asks: Mapping[str, Any] | None = None,
    action: str | None = None,
    strict_streams: bool = False,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`turns` turns of one reference-client session (one ModelClient, one Conversation), prewarmed once as
    Codex's session is: each turn's outcome, and the errors (`action`: see `reference_turn`)."""
    outcomes: list[str] = []
    errors: list[str] = []
    options = reference_options(budgets, strict_streams=strict_streams)
    async with ModelClient(base_url, supports_websockets=websockets, options=options) as client:
        prompt = replace(PROMPT, overrides={**PROMPT.overrides, **(asks or {})}) if asks else PROMPT
        try:
            kept = await client.create_conversation() if action == "conversation" else None
        except ModelClientError as error:
            return ("failed",), (str(error),)
        conversation = Conversation(client, prompt, conversation_id=kept)
        await conversation.warmup()
        for turn in range(turns):
            if turn:
                await asyncio.sleep(BETWEEN_TURNS)
            said = USER_INPUT if not turn else f"{USER_INPUT} again"  # a new message, never the same item twice
            try:
                if turn and action == "compact":
                    await conversation.compact()
                if action == "cancel":
                    await _cancelled_on_first_output(client, conversation, said)
                else:
                    await conversation.run_turn(said, _tool)
            except ModelClientError as error:
                outcomes.append("failed")
                errors.append(str(error))
            else:
                outcomes.append("completed")
    return tuple(outcomes), tuple(errors)


async def _cancelled_on_first_output(client: ModelClient, conversation: Conversation, said: str) -> None:
    """A turn its user stops once its first output arrives: the turn's stream is dropped, and its (background)
    response cancelled on the server, where it would otherwise run on."""
    first = asyncio.Event()
    turn = asyncio.create_task(conversation.run_turn(said, _tool, on_delta=lambda _: first.set()))
    output = asyncio.create_task(first.wait())
    await asyncio.wait({turn, output}, return_when=asyncio.FIRST_COMPLETED)
    output.cancel()
    if turn.done():
        turn.result()  # its error, if it failed
        raise ModelClientError("the turn ended before its first output", outcome=OutcomeKind.COMPLETED)
    turn.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    response_id = client.trace.entries[-1].response_id
    if response_id is None:
        raise ModelClientError("no response id to cancel", outcome=OutcomeKind.DISCONNECTED)
    await client.cancel(response_id)


def next_turns_marked(attempts: tuple[Attempt, ...]) -> tuple[Attempt, ...]:
    """The first attempt of each turn after the first waits "turn": the pause between two turns is the driver's,
    not a retry's. Turns are told apart by the turn id of the turn metadata (a prewarm has none)."""
    marked: list[Attempt] = []
    last_turn = ""
    for attempt in attempts:
        turn = attempt.turn_id or ""
        if turn and last_turn and turn != last_turn:
            attempt = replace(attempt, wait="turn")
        last_turn = turn or last_turn
        marked.append(attempt)
    return tuple(marked)
