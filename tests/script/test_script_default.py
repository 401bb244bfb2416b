"""The default script played without its models (what a plain `rrkit serve` answers) is the default script played
as a script: the same plans, steer answers, handshakes and reports, over both transports."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from rrkit.protocol.ids import IdGenerator
from rrkit.protocol.plan import ResponsePlan
from rrkit.script import RequestView, default_script
from rrkit.script.select import ScriptState

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello there"}]}
REQUESTS: list[dict[str, Any]] = [
    {"model": "m", "input": "hi", "stream": True},
    {"model": "gpt-x", "input": [USER, USER], "instructions": "Be brief.", "tools": [{"type": "function"}]},
    {"model": "m", "input": [USER], "generate": False},
    {"model": "m", "input": [USER], "previous_response_id": "resp_1"},
    {"model": "m"},
    {"model": "m", "input": [USER, {"type": "compaction_trigger"}]},  # Codex's remote compaction (v2)
]


def _planned(plan: ResponsePlan) -> dict[str, Any]:
    async def runs() -> list[tuple[Any, Any, float]]:
        return [(event.event, event.wire, event.delay) async for run in plan.events for event in run]

    fields = {field.name: getattr(plan, field.name) for field in dataclasses.fields(plan)}
    return {**fields, "events": asyncio.run(runs())}


def _answer(source: ScriptState, transport: Any, wire: dict[str, Any]) -> dict[str, Any]:
    view = RequestView(transport, {}, wire, wire, ids=IdGenerator.counting())
    plan = asyncio.run(source.select(view))
    assert isinstance(plan, ResponsePlan)
    return _planned(plan)


@pytest.mark.parametrize("transport", ["http", "ws"])
@pytest.mark.parametrize("wire", REQUESTS)
def test_the_default_reply_made_without_the_models_is_the_default_scripts_reply(
    transport: str, wire: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("time.time", lambda: 1_700_000_000.0)
    plain, scripted = ScriptState(), ScriptState(default_script())
    assert _answer(plain, transport, wire) == _answer(scripted, transport, wire)
    assert plain._script is None  # answered without building the script


def test_the_default_script_without_its_models_steers_greets_and_reports_as_the_script_does() -> None:
    plain, scripted = ScriptState(), ScriptState(default_script())
    frame = {"type": "response.steer", "response_id": "resp_1", "input": [USER]}
    for source in (plain, scripted):
        assert asyncio.run(source.select_handshake({}, connection_id=1)) is None
        assert source.unused() == []
    answers = [
        asyncio.run(source.steer(frame, connection_id=1, ids=IdGenerator.counting())) for source in (plain, scripted)
    ]
    assert answers[0] == answers[1] and answers[0]
    assert plain._script is None
    assert plain.script == scripted.script  # built when asked for, as a script
