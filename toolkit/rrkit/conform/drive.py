"""Playing a scenario to the client under test (`rrkit.drive`): a fresh fake server per scenario and transport,
the client run against it, and what the server saw made into a `ConformRun`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import replace

from ..differential.observation import WaitRanges, observe
from ..differential.run import reference_turn
from ..differential.settings import DEFAULT_BUDGETS
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
from ..report.text import quoted
from ..server.logs import quiet_server_logs
from ..server.runner import FakeServer
from . import seen as seen_in
from .checks import ConformRun
from .scenario import Scenario

REFERENCE_BUDGETS = DEFAULT_BUDGETS
"""The reference client's settings here (and Codex's, under `rrkit.conform.codex_client`): Codex's default
budgets, and a stream idle timeout of one second."""
SETTLE = 5.0
"""Seconds the server gets, after the client is done, to record the outcome of what is still running."""


def client_environment(urls: ServerURLs, scenario: Scenario, transport: str) -> dict[str, str]:
    """What a client is told of its run: the server's URLs, the scenario's name, the transport to use, the
    fields it is asked to put on its request (RRKIT_REQUEST, a JSON object; `{}` when none), and what it is asked
    to do beyond one turn (RRKIT_ACTION: `cancel`, `compact`, `conversation`; empty when nothing)."""
    return {**urls.environment(), **_told(scenario, transport)}


def _told(scenario: Scenario, transport: str) -> dict[str, str]:
    return {
        "RRKIT_SCENARIO": scenario.name,
        "RRKIT_TRANSPORT": transport,
        "RRKIT_REQUEST": json.dumps(scenario.asks),
        "RRKIT_ACTION": scenario.action or "",
    }


def assignment(urls: ServerURLs, scenario: Scenario, transport: str) -> Assignment:
    """One run of the client on `scenario` over `transport`; the reference client plays one prewarmed turn (over
    WebSocket when the transport is `ws`) with Codex's default budgets and a one-second idle timeout."""

    async def turn(reference: ReferenceClient) -> ClientEnd:
        outcome, error = await reference_turn(
            urls.http_url,
            websockets=transport == "ws",
            budgets=REFERENCE_BUDGETS,
            asks=scenario.asks,
            action=scenario.action,
            strict_streams=reference.strict_streams,
        )
        return ClientEnd(outcome, error)

    return Assignment(urls, _told(scenario, transport), turn, name=scenario.name)


def play(scenario: Scenario, transport: str, client: ClientUnderTest, timeout: float) -> ConformRun:
    """Run `client` once against a fresh server playing `scenario`; what the server saw, as a ConformRun."""
    server = FakeServer(scenario.script, log_level="critical", ids=IdGenerator.counting())
    with answer_file() as answer, quiet_server_logs(), server:
        urls = ServerURLs(server.http_url, server.ws_url)
        told = assignment(urls, scenario, transport)
        told = replace(told, environment={**told.environment, ANSWER_ENV: str(answer)})
        end = asyncio.run(client.run(told, timeout))
        with contextlib.suppress(TimeoutError):  # a stream left stalled is judged as it is
            server.settle(SETTLE)
        exchanges, connections = list(server.exchanges), list(server.connections)
        said = written_answer(answer)
    ranges = WaitRanges(idle_timeout=REFERENCE_BUDGETS.idle_timeout, max_retries=REFERENCE_BUDGETS.max_retries)
    seen = observe(exchanges, connections, end.outcome, ranges)
    return ConformRun(
        scenario.name,
        transport,
        seen.attempts,
        end.outcome,
        calls_sent=seen_in.calls_sent(exchanges),
        outputs_sent=seen_in.outputs_sent(exchanges),
        called=seen_in.names_called(exchanges),
        declared=seen_in.tools_declared(exchanges),
        detail=quoted(end.detail),  # what the client printed last: quoted by its ends, as its answer is
        answer=said,
        compaction=seen_in.after_compaction(exchanges),
        repeated=seen_in.repeated_in_conversation(exchanges),
    )
