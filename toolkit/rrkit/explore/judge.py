"""The judge of one explored case: the client run once against a fake server playing the case's stream, and what it
did held against what the oracle says a correct client does (the two musts of exploration)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..differential.run import reference_turn
from ..differential.settings import Budgets
from ..drive import (
    ANSWER_ENV,
    Assignment,
    ClientEnd,
    ClientUnderTest,
    ReferenceClient,
    ServerURLs,
    answer_file,
    written_answer,
)
from ..protocol.ids import IdGenerator
from ..protocol.vocabulary import Transport
from ..report.text import quoted
from ..server.logs import quiet_server_logs
from ..server.runner import FakeServer
from .case import script_of
from .stream import Expected, Stream, Verdict

SETTLE = 5.0


@dataclass(frozen=True)
class Must:
    name: str
    why: str


ANSWERS = Must(
    "answers a whole stream",
    "a whole stream that ends with response.completed is the turn's answer: the client completes the turn with "
    "the response's text, whatever an event it does not know or the way the bytes arrive",
)
NO_ANSWER = Must(
    "never answers a broken stream",
    "a stream cut, ended early, broken (an event lost, repeated or out of place, another response's events, "
    "output unfinished at response.completed) or failed, or an error status, is no answer: the client reports an "
    "error, on its own, never completing the turn with it",
)
MUSTS = (ANSWERS, NO_ANSWER)
CRASHES = Must(
    "runs the case to a verdict",
    "an error raised inside rrkit while it makes, judges or serves a case (an operator, the oracle, the fake "
    "server) is no verdict on the client: it is that case's finding, and the run goes on (report it to rrkit)",
)


@dataclass(frozen=True)
class Run:
    """How the client said its run ended, and the answer it wrote (None: it wrote none)."""

    outcome: str  # completed, failed, timed out
    detail: str = ""
    answer: str | None = None


@dataclass(frozen=True)
class Broken:
    """A must the client broke on a case: which, why the stream is what it is, how the client behaved."""

    must: Must
    reason: str  # the oracle's: a rule's name, a break of the delivery, `valid`
    behaviour: str  # answered, failed (KeyError), timed out, wrong answer
    seen: str

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two broken cases one finding."""
        return self.must.name, self.reason, self.behaviour


_ERROR_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b")


def behaviour(run: Run) -> str:
    """The client's ending in a word or two: `answered`, `timed out`, `failed`, `failed (KeyError)`."""
    if run.outcome == "completed":
        return "answered"
    if run.outcome == "timed out":
        return "timed out"
    named = _ERROR_NAME.search(run.detail)
    return f"failed ({named.group(1)})" if named else "failed"


def crashed(raised: Exception) -> Broken:
    """A case that raised inside rrkit, as its finding (`CRASHES`)."""
    name = type(raised).__name__
    return Broken(CRASHES, "crash", f"crashed ({name})", f"rrkit raised {name}: {raised}")


def judge(expected: Expected, run: Run) -> Broken | None:
    """The must `run` breaks on a stream the oracle judged `expected` (None: it held, or nothing is required)."""
    said = f"the client's run {run.outcome}" + (f" ({quoted(run.detail)})" if run.detail else "")
    if expected.verdict is Verdict.ANSWER:
        if run.outcome != "completed":
            return Broken(ANSWERS, expected.why, behaviour(run), said)
        if run.answer is not None and run.answer != expected.text:
            seen = f"the client answered {quoted(repr(run.answer))}; the stream's answer is {expected.text!r}"
            return Broken(ANSWERS, expected.why, "wrong answer", seen)
        return None
    if expected.verdict is Verdict.NO_ANSWER and run.outcome != "failed":
        return Broken(NO_ANSWER, expected.why, behaviour(run), said)
    return None


def play(stream: Stream, transport: Transport, expected: Expected, client: ClientUnderTest, timeout: float) -> Run:
    """Run `client` once against a fresh fake server answering every request with `stream`."""
    script = script_of(stream, transport, expected)
    with answer_file() as answer:
        with (
            quiet_server_logs(),
            FakeServer(script, log_level="critical", ids=IdGenerator.counting()) as server,
        ):
            urls = ServerURLs(server.http_url, server.ws_url)
            told = {
                "RRKIT_SCENARIO": "explore",
                "RRKIT_TRANSPORT": transport,
                "RRKIT_REQUEST": "{}",
                "RRKIT_ACTION": "",
                ANSWER_ENV: str(answer),
            }
            assignment = Assignment(urls, told, _reference_turn(urls, transport), name="explore")
            end = asyncio.run(client.run(assignment, timeout))
            with contextlib.suppress(TimeoutError):
                server.settle(SETTLE)
        written = written_answer(answer)
    return Run(end.outcome, end.detail, written)


REFERENCE_BUDGETS = Budgets(request_max_retries=1, stream_max_retries=1, idle_timeout=1.0)
"""The reference client's settings here: one retry (every attempt gets the same stream), a one-second idle timeout."""


def _reference_turn(urls: ServerURLs, transport: Transport) -> Callable[[ReferenceClient], Awaitable[ClientEnd]]:
    async def turn(reference: ReferenceClient) -> ClientEnd:
        strict = reference.strict_streams  # stricter than Codex: `rrkit explore` finds nothing in it
        outcome, error = await reference_turn(
            urls.http_url, websockets=transport == "ws", budgets=REFERENCE_BUDGETS, strict_streams=strict
        )
        return ClientEnd(outcome, error)

    return turn
