"""Continuations checked as the service checks them (issue 60): an answer (`function_call_output`, ...) naming a
call no item before it issued is refused with the service's 400 (`No tool call found for function call output with
call_id X.`, `param: input`, no code), over HTTP (httpx, the official SDK) and over a WebSocket (websockets, the
SDK's `responses.connect()`), where the refusal also drops the continued response from the connection's cache: the
next continuation from it is `previous_response_not_found` (the OpenResponses compliance suite's "WebSocket Failed
Continuation Evicts Cache"). A full request answering a call earlier in its own input is taken."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from websockets.sync.client import connect

from rrkit.protocol.answer_check import CHECKED_ANSWERS
from rrkit.protocol.calls import CLIENT_CALLS
from rrkit.protocol.input_check import INPUT_ITEMS
from rrkit.script import Script, function_call, reply

from ..errortrap import Serve
from .faultclient import sdk
from .test_conversations import ws_events

TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
BASE: dict[str, Any] = {"model": "gpt-test", "tools": TOOLS, "stream": True}
USER = {"role": "user", "content": "Weather in Paris?"}
CALL_ID = "call_1"
UNKNOWN = "call_openresponses_missing"
ORPHAN = {"type": "function_call_output", "call_id": UNKNOWN, "output": "No matching tool call."}
ANSWER = {"type": "function_call_output", "call_id": CALL_ID, "output": "sunny"}
REFUSAL = f"No tool call found for function call output with call_id {UNKNOWN}."


def calling() -> Script:
    """Every response calls `get_weather` as `call_1`."""
    return Script(default=reply(function_call("get_weather", {"city": "Paris"}, call_id=CALL_ID)))


def post(client: httpx.Client, server: Any, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]], Any]:
    """Status, events (a stream) and the body (an error) of a create."""
    answer = client.post(server.http_url + "/responses", json={**BASE, **body})
    if answer.status_code != 200:
        return answer.status_code, [], answer.json()
    events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    return 200, events, None


def turn(socket: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    socket.send(json.dumps({"type": "response.create", **BASE, **body}))
    return ws_events(socket)


def test_http_a_continuation_answering_an_unknown_call_is_refused_and_the_response_stays_continuable(
    serve: Serve,
) -> None:
    server = serve(calling())
    with httpx.Client(timeout=10) as client:
        status, events, _ = post(client, server, {"input": [USER]})
        first = events[-1]["response"]["id"]
        status, _, body = post(client, server, {"input": [ORPHAN], "previous_response_id": first})
        assert status == 400
        assert body == {"error": {"message": REFUSAL, "type": "invalid_request_error", "param": "input", "code": None}}
        status, events, _ = post(client, server, {"input": [ANSWER], "previous_response_id": first})
        assert status == 200 and events[-1]["type"] == "response.completed"  # HTTP keeps the stored response


def test_http_a_full_request_answers_only_calls_earlier_in_its_own_input(serve: Serve) -> None:
    server = serve(calling())
    call = {"type": "function_call", "call_id": CALL_ID, "name": "get_weather", "arguments": "{}"}
    with httpx.Client(timeout=10) as client:
        assert post(client, server, {"input": [USER, call, ANSWER]})[0] == 200  # as Codex sends its history
        status, _, body = post(client, server, {"input": [USER, ANSWER]})
        assert (
            status == 400
            and body["error"]["message"] == f"No tool call found for function call output with call_id {CALL_ID}."
        )
        assert post(client, server, {"input": [USER, ANSWER, call]})[0] == 400  # the call must come first
        compaction = {"type": "compaction", "encrypted_content": "opaque"}
        assert post(client, server, {"input": [compaction, ANSWER]})[0] == 200  # its calls are out of sight


def test_a_call_named_by_an_item_reference_is_issued_before_its_answer(serve: Serve) -> None:
    server = serve(calling())
    with httpx.Client(timeout=10) as client:
        _, events, _ = post(client, server, {"input": [USER], "store": True})
        (call,) = [event["item"] for event in events if event["type"] == "response.output_item.done"]
        reference = {"type": "item_reference", "id": call["id"]}
        assert post(client, server, {"input": [USER, reference, ANSWER]})[0] == 200


def test_the_official_sdk_gets_a_bad_request_naming_the_input(serve: Serve) -> None:
    server = serve(calling())
    client = sdk(server)
    first = client.responses.create(model="gpt-test", input="Weather in Paris?", tools=TOOLS)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-test", input=[ORPHAN], previous_response_id=first.id)  # type: ignore[list-item]
    assert refused.value.status_code == 400 and refused.value.param == "input"
    assert refused.value.message.endswith(REFUSAL)  # the SDK prefixes its own "Error code: 400 - ..."
    done = client.responses.create(model="gpt-test", input=[ANSWER], previous_response_id=first.id)  # type: ignore[list-item]
    assert done.status == "completed"


def test_websocket_a_failed_continuation_evicts_the_response_it_continued(serve: Serve) -> None:
    """The compliance suite's case: a `store: false` response, a continuation from it answering a call it never
    issued (an `error` frame, the socket left open), then a continuation from the same response:
    `previous_response_not_found`; a full request on the same socket is answered."""
    server = serve(calling())
    with connect(server.responses_ws_url, open_timeout=10) as socket:
        first = turn(socket, {"store": False, "input": [USER]})[-1]["response"]["id"]
        (failed,) = turn(socket, {"store": False, "previous_response_id": first, "input": [ORPHAN]})
        assert failed["type"] == "error" and failed["status"] == 400
        assert failed["error"] == {
            "message": REFUSAL,
            "type": "invalid_request_error",
            "param": "input",
            "code": None,
        }
        (stale,) = turn(socket, {"store": False, "previous_response_id": first, "input": [ANSWER]})
        assert (stale["status"], stale["error"]["code"]) == (400, "previous_response_not_found")
        assert turn(socket, {"store": False, "input": [USER]})[-1]["type"] == "response.completed"


def test_websocket_a_continuation_answering_the_call_it_was_given_is_taken(serve: Serve) -> None:
    server = serve(calling())
    with connect(server.responses_ws_url, open_timeout=10) as socket:
        first = turn(socket, {"store": False, "input": [USER]})[-1]["response"]["id"]
        second = turn(socket, {"store": False, "previous_response_id": first, "input": [ANSWER]})
        assert second[-1]["type"] == "response.completed"
        again = turn(socket, {"store": False, "previous_response_id": first, "input": [ANSWER]})
        assert again[-1]["type"] == "response.completed"  # a continuation that was taken evicts nothing


def test_the_sdk_s_websocket_connection_sees_the_refusal_then_the_eviction(serve: Serve) -> None:
    server = serve(calling())
    client = sdk(server)
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-test", input="Weather in Paris?", tools=TOOLS, store=False)  # type: ignore[arg-type]
        first = next(event for event in connection if event.type == "response.completed").response.id
        seen: list[Any] = []
        for answer in (ORPHAN, ANSWER):
            connection.response.create(model="gpt-test", input=[answer], previous_response_id=first, store=False)  # type: ignore[list-item]
            seen.append(next(event for event in connection if event.type == "error"))
    assert seen[0].error.message == REFUSAL and seen[0].error.param == "input"
    assert seen[1].error.code == "previous_response_not_found"


@pytest.mark.parametrize("answer_type", sorted(CHECKED_ANSWERS))
def test_every_answer_linked_by_call_id_is_checked_against_the_calls_before_it(serve: Serve, answer_type: str) -> None:
    call_type = CHECKED_ANSWERS[answer_type]
    call = {"type": call_type, "call_id": CALL_ID}
    answer = CLIENT_CALLS[call_type].answer(call, [] if call_type == "tool_search_call" else "done")
    server = serve(calling())
    with httpx.Client(timeout=10) as client:
        status, _, body = post(client, server, {"input": [USER, answer]})
        wording = answer_type.replace("_", " ")
        assert status == 400 and body["error"]["message"] == f"No tool call found for {wording} with call_id {CALL_ID}."
        full = [USER, {**call, **_required(call_type)}, answer]
        assert post(client, server, {"input": full})[0] == 200, answer_type


def test_answers_linked_otherwise_are_taken_unchecked(serve: Serve) -> None:
    """A local shell call's answer (by `id`) and an approval (by `approval_request_id`): the service's pairing of
    them is unobserved, so the fake takes them as a client sends them."""
    server = serve(calling())
    shell = {"type": "local_shell_call_output", "id": "lsh_nowhere", "output": "ok"}
    approval = {"type": "mcp_approval_response", "approval_request_id": "mcpr_nowhere", "approve": True}
    with httpx.Client(timeout=10) as client:
        assert post(client, server, {"input": [USER, shell, approval]})[0] == 200


def _required(call_type: str) -> dict[str, Any]:
    """The fields (besides `call_id`) the input check requires of a call of this type."""
    return {name: "" for name in INPUT_ITEMS[call_type] if name != "call_id"}
