"""Which scripted reply answers a request: the queue, rules on the request, `times`/`repeat`, and the
error a client gets when nothing matches (over HTTP and over WebSocket)."""

from __future__ import annotations

from typing import Any

import pytest

from rrkit.protocol import OutcomeKind
from rrkit.script import Match, Script, reply
from rrkit.server import NO_MATCH_CODE, FakeServer

from ..server.faultclient import (
    BODY,
    USER,
    Serve,
    body,
    finished,
    outcome,
    post_sse,
    text_of,
    ws_connect,
    ws_request,
)

TOOL_CALL = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"}
TOOL_OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}  # answers TOOL_CALL


def answer_http(server: FakeServer, request: dict[str, Any] | None = None, **headers: str) -> str:
    result = post_sse(server, request, headers=headers or None)
    assert result.status == 200, result.json
    return text_of(result.events)


def test_queue_entries_answer_requests_in_order_once_each(serve: Serve) -> None:
    server = serve(Script().queue(reply("first"), reply("second"), reply("third")))
    assert [answer_http(server) for _ in range(3)] == ["first", "second", "third"]
    assert post_sse(server).status == 400  # the queue is used up


def test_times_uses_an_entry_n_times_then_moves_on(serve: Serve) -> None:
    server = serve(Script().add(reply("twice"), times=2).add(reply("then this")))
    assert [answer_http(server) for _ in range(3)] == ["twice", "twice", "then this"]


def test_repeat_is_never_used_up(serve: Serve) -> None:
    server = serve(Script().add(reply("always"), repeat=True).add(reply("never")))
    assert {answer_http(server) for _ in range(5)} == {"always"}


def test_default_answers_when_no_step_matches(serve: Serve) -> None:
    server = serve(Script(default=reply("fallback")).add(reply("once")))
    assert [answer_http(server) for _ in range(3)] == ["once", "fallback", "fallback"]


def test_rule_on_the_last_input_item_type_picks_the_tool_answer(serve: Serve) -> None:
    script = (
        Script()
        .add(reply("after the tool"), when=Match(last_input_type="function_call_output"), repeat=True)
        .add(reply("calling the tool"), when=Match(last_input_type="message"), repeat=True)
    )
    server = serve(script)
    assert answer_http(server) == "calling the tool"
    assert answer_http(server, body(input=[USER, TOOL_CALL, TOOL_OUTPUT])) == "after the tool"


def test_rule_on_the_model(serve: Serve) -> None:
    script = (
        Script()
        .add(reply("mini"), when=Match(model="gpt-mini"), repeat=True)
        .add(reply("large"), when=Match(model="gpt-large"), repeat=True)
    )
    server = serve(script)
    assert answer_http(server, body(model="gpt-large")) == "large"
    assert answer_http(server, body(model="gpt-mini")) == "mini"


def test_rule_on_a_header_value_or_its_presence(serve: Serve) -> None:
    script = (
        Script()
        .add(reply("turn two"), when=Match(headers={"X-Codex-Turn-State": "ts-2"}), repeat=True)
        .add(reply("has a session"), when=Match(headers={"session-id": "*"}), repeat=True)
        .add(reply("plain"), repeat=True)
    )
    server = serve(script)
    assert answer_http(server, None, **{"x-codex-turn-state": "ts-2"}) == "turn two"
    assert answer_http(server, None, **{"session-id": "abc"}) == "has a session"
    assert answer_http(server) == "plain"


def test_rule_on_the_transport(serve: Serve) -> None:
    script = (
        Script()
        .add(reply("over a socket"), when=Match(transport="ws"), repeat=True)
        .add(reply("over http"), when=Match(transport="http"), repeat=True)
    )
    server = serve(script)
    assert answer_http(server) == "over http"
    with ws_connect(server) as websocket:
        assert text_of(ws_request(websocket).events) == "over a socket"


def test_rule_on_generate_false_answers_the_warmup_from_the_script(serve: Serve) -> None:
    script = (
        Script()
        .add(reply("warm"), when=Match(generate=False), repeat=True)
        .add(reply("real"), when=Match(generate=True), repeat=True)
    )
    server = serve(script)
    with ws_connect(server) as websocket:
        assert text_of(ws_request(websocket, body(generate=False)).events) == "warm"
        assert text_of(ws_request(websocket).events) == "real"


def test_a_warmup_without_a_generate_rule_gets_created_and_completed_and_uses_no_step(serve: Serve) -> None:
    server = serve(Script().add(reply("real")))
    with ws_connect(server) as websocket:
        warmup = ws_request(websocket, body(generate=False))
        assert warmup.types == ["response.created", "response.completed"]
        assert text_of(ws_request(websocket).events) == "real"


def test_rule_on_incremental_requests(serve: Serve) -> None:
    script = (
        Script()
        .add(reply("delta"), when=Match(incremental=True), repeat=True)
        .add(reply("full"), when=Match(incremental=False), repeat=True)
    )
    server = serve(script)
    with ws_connect(server) as websocket:
        full = ws_request(websocket)
        assert text_of(full.events) == "full"
        previous = full.last["response"]["id"]
        follow_up = body(previous_response_id=previous, input=[{"role": "user", "content": "more"}])
        assert text_of(ws_request(websocket, follow_up).events) == "delta"
    assert finished(server).incremental


def test_every_condition_of_a_rule_must_hold(serve: Serve) -> None:
    both = Match(model="gpt-large", last_input_type="function_call_output")
    server = serve(Script(default=reply("default")).add(reply("both"), when=both, repeat=True))
    assert answer_http(server, body(model="gpt-large")) == "default"
    assert answer_http(server, body(model="gpt-large", input=[USER, TOOL_CALL, TOOL_OUTPUT])) == "both"


# -- nothing matches -------------------------------------------------------------------------------


def no_match_script() -> Script:
    return (
        Script()
        .add(reply("mini"), when=Match(model="gpt-mini"), repeat=True)
        .add(reply("tool"), when=Match(model="gpt-test", last_input_type="function_call_output"), repeat=True)
    )


def test_no_match_over_http_is_a_400_naming_the_request_and_the_closest_steps(serve: Serve) -> None:
    server = serve(no_match_script())
    result = post_sse(server)
    assert result.status == 400
    error = result.json["error"]
    assert (error["type"], error["code"]) == ("rrkit_no_match", NO_MATCH_CODE)
    message = error["message"]
    assert "http request" in message and "model='gpt-test'" in message
    assert "last input type='message'" in message
    assert "Closest" in message
    # the closest step (the model holds, the input type does not) comes first
    assert message.index("step 1") < message.index("step 0")
    assert "failed: last input type == 'function_call_output'" in message
    assert "failed: model == 'gpt-mini'" in message
    recorded = outcome(server)
    assert (recorded.kind, recorded.status, recorded.code) == (OutcomeKind.REFUSED, 400, NO_MATCH_CODE)


def test_no_match_over_websocket_is_an_error_frame_with_status_400_and_the_socket_stays_usable(
    serve: Serve,
) -> None:
    server = serve(no_match_script())
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
        frame = answer.last
        assert (frame["type"], frame["status"]) == ("error", 400)
        assert (frame["error"]["type"], frame["error"]["code"]) == ("rrkit_no_match", NO_MATCH_CODE)
        assert "ws request" in frame["error"]["message"]
        assert "Closest" in frame["error"]["message"]
        assert text_of(ws_request(websocket, body(model="gpt-mini")).events) == "mini"
    assert [exchange.outcome.kind for exchange in server.settle().exchanges if exchange.outcome] == [
        OutcomeKind.REFUSED,
        OutcomeKind.COMPLETED,
    ]


def test_no_match_after_the_queue_is_used_up_says_the_steps_are_used_up(serve: Serve) -> None:
    server = serve(Script().add(reply("only")))
    answer_http(server)
    message = post_sse(server).json["error"]["message"]
    assert "used up" in message
    assert "step 0" in message


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_an_empty_script_says_how_to_fix_it(serve: Serve, transport: str) -> None:
    server = serve(Script())
    if transport == "http":
        message = post_sse(server, BODY).json["error"]["message"]
    else:
        with ws_connect(server) as websocket:
            message = ws_request(websocket).last["error"]["message"]
    assert "no scripted reply matches" in message
    assert "Add a reply (or a `default`) to the script." in message
