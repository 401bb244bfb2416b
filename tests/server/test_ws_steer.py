"""WebSocket steering: a client's `response.steer` frame is answered as the script says (accepted, pending,
failed), read by the official SDK's beta connection, recorded, and answered the same again from the cassette."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from openai._models import validate_type
from openai.types.beta import BetaResponsesServerEvent

from rrkit.cassette import CassetteSource, cassette_from_capture, save_cassette
from rrkit.cassette.proxy import RecordingProxy
from rrkit.protocol.steer import STEER_CODES, STEER_MESSAGES
from rrkit.script import Script, SteerStep, load_script, reply, text
from rrkit.server import FakeServer

from .faultclient import BODY, Serve, finished, wait_until, ws_connect, ws_request

CALL_STUB = {"type": "function_call_output", "call_id": "call_7", "name": "shell"}
HURRY = [{"type": "message", "role": "user", "content": "also, be quick"}]


def sdk_steer(server: FakeServer, frames: tuple[int, ...] = (1,)) -> tuple[str, list[Any]]:
    """With the SDK's beta connection: one response, then one steer frame aimed at it per entry of `frames`, each
    answered by that many frames (two for pending); the response's id and the answers as the SDK parsed them."""
    client = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)
    answers: list[Any] = []
    with client.beta.responses.connect() as connection:
        connection.response.create(model="gpt-test", input="Hello")
        for event in connection:
            if event.type == "response.completed":
                target = event.response.id
                break
        for count in frames:
            connection.response.steer(input=HURRY, previous_response_id=target)
            answers += [connection.recv() for _ in range(count)]
    return target, answers


def strictly(event: dict[str, Any]) -> Any:
    parsed = validate_type(type_=BetaResponsesServerEvent, value=event)  # type: ignore[arg-type]
    assert parsed.model_dump(mode="json", exclude_unset=True) == event
    return parsed


def raw_steer(server: FakeServer, frame: dict[str, Any]) -> dict[str, Any]:
    """One response then one raw steer frame on the same socket, its (one-frame) answer read with `websockets`;
    the socket still serves a request after it."""
    with ws_connect(server) as websocket:
        assert ws_request(websocket).types[-1] == "response.completed"
        websocket.send(json.dumps(frame))
        answer: dict[str, Any] = json.loads(websocket.recv(timeout=30))
        assert ws_request(websocket).types[-1] == "response.completed"
    return answer


def test_a_scripted_accepted_answer_reaches_the_sdk_naming_the_steered_response(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi")), steer=[SteerStep()]))
    target, answers = sdk_steer(server)
    [accepted] = answers
    assert accepted.type == "response.steer.accepted"
    assert accepted.steer.previous_response_id == target and accepted.steer.id.startswith("steer_")
    exchange = finished(server)
    assert exchange.transport == "ws" and [e.event["type"] for e in exchange.events] == ["response.steer.accepted"]
    assert json.loads(exchange.raw_body or "")["type"] == "response.steer"
    assert server.state.source.unused() == []


def test_a_pending_answer_follows_the_acceptance_with_the_required_input_stubs(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi")), steer=[SteerStep(answer="pending", required_input=[CALL_STUB])]))
    _, answers = sdk_steer(server, (2,))
    assert [a.type for a in answers] == ["response.steer.accepted", "response.steer.pending"]
    pending = answers[1]
    assert pending.reason == "waiting_for_required_input" and pending.steer.id == answers[0].steer.id
    assert [stub.model_dump(exclude_none=True) for stub in pending.required_input] == [CALL_STUB]


@pytest.mark.parametrize("code", STEER_CODES)
def test_every_failure_code_of_the_sdk_is_scriptable_and_hands_the_input_back(serve: Serve, code: str) -> None:
    server = serve(Script(default=reply(text("hi")), steer=[SteerStep(answer="failed", code=code)]))
    failed = raw_steer(server, {"type": "response.steer", "previous_response_id": "resp_x", "input": HURRY})
    parsed = strictly(failed)
    assert parsed.error.code == code and parsed.error.message == STEER_MESSAGES[code]
    assert failed["steer"] == {"input": HURRY, "previous_response_id": "resp_x"}


def test_a_steer_frame_naming_no_response_is_refused_with_an_error_frame_and_the_socket_kept(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi")), steer=[SteerStep()]))
    refused = raw_steer(server, {"type": "response.steer", "input": "more"})
    assert refused["type"] == "error" and refused["status"] == 400
    assert refused["error"]["param"] == "previous_response_id"
    assert server.state.source.unused() == ["steer answer 0 (accepted, used 0 of 1)"]


def test_without_a_scripted_answer_steering_fails_as_not_supported(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi"))))
    _, [failed] = sdk_steer(server)
    assert failed.type == "response.steer.failed" and failed.error.code == "steering_not_supported"


@pytest.mark.parametrize(
    ("frame", "problem"),
    [
        ({"type": "response.steer", "previous_response_id": "resp_x", "input": []}, "input must be"),
        ({"type": "response.steer", "previous_response_id": "resp_x", "input": "x", "stream_id": "s"}, "stream_id"),
    ],
)
def test_a_steer_frame_the_service_would_refuse_fails_as_invalid_input_whatever_the_script(
    serve: Serve, frame: dict[str, Any], problem: str
) -> None:
    server = serve(Script(default=reply(text("hi")), steer=[SteerStep()]))
    failed = raw_steer(server, frame)
    assert strictly(failed).error.code == "invalid_input" and problem in failed["error"]["message"]


def test_steer_answers_are_used_up_in_order_and_the_unused_ones_reported(serve: Serve) -> None:
    steps = [SteerStep(answer="failed", code="too_many_pending_steers"), SteerStep(), SteerStep(times=2)]
    server = serve(Script(default=reply(text("hi")), steer=steps))
    _, answers = sdk_steer(server, (1, 1))
    assert [a.type for a in answers] == ["response.steer.failed", "response.steer.accepted"]
    assert server.state.source.unused() == ["steer answer 2 (accepted, used 0 of 2)"]


def test_the_yaml_form_of_steer_answers_is_the_python_one(tmp_path: Path) -> None:
    path = tmp_path / "steer.yaml"
    path.write_text(
        "default: {output: [{type: message, text: hi}]}\n"
        "steer:\n"
        "  - answer: pending\n"
        "    required_input: [{type: function_call_output, call_id: call_7, name: shell}]\n"
        "  - {answer: failed, code: response_already_completed, repeat: true}\n"
    )
    script = load_script(path)
    assert script.steer == [
        SteerStep(answer="pending", required_input=[CALL_STUB]),
        SteerStep(answer="failed", code="response_already_completed", repeat=True),
    ]


def test_a_steer_key_the_script_does_not_know_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "steer.yaml"
    path.write_text("steer:\n  - answer: accepted\n    requred_input: []\n")
    with pytest.raises(Exception, match=r"line 3.*requred_input.*required_input"):
        load_script(path)


def test_recorded_steer_answers_replay_in_order_aimed_at_the_live_response(serve: Serve) -> None:
    steps = [SteerStep(answer="pending", required_input=[CALL_STUB]), SteerStep(answer="failed", code="invalid_input")]
    server = serve(Script(default=reply(text("hi")), steer=steps))
    _, first = sdk_steer(server, (2, 1))
    server.settle()
    cassette = cassette_from_capture(server.exchanges, server.connections)
    with serve.running(source=CassetteSource(cassette)) as replay:
        target, again = sdk_steer(replay, (2, 1))
        assert replay.state.source.unplayed() == []
    assert [a.type for a in again] == [a.type for a in first]
    assert {a.steer.previous_response_id for a in again} == {target}
    assert again[1].required_input == first[1].required_input and again[2].error.code == "invalid_input"


def test_a_replay_without_a_recorded_steer_answers_not_supported_and_lists_an_unplayed_one(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi")), steer=[SteerStep()]))
    with ws_connect(server) as websocket:
        assert ws_request(websocket, BODY).types[-1] == "response.completed"
        websocket.send(json.dumps({"type": "response.steer", "previous_response_id": "resp_a", "input": "more"}))
        websocket.recv(timeout=30)
    server.settle()
    cassette = cassette_from_capture(server.exchanges, server.connections)
    source = CassetteSource(cassette)
    [steer_exchange] = [e for e in cassette.exchanges if e.raw_body]
    assert source.unplayed()[-1] == f"exchange {steer_exchange.id} (ws, connection 0, a response.steer frame)"
    with serve.running(source=CassetteSource(cassette)) as replay, ws_connect(replay) as websocket:
        assert ws_request(websocket, BODY).types[-1] == "response.completed"
        for expected in ("response.steer.accepted", "response.steer.failed"):
            websocket.send(json.dumps({"type": "response.steer", "previous_response_id": "resp_b", "input": "x"}))
            assert json.loads(websocket.recv(timeout=30))["type"] == expected


STEERING_CLIENT = """
import os, openai
client = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], max_retries=0)
with client.beta.responses.connect() as connection:
    connection.response.create(model="gpt-test", input="Hello")
    target = next(e for e in connection if e.type == "response.completed").response.id
    connection.response.steer(input="also, be quick", previous_response_id=target)
    print(connection.recv().type, connection.recv().type)
"""


def test_a_steering_sdk_session_recorded_through_the_proxy_replays_as_recorded_from_another_directory(
    serve: Serve, tmp_path: Path
) -> None:
    script = Script(default=reply(text("hi")), steer=[SteerStep(answer="pending", required_input=[CALL_STUB])])
    client = tmp_path / "client.py"
    client.write_text(STEERING_CLIENT)
    with serve.running(script) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        env = {**os.environ, "OPENAI_BASE_URL": proxy.http_url, "OPENAI_API_KEY": "sk-test"}
        seen = subprocess.run([sys.executable, str(client)], env=env, capture_output=True, text=True, timeout=60)
        assert seen.stdout.split() == ["response.steer.accepted", "response.steer.pending"], seen.stderr
        wait_until(lambda: proxy.connections and proxy.connections[0].closed_by, what="the client's close")
        cassette = proxy.cassette("steer")
    assert cassette.connections[0].closed_by == "client"
    steer_exchange = cassette.exchanges[-1]
    assert [e.type for e in steer_exchange.events] == ["response.steer.accepted", "response.steer.pending"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    save_cassette(cassette, elsewhere / "steer.json")
    replay = subprocess.run(
        [sys.executable, "-m", "rrkit", "replay", "--json", "steer.json", "--", sys.executable, str(client)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    [run] = json.loads(replay.stdout)["detail"]["replays"]
    assert run["ok"] and run["client"]["ok"] and run["unplayed"] == [], run


LONG_REPLY = reply(*(text(f"Part {n}. ", chunks=2) for n in range(20))).delayed(each=0.05)
"""Twenty output items, 3 s in all: a steer sent on the first delta arrives many item boundaries before the end."""


def steered_run(server: FakeServer) -> list[Any]:
    """With the SDK's beta connection: a response steered on its first text delta, read through its successor's
    `response.completed`; every event, as the SDK parsed it."""
    client = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)
    seen: list[Any] = []
    with client.beta.responses.connect() as connection:
        connection.response.create(model="gpt-test", input="Write at length.")
        steered = False
        for event in connection:
            seen.append(event)
            if event.type == "response.output_text.delta" and not steered:
                connection.response.steer(input="Stop, and answer briefly.", previous_response_id=seen[0].response.id)
                steered = True
            if event.type == "response.completed":
                break
    return seen


def test_accepted_steering_stops_the_response_at_an_item_boundary_and_its_successor_commits_the_input(
    serve: Serve,
) -> None:
    """The SDK's contract (BetaResponseSteerEvent): accepted, the response under way ends `incomplete` with reason
    `steered` at its next output boundary, then a successor response is created on the same socket, continuing
    from it with the queued input and its settings; the client reads it to `response.completed`."""
    script = Script(steer=[SteerStep()]).queue(LONG_REPLY, reply(text("Brief answer.")))
    server = serve(script)
    seen = steered_run(server)
    types = [event.type for event in seen]
    assert "response.steer.accepted" in types
    ended = types.index("response.incomplete")
    incomplete = seen[ended].response
    assert incomplete.incomplete_details.reason == "steered" and 0 < len(incomplete.output) < 20
    assert all(item.status == "completed" for item in incomplete.output)  # stopped between items, not inside one
    assert types[ended + 1] == "response.created" and seen[ended + 1].response.id != incomplete.id
    assert seen[-1].type == "response.completed" and seen[-1].response.output[0].content[0].text == "Brief answer."
    steered, steer, successor = (finished(server, index, count=3) for index in range(3))
    assert json.loads(steer.raw_body or "")["type"] == "response.steer"
    assert successor.wire_request is not None and successor.logical_request is not None
    assert successor.wire_request["previous_response_id"] == incomplete.id
    assert successor.wire_request["model"] == "gpt-test"  # the steered one's settings
    said = successor.logical_request["input"]
    assert said[0]["content"] == "Write at length." and said[-1]["content"][0]["text"] == "Stop, and answer briefly."
    assert [item["id"] for item in said[1:-1]] == [item.id for item in incomplete.output]
    assert steered.outcome is not None and steered.outcome.reason == "steered"
    assert server.state.source.unused() == []


def test_a_failed_steer_stops_nothing(serve: Serve) -> None:
    script = Script(steer=[SteerStep(answer="failed", code="steering_not_supported")]).queue(
        reply(*(text(f"Part {n}. ") for n in range(5))).delayed(each=0.02)
    )
    seen = steered_run(serve(script))
    assert [event.type for event in seen].count("response.created") == 1
    assert "response.steer.failed" in [event.type for event in seen] and len(seen[-1].response.output) == 5


def responses(events: list[Any], steering: bool = False) -> list[str]:
    """The types of the events of responses (or, `steering`, of the answers to a steer frame too)."""
    return [event.type for event in events if steering or not event.type.startswith("response.steer.")]


def test_a_steered_session_is_recorded_with_its_successor_and_replayed_to_the_sdk_alike(serve: Serve) -> None:
    """The cassette keeps the successor (`successor_of`: the server made its request); served from the cassette
    (at once: the steered response ends before the client steers, and the server waits for the steer), the same
    steer frame gets the recorded acceptance, the steered response its recorded end and the successor its recorded
    answer, matched on the request the server makes for it."""
    server = serve(Script(steer=[SteerStep()]).queue(LONG_REPLY, reply(text("Brief answer."))))
    recorded = steered_run(server)
    server.settle()
    cassette = cassette_from_capture(server.exchanges, server.connections)
    steered, _, successor = cassette.exchanges
    assert successor.successor_of == steered.response_id
    with serve.running(source=CassetteSource(cassette)) as replay:
        replayed = steered_run(replay)
        replay.settle()
        assert replay.state.source.unplayed() == []
        assert replay.exchanges[-1].successor_of == replay.exchanges[0].response_id
    assert responses(replayed) == responses(recorded) and "response.steer.accepted" in responses(replayed, True)
    assert replayed[-1].response.output[0].content[0].text == "Brief answer."
