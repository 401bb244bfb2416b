"""Every fault over HTTP + SSE, driven by httpx and the official SDK; each test checks the client and the capture."""

from __future__ import annotations

import itertools
import json
import socket

import httpx
import openai
import pytest

from rrkit.protocol import FAILURE_CODES, TURN_STATE_HEADER, OutcomeKind
from rrkit.protocol.errors import GENERIC_FAILURE_MESSAGE
from rrkit.script import Reply, Script, error_event, failed, incomplete, reject, reply, text
from rrkit.script.models import Reject

from .faultclient import (
    BODY,
    Serve,
    body,
    finished,
    outcome,
    port_of,
    post_raw,
    post_sse,
    reset_connection,
    sdk,
    text_of,
)

TEN_EVENTS = reply(text("abcdefghij", chunks=3))  # created, in_progress, added, part, 3 deltas, done x3, completed


# -- mid-stream drop -------------------------------------------------------------------------------


@pytest.mark.parametrize("after", [0, 1, 5])
def test_drop_after_n_events_cuts_the_chunked_body_and_httpx_sees_an_incomplete_body(serve: Serve, after: int) -> None:
    server = serve(Script(default=TEN_EVENTS.drop_after(after)))
    result = post_sse(server)
    assert result.status == 200
    assert isinstance(result.error, httpx.RemoteProtocolError)
    assert "incomplete chunked read" in str(result.error)
    assert len(result.events) == after
    assert outcome(server).kind is OutcomeKind.DROPPED
    assert outcome(server).events_sent == after


def test_drop_after_n_events_makes_the_sdk_raise_api_connection_error_after_exactly_n_events(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.drop_after(4)))
    seen: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        for event in sdk(server).responses.create(model="gpt-test", input="Hello", stream=True):
            seen.append(event.type)
    assert seen == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert outcome(server).kind is OutcomeKind.DROPPED
    assert outcome(server).events_sent == 4


def test_an_end_after_n_events_sends_the_final_chunk_and_no_terminal_event_and_the_sdk_says_so(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.drop_after(6, close="end")))
    result = post_sse(server)
    assert result.status == 200 and result.error is None  # the body ended as a whole one does
    assert len(result.events) == 6 and "response.completed" not in result.types
    assert (outcome(server).kind, outcome(server).events_sent) == (OutcomeKind.DROPPED, 6)
    stream = sdk(server).responses.stream(model="gpt-test", input="Hello")
    with pytest.raises(RuntimeError, match=r"Didn't receive a `response\.completed` event"), stream as events:
        events.get_final_response()


def test_a_drop_used_once_lets_the_retry_complete(serve: Serve) -> None:
    server = serve(Script().add(TEN_EVENTS.drop_after(2)).add(TEN_EVENTS, repeat=True))
    first, retry = post_sse(server), post_sse(server)
    assert isinstance(first.error, httpx.RemoteProtocolError)
    assert retry.error is None and retry.types[-1] == "response.completed"
    assert [exchange.outcome.kind for exchange in server.settle().exchanges if exchange.outcome] == [
        OutcomeKind.DROPPED,
        OutcomeKind.COMPLETED,
    ]


# -- timing: delays and stalls ---------------------------------------------------------------------


def test_delay_first_holds_back_the_first_event(serve: Serve) -> None:
    server = serve(Script(default=reply("Hi.").delayed(first=0.3)))
    result = post_sse(server)
    assert result.types[-1] == "response.completed"
    assert result.first_event_after is not None and result.first_event_after >= 0.29
    sent = finished(server).events
    assert sent[0].at >= 0.29


def test_delay_each_spaces_every_event(serve: Serve) -> None:
    server = serve(Script(default=reply(text("abcd", chunks=4)).delayed(each=0.03)))
    result = post_sse(server)
    count = len(result.events)
    assert result.types[-1] == "response.completed"
    assert result.elapsed >= 0.03 * count - 0.01
    offsets = [sent.at for sent in finished(server).events]
    assert all(later - earlier >= 0.025 for earlier, later in itertools.pairwise(offsets))


def test_stall_after_n_events_sends_nothing_more_until_the_client_times_out(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.stall_after(3)))
    result = post_sse(server, read_timeout=0.4)
    assert isinstance(result.error, httpx.ReadTimeout)
    assert len(result.events) == 3
    assert result.elapsed >= 0.39
    stalled = outcome(server)
    assert stalled.kind is OutcomeKind.STALLED
    assert stalled.events_sent == 3


def test_stall_makes_the_sdk_raise_api_timeout_error_with_its_read_timeout(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.stall_after(2)))
    client = sdk(server, timeout=httpx.Timeout(5.0, read=0.4))
    seen: list[str] = []
    with pytest.raises(openai.APITimeoutError):
        for event in client.responses.create(model="gpt-test", input="Hello", stream=True):
            seen.append(event.type)
    assert seen == ["response.created", "response.in_progress"]
    assert outcome(server).kind is OutcomeKind.STALLED


# -- terminal outcomes in the stream ---------------------------------------------------------------


@pytest.mark.parametrize("code", [*FAILURE_CODES, "brand_new_failure_code"])
def test_response_failed_carries_the_code_and_catalogue_message_and_the_stream_then_ends(
    serve: Serve, code: str
) -> None:
    server = serve(Script(default=failed(code)))
    result = post_sse(server)
    assert result.error is None  # the body ended properly after the terminal event
    assert result.types == ["response.created", "response.in_progress", "response.failed"]
    error = result.events[-1]["response"]["error"]
    expected = FAILURE_CODES[code].message if code in FAILURE_CODES else GENERIC_FAILURE_MESSAGE
    assert error == {"code": code, "message": expected}
    assert result.events[-1]["response"]["status"] == "failed"
    recorded = outcome(server)
    assert (recorded.kind, recorded.code, recorded.message, recorded.events_sent) == (
        OutcomeKind.FAILED,
        code,
        expected,
        3,
    )


def test_response_failed_after_output_keeps_the_done_items_and_the_scripted_message(serve: Serve) -> None:
    script = Script(default=failed("rate_limit_exceeded", "Rate limit reached. Please try again in 28ms.", text("Hal")))
    server = serve(script)
    result = post_sse(server)
    assert result.error is None
    assert result.types[-1] == "response.failed"
    assert text_of(result.events) == "Hal"
    assert result.events[-1]["response"]["error"]["message"] == "Rate limit reached. Please try again in 28ms."


@pytest.mark.parametrize(
    ("code", "strict"),
    # the SDK's strict models allow only the codes of its own Literal; real servers send others
    [("rate_limit_exceeded", True), ("server_error", True), ("context_length_exceeded", False)],
)
def test_sdk_surfaces_response_failed_as_the_last_event(serve: Serve, code: str, strict: bool) -> None:
    server = serve(Script(default=failed(code)))
    events = list(sdk(server, strict=strict).responses.create(model="gpt-test", input="Hello", stream=True))
    last = events[-1]
    assert last.type == "response.failed"
    assert last.response.error is not None
    assert last.response.error.code == code


@pytest.mark.parametrize("reason", ["max_output_tokens", "content_filter"])
def test_response_incomplete_carries_the_reason_and_the_stream_then_ends(serve: Serve, reason: str) -> None:
    server = serve(Script(default=incomplete(reason, text("Partial"))))
    result = post_sse(server)
    assert result.error is None
    assert result.types[-1] == "response.incomplete"
    assert result.events[-1]["response"]["incomplete_details"] == {"reason": reason}
    assert text_of(result.events) == "Partial"
    recorded = outcome(server)
    assert (recorded.kind, recorded.reason) == (OutcomeKind.INCOMPLETE, reason)


def test_flat_sse_error_event_ends_the_stream(serve: Serve) -> None:
    server = serve(Script(default=error_event("Upstream exploded.", code="server_error", param="input")))
    result = post_sse(server)
    assert result.error is None
    last = result.events[-1]
    assert last["type"] == "error"
    assert (last["message"], last["code"], last["param"]) == ("Upstream exploded.", "server_error", "input")
    assert last["sequence_number"] == len(result.events) - 1
    recorded = outcome(server)
    assert (recorded.kind, recorded.code) == (OutcomeKind.ERRORED, "server_error")
    assert recorded.message == "Upstream exploded."


def test_sdk_surfaces_the_flat_error_event(serve: Serve) -> None:
    server = serve(Script(default=error_event("Upstream exploded.", code="server_error")))
    events = list(sdk(server).responses.create(model="gpt-test", input="Hello", stream=True))
    assert events[-1].type == "error"
    assert events[-1].message == "Upstream exploded."


# -- errors before the stream ----------------------------------------------------------------------


def test_429_before_the_stream_has_retry_after_and_an_openai_shaped_json_body(serve: Serve) -> None:
    server = serve(Script(default=reject(429, "rate_limit_exceeded", "Slow down.", retry_after=2)))
    result = post_sse(server)
    assert result.status == 429
    assert result.headers["retry-after"] == "2"
    assert result.headers["content-type"] == "application/json"
    assert result.json == {
        "error": {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "Slow down.", "param": None}
    }
    assert result.events == []
    recorded = finished(server)
    assert recorded.response_status == 429
    assert recorded.outcome is not None
    assert (recorded.outcome.kind, recorded.outcome.status, recorded.outcome.code) == (
        OutcomeKind.REFUSED,
        429,
        "rate_limit_exceeded",
    )


@pytest.mark.parametrize(
    ("status", "code", "error_class"),
    [
        (400, "invalid_prompt", openai.BadRequestError),
        (401, "invalid_api_key", openai.AuthenticationError),
        (403, None, openai.PermissionDeniedError),
        (429, "rate_limit_exceeded", openai.RateLimitError),
        (500, None, openai.InternalServerError),
        (503, "server_is_overloaded", openai.InternalServerError),
    ],
)
def test_http_error_status_before_the_stream_raises_the_matching_sdk_error(
    serve: Serve, status: int, code: str | None, error_class: type[openai.APIStatusError]
) -> None:
    server = serve(Script(default=reject(status, code, f"Scripted {status}.", headers={"retry-after-ms": "250"})))
    with pytest.raises(error_class) as raised:
        sdk(server).responses.create(model="gpt-test", input="Hello", stream=True)
    assert raised.value.status_code == status
    assert raised.value.code == code
    assert raised.value.response.headers["retry-after-ms"] == "250"
    assert outcome(server).kind is OutcomeKind.REFUSED
    assert outcome(server).status == status


def test_reject_with_a_raw_body_sends_that_body(serve: Serve) -> None:
    raw = {"detail": "usage limit", "error": {"type": "usage_limit_reached", "message": "Limit reached."}}
    server = serve(Script(default=Reply(reject=Reject(status=429, body=raw))))
    result = post_sse(server)
    assert (result.status, result.json) == (429, raw)


# -- headers: turn state ---------------------------------------------------------------------------


def test_reply_turn_state_and_headers_are_on_the_http_response(serve: Serve) -> None:
    script = Script(default=reply("Hi.", turn_state="ts-http-1", headers={"x-ratelimit-remaining-requests": "99"}))
    server = serve(script)
    result = post_sse(server)
    assert result.headers[TURN_STATE_HEADER] == "ts-http-1"
    assert result.headers["x-ratelimit-remaining-requests"] == "99"
    assert result.headers["content-type"].startswith("text/event-stream")
    assert finished(server).response_headers[TURN_STATE_HEADER] == "ts-http-1"


def test_no_turn_state_header_unless_scripted(serve: Serve) -> None:
    server = serve(Script(default=reply("Hi.")))
    assert TURN_STATE_HEADER not in post_sse(server).headers


# -- malformed requests ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "param", "says"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1, 2]", None, "must be a JSON object"),
        (json.dumps(body(tools=5)).encode(), "tools", "tools"),
        (json.dumps(body(input=5)).encode(), "input", "input"),
        (json.dumps(body(stream="yes please")).encode(), "stream", "stream"),
    ],
    ids=["not-json", "json-array", "tools-not-a-list", "input-not-a-list", "stream-not-a-bool"],
)
def test_malformed_body_gets_400_with_an_openai_shaped_error_naming_the_field(
    serve: Serve, content: bytes, param: str | None, says: str
) -> None:
    server = serve(Script(default=reply("Hi.")))
    response = post_raw(server, content)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"type", "code", "message", "param"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert says in error["message"]
    recorded = finished(server)
    assert recorded.outcome is not None
    assert (recorded.outcome.kind, recorded.outcome.status) == (OutcomeKind.REFUSED, 400)
    assert post_sse(server).types[-1] == "response.completed"  # the server still answers


def test_unknown_fields_in_the_body_are_accepted_and_kept(serve: Serve) -> None:
    server = serve(Script(default=reply("Hi.")))
    result = post_sse(server, body(brand_new_field={"x": 1}))
    assert result.types[-1] == "response.completed"
    wire = finished(server).wire_request
    assert wire is not None and wire["brand_new_field"] == {"x": 1}


# -- a client that vanishes ------------------------------------------------------------------------


def test_client_that_resets_the_connection_mid_stream_does_not_break_the_server(serve: Serve) -> None:
    slow = reply(text("abcdefghij", chunks=10)).delayed(each=0.05)
    server = serve(Script().add(slow).add(reply("Hi."), repeat=True))
    payload = json.dumps(BODY).encode()
    sock = socket.create_connection(("127.0.0.1", port_of(server)), timeout=5)
    sock.sendall(
        b"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
    )
    received = b""
    while b"response.created" not in received:
        received += sock.recv(65536)
    reset_connection(sock)
    gone = outcome(server)
    assert gone.kind is OutcomeKind.DISCONNECTED
    assert gone.events_sent >= 1
    again = post_sse(server)
    assert again.types[-1] == "response.completed"
    assert outcome(server).kind is OutcomeKind.COMPLETED
