"""Record a session, save it, load it, replay it: the client sees the same events and outcomes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from rrkit.cassette import cassette_from_capture, load_cassette, save_cassette
from rrkit.cassette.normalize import Normalizer
from rrkit.cassette.replay import CassetteSource
from rrkit.protocol import OutcomeKind
from rrkit.protocol.ids import PREFIXES, IdGenerator
from rrkit.script import Match, Script, function_call, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

CONTEXT = [{"role": "user", "content": "You are a weather bot."}]
TOOLS: list[Any] = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]


def session_script() -> Script:
    over_ws, over_http = Match(transport="ws"), Match(transport="http")
    return (
        Script()
        .add(reply(function_call("get_weather", {"city": "Paris"}, call_id="call_w1", chunks=2)), when=over_ws)
        .add(reply(text("Sunny in Paris.", chunks=3)), when=Match(last_input_type="function_call_output"))
        .add(reply(text("Hello over HTTP.", chunks=4)).drop_after(3), when=over_http)
        .add(reply(text("Hello over HTTP.", chunks=4)), when=over_http)
    )


def collect(stream: Iterator[Any]) -> list[dict[str, Any]]:
    events = []
    for event in stream:
        events.append(event.model_dump(mode="json", exclude_none=True))
        if event.type in ("response.completed", "response.failed", "response.incomplete", "error"):
            break
    return events


def sdk_session(base_url: str) -> list[Any]:
    """What the official SDK sees in a session: per request, its events or the error class it raised."""
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    seen: list[Any] = []
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-test", input=CONTEXT, tools=TOOLS, generate=False)
        warmup = collect(iter(connection))
        seen.append(warmup)
        question = {"role": "user", "content": "Weather in Paris?"}
        connection.response.create(
            model="gpt-test", input=[question], tools=TOOLS, previous_response_id=warmup[-1]["response"]["id"]
        )
        call = collect(iter(connection))
        seen.append(call)
        output = {"type": "function_call_output", "call_id": "call_w1", "output": "sunny"}
        connection.response.create(
            model="gpt-test", input=[output], tools=TOOLS, previous_response_id=call[-1]["response"]["id"]
        )
        seen.append(collect(iter(connection)))
    for _attempt in range(2):
        try:
            seen.append(collect(iter(client.responses.create(model="gpt-test", input="hi", stream=True))))
        except openai.APIConnectionError as error:
            seen.append(type(error).__name__)
    return seen


def normalized(session: list[Any]) -> list[Any]:
    n = Normalizer()
    return [n.events(entry) if isinstance(entry, list) else entry for entry in session]


@pytest.fixture
def recorded(serve: Serve, tmp_path: Path) -> tuple[Path, list[Any]]:
    with serve.running(session_script()) as server:
        seen = sdk_session(server.http_url)
        server.settle()
        cassette = cassette_from_capture(server.exchanges, server.connections, name="session")
    return save_cassette(cassette, tmp_path / "session.json"), seen


def test_recorded_session_has_warmup_incremental_tool_loop_and_drop(recorded: tuple[Path, list[Any]]) -> None:
    path, seen = recorded
    cassette = load_cassette(path)
    kinds = [exchange.outcome.kind if exchange.outcome else None for exchange in cassette.exchanges]
    assert kinds == [OutcomeKind.COMPLETED] * 3 + [OutcomeKind.DROPPED, OutcomeKind.COMPLETED]
    warmup, call, answer = cassette.exchanges[:3]
    assert warmup.wire_request is not None and warmup.wire_request["generate"] is False
    assert call.incremental and answer.incremental
    assert answer.logical_request is not None
    assert [item.get("type", "message") for item in answer.logical_request["input"]] == [
        "message",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert seen[3] == "APIConnectionError"


def test_replay_gives_the_sdk_the_same_events_and_outcomes(serve: Serve, recorded: tuple[Path, list[Any]]) -> None:
    path, seen = recorded
    with serve.running(source=CassetteSource(load_cassette(path))) as replay:
        replayed = sdk_session(replay.http_url)
        replay.settle()
        assert all(exchange.replayed for exchange in replay.exchanges)
    assert normalized(replayed) == normalized(seen)


def test_replay_reissues_response_ids_and_resolves_them_within_the_connection(
    serve: Serve,
    recorded: tuple[Path, list[Any]],
) -> None:
    path, seen = recorded
    with serve.running(source=CassetteSource(load_cassette(path))) as replay:
        replayed = sdk_session(replay.http_url)
    recorded_ids = {entry[-1]["response"]["id"] for entry in seen[:3]}
    replayed_ids = {entry[-1]["response"]["id"] for entry in replayed[:3]}
    assert len(replayed_ids) == 3 and not recorded_ids & replayed_ids


def test_rrkit_serve_cassette_replays_to_the_sdk(recorded: tuple[Path, list[Any]]) -> None:
    path, seen = recorded
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", "serve", "--cassette", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = ""
        for line in process.stdout:
            if match := re.search(r"HTTP base URL:\s+(\S+)", line):
                base_url = match.group(1)
                break
        assert base_url.startswith("http://127.0.0.1:")
        assert normalized(sdk_session(base_url)) == normalized(seen)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_unmatched_request_in_none_mode_reports_the_closest_recording(
    serve: Serve, recorded: tuple[Path, list[Any]]
) -> None:
    path, _ = recorded
    with serve.running(source=CassetteSource(load_cassette(path))) as replay:
        response = httpx.post(
            replay.http_url + "/responses", json={"model": "gpt-test", "input": "bye", "stream": True}
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "rrkit_no_matching_reply"
    message = error["message"]
    assert "no recorded exchange matches" in message
    assert "matchers passed: model, stream; failed: input" in message
    assert 'Value of input changed from "hi" to "bye"' in message
    assert "new_episodes" in message


def test_matching_ignores_volatile_fields_and_replays_the_recorded_drop(
    serve: Serve, recorded: tuple[Path, list[Any]]
) -> None:
    path, _ = recorded
    body = {
        "model": "gpt-test",
        "input": "hi",
        "stream": True,
        "prompt_cache_key": "other",
        "client_metadata": {"a": 1},
    }
    with serve.running(source=CassetteSource(load_cassette(path))) as replay:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(replay.http_url + "/responses", json=body)
        second = httpx.post(replay.http_url + "/responses", json=body)
        replay.settle()
        kinds = [exchange.outcome.kind for exchange in replay.exchanges if exchange.outcome]
    assert second.status_code == 200 and "response.completed" in second.text
    assert kinds == [OutcomeKind.DROPPED, OutcomeKind.COMPLETED]


def test_websocket_error_frame_headers_are_recorded_and_replayed(serve: Serve) -> None:
    from websockets.sync.client import connect

    from rrkit.protocol import response_create
    from rrkit.script import reject

    def ask(server: FakeServer) -> dict[str, Any]:
        with connect(server.responses_ws_url) as ws:
            ws.send(json.dumps(response_create({"model": "m", "input": "hi"})))
            frame: dict[str, Any] = json.loads(ws.recv(timeout=5))
            return frame

    script = Script().add(reject(429, "rate_limit_exceeded", "Slow down.", retry_after=2))
    with serve.running(script) as server:
        recorded_frame = ask(server)
        server.settle()
        cassette = cassette_from_capture(server.exchanges, server.connections)
    with serve.running(source=CassetteSource(cassette)) as replay:
        replayed_frame = ask(replay)
    assert recorded_frame["headers"] == {"retry-after": "2"}
    assert replayed_frame == recorded_frame


@pytest.mark.parametrize("kind", sorted(PREFIXES))
def test_every_kind_of_id_the_server_issues_is_aliased_by_the_normalizer(kind: str) -> None:
    first, second = IdGenerator().new(kind), IdGenerator().new(kind)
    normalizer = Normalizer()
    assert normalizer.json({"id": first}) == {"id": f"{PREFIXES[kind].rstrip('_')}_1"}
    assert normalizer.json({"id": second}) == {"id": f"{PREFIXES[kind].rstrip('_')}_2"}
