"""Record the reference client's session, save, load, replay it (`rrkit serve --cassette` and in-process):
the client sees the same events in the same order with the same outcomes, and sends the same requests."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rrkit.cassette import CassetteSource, cassette_from_capture, load_cassette, save_cassette
from rrkit.client import Trace
from rrkit.protocol import OutcomeKind

from ..errortrap import Serve
from .client_session import request_kinds, run_session, seen, session_script

TRANSPORTS = ("ws", "http")


@dataclass
class Recorded:
    path: Path
    trace: Trace


@pytest.fixture(params=TRANSPORTS)
async def recorded(request: pytest.FixtureRequest, serve: Serve, tmp_path: Path) -> AsyncIterator[Recorded]:
    transport: str = request.param
    async with serve.running(session_script()) as server:
        trace = await run_session(server.http_url, transport)
        await server.settle_async()
        cassette = cassette_from_capture(server.exchanges, server.connections, name=f"session-{transport}")
    yield Recorded(save_cassette(cassette, tmp_path / "session.json"), trace)


def transport_of(recorded: Recorded) -> str:
    return recorded.trace.entries[0].transport


def assert_same_session(replayed: Trace, recorded: Trace) -> None:
    assert request_kinds(replayed) == request_kinds(recorded)
    assert replayed.outcomes() == recorded.outcomes()
    assert seen(replayed) == seen(recorded)


def test_recorded_client_session_has_warmup_incremental_tool_loop_drop_and_retry(recorded: Recorded) -> None:
    cassette = load_cassette(recorded.path)
    kinds = [exchange.outcome.kind if exchange.outcome else None for exchange in cassette.exchanges]
    assert (
        kinds.count(OutcomeKind.DROPPED) == 1 and kinds[kinds.index(OutcomeKind.DROPPED) + 1] is OutcomeKind.COMPLETED
    )
    last_inputs = [(exchange.logical_request or {}).get("input") or [{}] for exchange in cassette.exchanges]
    assert "function_call_output" in [items[-1].get("type") for items in last_inputs]  # the tool loop
    if transport_of(recorded) == "ws":
        assert request_kinds(recorded.trace) == [
            "ws warmup",
            "ws incremental",  # the first real request, on the warmup's baseline
            "ws incremental",  # the tool output
            "ws incremental",  # turn 2, cut mid-stream
            "ws full",  # its retry, on a new socket
            "ws incremental",  # turn 3
        ]
        assert len(cassette.connections) == 2


async def test_in_process_replay_gives_the_reference_client_the_same_events_outcomes_and_requests(
    serve: Serve, recorded: Recorded
) -> None:
    async with serve.running(source=CassetteSource(load_cassette(recorded.path))) as replay:
        replayed = await run_session(replay.http_url, transport_of(recorded))
        await replay.settle_async()
        assert all(exchange.replayed for exchange in replay.exchanges)
    assert_same_session(replayed, recorded.trace)


async def test_rrkit_serve_cassette_replays_the_same_session_to_the_reference_client(recorded: Recorded) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", "serve", "--cassette", str(recorded.path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = await asyncio.to_thread(read_base_url, process)
        assert base_url.startswith("http://127.0.0.1:"), base_url
        replayed = await run_session(base_url, transport_of(recorded))
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert_same_session(replayed, recorded.trace)


def read_base_url(process: subprocess.Popen[Any]) -> str:
    assert process.stdout is not None
    for line in process.stdout:
        if match := re.search(r"HTTP base URL:\s+(\S+)", line):
            return match.group(1)
    assert process.stderr is not None
    return "rrkit serve exited without a base URL: " + process.stderr.read()
