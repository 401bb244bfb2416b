"""One script, one transport, one client (Codex or the reference client) on a fresh fake server: the observation."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

from ..client import ClientOptions, Conversation, ModelClient, ModelClientError, Prompt, RetryPolicy
from ..demo import quiet_server_logs
from ..protocol.ids import IdGenerator
from ..protocol.request import Item
from ..script.models import Script
from ..server.runner import FakeServer
from .codex import run_codex
from .observe import Observation, WaitRanges, named_delays, observe
from .settings import DEFAULT_BUDGETS, Budgets

PROMPT = Prompt(model="gpt-test", instructions="You are a differential test client.")
USER_INPUT = "say hi"
SETTLE_TIMEOUT = 5.0


def reference_options(budgets: Budgets) -> ClientOptions:
    """The reference client configured as Codex's provider is: the same budgets, backoff and idle timeout."""
    policy = RetryPolicy(base_delay=0.2, jitter=0.1)
    if budgets.stream_max_retries is not None:
        policy = replace(policy, max_retries=budgets.stream_max_retries)
    if budgets.request_max_retries is not None:
        policy = replace(policy, request_max_retries=budgets.request_max_retries)
    return ClientOptions(retry=policy, idle_timeout=budgets.idle_timeout, connect_timeout=5.0, warmup_timeout=5.0)


async def _tool(call: Item) -> str:
    return "ok"


async def reference_turn(base_url: str, *, websockets: bool, budgets: Budgets) -> tuple[str, str]:
    """One session of the reference client, prewarmed over WebSocket as Codex is: ("completed"|"failed", error)."""
    async with ModelClient(base_url, supports_websockets=websockets, options=reference_options(budgets)) as client:
        conversation = Conversation(client, PROMPT)
        await conversation.warmup()
        try:
            await conversation.run_turn(USER_INPUT, _tool)
        except ModelClientError as error:
            return "failed", str(error)
    return "completed", ""


def observe_codex(
    binary: str,
    script: Script,
    *,
    websockets: bool,
    budgets: Budgets = DEFAULT_BUDGETS,
    ranges: WaitRanges | None = None,
    timeout: float = 30.0,
) -> Observation:
    """`codex exec` one turn against a fresh server playing `script`."""
    with quiet_server_logs(), FakeServer(script, log_level="critical", ids=IdGenerator.counting()) as server:
        run = run_codex(binary, server.http_url, websockets=websockets, budgets=budgets, timeout=timeout)
        _settle(server)
        outcome = "timed out" if run.timed_out else "completed" if run.returncode == 0 else "failed"
        seen = observe(server.exchanges, server.connections, outcome, ranges or _ranges(budgets, script))
        return Observation(seen.attempts, seen.outcome, tuple(run.errors))


def observe_reference(
    script: Script, *, websockets: bool, budgets: Budgets = DEFAULT_BUDGETS, ranges: WaitRanges | None = None
) -> Observation:
    """The reference client's turn against a fresh server playing `script` (real waits, as Codex's)."""
    with quiet_server_logs(), FakeServer(script, log_level="critical", ids=IdGenerator.counting()) as server:
        outcome, error = asyncio.run(reference_turn(server.http_url, websockets=websockets, budgets=budgets))
        _settle(server)
        seen = observe(server.exchanges, server.connections, outcome, ranges or _ranges(budgets, script))
        return Observation(seen.attempts, seen.outcome, (error,) if error else ())


def _ranges(budgets: Budgets, script: Script) -> WaitRanges:
    return WaitRanges(named=named_delays(script), idle_timeout=budgets.idle_timeout)


def _settle(server: FakeServer) -> None:
    with contextlib.suppress(TimeoutError):  # an exchange left running (a stall) is observed as it is
        server.settle(SETTLE_TIMEOUT)
