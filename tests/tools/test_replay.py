"""`rrkit replay`: cassettes as checks of a client (the reference client, a broken variant of it, any command
such as an SDK script) and, with `--against`, of a server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import rrkit.client.errors
import rrkit.client.turn
from rrkit.cassette import Cassette, load_cassette
from rrkit.cli import main as cli
from rrkit.drive import ReferenceClient, ServerURLs
from rrkit.protocol.errors import Classification, ErrorKind
from rrkit.protocol.incremental import Decision
from rrkit.script.loader import load_script
from rrkit.tools.diff import Kind
from rrkit.tools.replay import ReplayResult, first_difference, replay_cassette, session_assignment, session_plan

from ..errortrap import Serve

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "cassettes"


def replayed(name: str, client: ReferenceClient | None = None) -> ReplayResult:
    return asyncio.run(replay_cassette(load_cassette(GOLDEN / name), client or ReferenceClient()))


def test_every_golden_cassette_replays_as_recorded_with_the_reference_client() -> None:
    result = CliRunner().invoke(cli, ["replay", str(GOLDEN)])
    assert result.exit_code == 0, result.output
    assert f"{len(list(GOLDEN.glob('*.json')))} of {len(list(GOLDEN.glob('*.json')))} behaved as recorded" in (
        result.output
    )


def test_session_plan_reads_transport_warmup_turns_and_tool_outputs_from_the_logical_requests() -> None:
    plan = session_plan(load_cassette(GOLDEN / "tool-loop.ws.json"))
    assert (plan.transport, plan.warmup, len(plan.turns)) == ("ws", True, 1)
    assert plan.prompt.model == "gpt-rrkit" and [tool["name"] for tool in plan.prompt.tools] == [
        "get_weather",
        "apply_patch",
    ]
    assert list(plan.tool_outputs.values()) == [
        {"type": "function_call_output", "call_id": "call_weather_1", "output": "sunny, 24 degrees"}
    ]
    assert plan.tool_output({"type": "function_call", "call_id": "call_weather_1"}) == {"output": "sunny, 24 degrees"}
    assert plan.tool_output({"type": "function_call", "call_id": "call_never_answered"}) == ""


def test_client_that_never_sends_incremental_requests_is_an_incrementality_regression(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rrkit.client.turn, "decide", lambda *args: Decision(None, "this client always sends it all"))
    result = replayed("tool-loop.ws.json")
    assert not result.ok
    first = result.report.differences[0]
    assert first.kind is Kind.INCREMENTALITY and first.a.exchange == 1
    assert first_difference(result).startswith("incrementality at exchange 1")


def test_client_that_retries_context_length_exceeded_sends_a_request_the_recording_never_had(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = rrkit.client.errors.classify_failure

    def retry_everything(code: str | None, message: str | None = None) -> Classification:
        if code == "context_length_exceeded":
            return Classification(ErrorKind.RETRYABLE, True, None)
        return real(code, message)

    monkeypatch.setattr(rrkit.client.errors, "classify_failure", retry_everything)
    result = replayed("failed-context-length.http.json")
    assert not result.ok
    kinds = {difference.kind for difference in result.report.differences}
    assert Kind.EXCHANGE_EXTRA in kinds, result.report.differences
    extra = next(d for d in result.report.differences if d.kind is Kind.EXCHANGE_EXTRA)
    assert extra.b.exchange == 1  # the retry: the second request, which the recording does not have


def test_client_that_skips_the_warmup_misses_the_first_recorded_exchange() -> None:
    result = replayed("text.ws.json", ReferenceClient(warmup=False))
    assert not result.ok
    first = result.report.differences[0]
    assert first.kind is Kind.EXCHANGE_MISSING and first.a.exchange == 0


def test_client_that_drops_the_turn_state_is_reported_on_the_request_header(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rrkit.cassette import cassette_from_capture
    from rrkit.client import ModelClient
    from rrkit.script import Match, Script, function_call, reply, text

    # A tool loop over HTTP whose answers carry a turn state: the second request of the turn sends it back.
    script = (
        Script()
        .add(reply(function_call("get_weather", {"city": "Paris"})).with_turn_state("ts-http-1"))
        .add(reply(text("Sunny.")).with_turn_state("ts-http-1"), when=Match(last_input_type="function_call_output"))
    )

    async def record() -> Cassette:
        async with serve.running(script) as server:
            plan = session_plan(load_cassette(GOLDEN / "tool-loop.http.json"))
            urls = ServerURLs(server.http_url, server.ws_url)
            await ReferenceClient(model_client=ModelClient).run(session_assignment(urls, plan), timeout=60)
            await server.settle_async()
            return cassette_from_capture(server.exchanges, server.connections)

    cassette = asyncio.run(record())
    assert cassette.exchanges[1].request_headers["x-codex-turn-state"] == "ts-http-1"
    monkeypatch.setattr(rrkit.client.turn.Turn, "_capture_turn_state", lambda self, headers: None)
    result = asyncio.run(replay_cassette(cassette, ReferenceClient()))
    assert not result.ok
    first = result.report.differences[0]
    assert first.kind is Kind.HEADERS and "x-codex-turn-state" in first.path, result.report.differences
    assert first.a.exchange == 1


SDK_CLIENT = """\
import openai  # the official SDK reads the server's URL from OPENAI_BASE_URL (and the key from OPENAI_API_KEY)
ids = dict.fromkeys(["session-id", "thread-id", "x-client-request-id"], "rrkit-demo") | {"originator": "rrkit"}
turn = '{"turn_id":"2bd3d0bf-f870-5f50-8baf-17038ffa9f5d","request_kind":"turn"}'  # the demo's first turn
headers = {**ids, "x-codex-window-id": "rrkit-demo:0", "x-codex-turn-metadata": turn}  # Codex 0.169's identity
client = openai.OpenAI(max_retries=0, default_headers=headers)
city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
tools = [{"type": "function", "name": "get_weather", "description": "Current weather in a city.", "parameters": city},
         {"type": "custom", "name": "apply_patch", "description": "Apply a patch to the workspace."}]
user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is the weather in Paris?"}]}
ask = dict(model="gpt-rrkit", instructions="You are the rrkit demo client. Use the tools when they help.", input=[user])
stream = client.responses.create(**ask, tools=tools, tool_choice="auto", parallel_tool_calls=False, reasoning=None,
                                 store=False, stream=True, include=[], prompt_cache_key="rrkit-demo")
print("".join(event.delta for event in stream if event.type == "response.output_text.delta"))
"""
"""The request the reference client sent when it recorded cassettes/text.http.json, made with the SDK."""


def test_a_short_sdk_client_replays_the_golden_cassette_from_openai_base_url_alone(tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(SDK_CLIENT)
    assert len(SDK_CLIENT.splitlines()) <= 13

    def replay_with_client(*options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "rrkit", "replay", *options, str(GOLDEN / "text.http.json"), "--"]
        return subprocess.run([*command, sys.executable, str(client)], capture_output=True, text=True, timeout=120)

    done = replay_with_client()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 of 1 behaved as recorded" in done.stdout
    client.write_text(SDK_CLIENT.replace("What is the weather", "What was the weather"))
    changed = replay_with_client("--json")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    written = json.loads(changed.stdout)
    assert written["tool"] == "replay" and written["ok"] is False and written["counts"]["failed"] == 1
    (result,) = written["detail"]["replays"]
    first = result["report"]["differences"][0]
    assert (first["kind"], first["a"]["exchange"], first["path"].split("[")[0]) == ("content", 0, "input")


def test_against_the_server_scripted_by_the_same_fixture_answers_as_recorded(serve: Serve) -> None:
    with serve.running(load_script(ROOT / "fixtures" / "tool-loop.yaml")) as server:
        result = CliRunner().invoke(cli, ["replay", "--against", server.http_url, str(GOLDEN / "tool-loop.ws.json")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.json")), ids=lambda path: path.name)
def test_every_golden_cassette_against_its_fixture_server_answers_as_recorded(serve: Serve, path: Path) -> None:
    from rrkit.tools.replay import replay_against

    async def check() -> ReplayResult:
        fixture = ROOT / "fixtures" / f"{path.name.split('.')[0]}.yaml"
        async with serve.running(load_script(fixture)) as server:
            return await replay_against(server.http_url, load_cassette(path), idle_timeout=10)

    result = asyncio.run(check())
    assert result.ok, [difference.to_dict() for difference in result.report.differences]


def test_against_a_server_scripted_differently_names_the_event(serve: Serve) -> None:
    with serve.running(load_script(ROOT / "fixtures" / "text.yaml")) as server:
        cassette = str(GOLDEN / "tool-loop.http.json")
        result = CliRunner().invoke(cli, ["replay", "--json", "--against", server.http_url, cassette])
    assert result.exit_code == 1, result.output
    (report,) = json.loads(result.stdout)["detail"]["replays"]
    events = [d for d in report["report"]["differences"] if d["kind"] in ("events", "event_field")]
    assert events and events[0]["a"]["exchange"] == 0 and events[0]["a"]["event"] is not None


def test_replay_exit_status_is_2_for_a_missing_or_invalid_cassette_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    result = CliRunner().invoke(cli, ["replay", str(missing)])
    assert result.exit_code == 2 and str(missing) in result.output
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = CliRunner().invoke(cli, ["replay", str(broken)])
    assert result.exit_code == 2 and str(broken) in result.output
    result = CliRunner().invoke(cli, ["replay", str(GOLDEN / "text.http.json"), "--"])
    assert result.exit_code == 2 and "nothing after `--`" in result.output
