"""Playing a scenario to a client: a fresh fake server per scenario and transport, the client run against it
(rrkit's reference client, or any command), and what the server saw made into a `ConformRun`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

from ..differential.observation import WaitRanges, observe
from ..differential.run import reference_turn
from ..differential.settings import DEFAULT_BUDGETS, Budgets
from ..protocol.ids import IdGenerator
from ..server.logs import quiet_server_logs
from ..server.runner import FakeServer
from ..tools.replay import ServerURLs
from . import seen as seen_in
from .checks import ConformRun
from .scenario import Scenario

REFERENCE_BUDGETS = DEFAULT_BUDGETS
"""The reference client's settings here (and Codex's, under `rrkit.conform.codex_client`): Codex's default
budgets, and a stream idle timeout of one second."""
SETTLE = 5.0
"""Seconds the server gets, after the client is done, to record the outcome of what is still running."""


@dataclass(frozen=True)
class ClientEnd:
    """How the client said its run ended: `completed`, `failed` or `timed out`, with a line of detail."""

    outcome: str
    detail: str = ""


class ConformClient(Protocol):
    """The client under test: run once per scenario and transport against that scenario's server."""

    def describe(self) -> str: ...

    def run(self, urls: ServerURLs, scenario: Scenario, transport: str, timeout: float) -> ClientEnd: ...


@dataclass(frozen=True)
class ReferenceClient:
    """rrkit's reference client: one prewarmed turn (over WebSocket when the transport is `ws`)."""

    budgets: Budgets = REFERENCE_BUDGETS

    def describe(self) -> str:
        return "the reference client"

    def run(self, urls: ServerURLs, scenario: Scenario, transport: str, timeout: float) -> ClientEnd:
        async def turn() -> tuple[str, str]:
            session = reference_turn(
                urls.http_url,
                websockets=transport == "ws",
                budgets=self.budgets,
                asks=scenario.asks,
                action=scenario.action,
            )
            return await asyncio.wait_for(session, timeout)

        try:
            outcome, error = asyncio.run(turn())
        except TimeoutError:
            return ClientEnd("timed out", f"the turn did not end within {timeout:g} s")
        return ClientEnd(outcome, error)


@dataclass(frozen=True)
class CommandClient:
    """Any program, run with the server's URLs in its environment (OPENAI_BASE_URL, RRKIT_HTTP_URL, RRKIT_WS_URL),
    RRKIT_SCENARIO naming the scenario and RRKIT_TRANSPORT the transport to use (`http` or `ws`); exit status 0
    says the turn completed."""

    argv: Sequence[str]
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment for the command (beside this process's own and the server's URLs)."""

    def describe(self) -> str:
        return " ".join(self.argv)

    def run(self, urls: ServerURLs, scenario: Scenario, transport: str, timeout: float) -> ClientEnd:
        env = {**os.environ, **self.env, **client_environment(urls, scenario, transport)}
        try:
            done = subprocess.run(
                list(self.argv), env=env, cwd=self.cwd, capture_output=True, text=True, timeout=timeout
            )
        except FileNotFoundError:
            return ClientEnd("failed", f"no such command: {self.argv[0]!r}")
        except subprocess.TimeoutExpired:
            return ClientEnd("timed out", f"the command did not finish within {timeout:g} s")
        tail = " / ".join((done.stderr or done.stdout).strip().splitlines()[-2:])
        outcome = "completed" if done.returncode == 0 else "failed"
        return ClientEnd(outcome, f"exit status {done.returncode}" + (f": {tail}" if tail and done.returncode else ""))


def client_environment(urls: ServerURLs, scenario: Scenario, transport: str) -> dict[str, str]:
    """What a client is told of its run: the server's URLs, the scenario's name, the transport to use, the
    fields it is asked to put on its request (RRKIT_REQUEST, a JSON object; `{}` when none), and what it is asked
    to do beyond one turn (RRKIT_ACTION: `cancel`, `compact`, `conversation`; empty when nothing)."""
    return {
        **urls.environment(),
        "RRKIT_SCENARIO": scenario.name,
        "RRKIT_TRANSPORT": transport,
        "RRKIT_REQUEST": json.dumps(scenario.asks),
        "RRKIT_ACTION": scenario.action or "",
    }


@dataclass(frozen=True)
class FunctionClient:
    """A Python callable as the client: called with the environment a command would get (a dict: OPENAI_BASE_URL,
    RRKIT_WS_URL, RRKIT_TRANSPORT, ...); returning (anything but False) says the turn completed, raising or
    returning False that it failed. It runs in a thread of its own, which is left behind when it outlasts the
    timeout (Python cannot stop a thread)."""

    function: Callable[[dict[str, str]], object]

    def describe(self) -> str:
        return getattr(self.function, "__qualname__", repr(self.function))

    def run(self, urls: ServerURLs, scenario: Scenario, transport: str, timeout: float) -> ClientEnd:
        pool = ThreadPoolExecutor(1, thread_name_prefix=f"rrkit-conform-{scenario.name}")
        future = pool.submit(self.function, client_environment(urls, scenario, transport))
        pool.shutdown(wait=False)
        try:
            returned = future.result(timeout)
        except FutureTimeout:
            return ClientEnd("timed out", f"the function did not return within {timeout:g} s")
        except Exception as error:  # the client's own failure: its report of the turn
            return ClientEnd("failed", f"{type(error).__name__}: {error}")
        return ClientEnd("failed", "the function returned False") if returned is False else ClientEnd("completed")


def as_client(client: ConformClient | Sequence[str] | Callable[[dict[str, str]], object] | None) -> ConformClient:
    """The client `rrkit.conform.run` judges: None is the reference client, a list of strings a command, a plain
    callable a FunctionClient, and an object with `describe()` and `run(...)` itself."""
    if client is None:
        return ReferenceClient()
    if isinstance(client, (list, tuple)):
        if not client or not all(isinstance(part, str) for part in client):
            raise TypeError(f"a client command is a non-empty list of strings, not {client!r}")
        return CommandClient(list(client))
    if hasattr(client, "describe") and hasattr(client, "run"):
        return cast(ConformClient, client)
    if callable(client):
        return FunctionClient(client)
    raise TypeError(f"not a client: {client!r} (give a command list, a callable, or a ConformClient)")


def play(scenario: Scenario, transport: str, client: ConformClient, timeout: float) -> ConformRun:
    """Run `client` once against a fresh server playing `scenario`; what the server saw, as a ConformRun."""
    with quiet_server_logs(), FakeServer(scenario.script, log_level="critical", ids=IdGenerator.counting()) as server:
        end = client.run(ServerURLs(server.http_url, server.ws_url), scenario, transport, timeout)
        with contextlib.suppress(TimeoutError):  # a stream left stalled is judged as it is
            server.settle(SETTLE)
        exchanges, connections = list(server.exchanges), list(server.connections)
    ranges = WaitRanges(idle_timeout=REFERENCE_BUDGETS.idle_timeout, max_retries=REFERENCE_BUDGETS.max_retries)
    seen = observe(exchanges, connections, end.outcome, ranges)
    return ConformRun(
        scenario.name,
        transport,
        seen.attempts,
        end.outcome,
        calls_sent=seen_in.calls_sent(exchanges),
        outputs_sent=seen_in.outputs_sent(exchanges),
        detail=end.detail,
        compaction=seen_in.after_compaction(exchanges),
        repeated=seen_in.repeated_in_conversation(exchanges),
    )
