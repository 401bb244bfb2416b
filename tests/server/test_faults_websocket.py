"""Every fault over WebSocket, driven by the `websockets` client; each test checks the client and the capture."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK, InvalidStatus
from websockets.sync.client import ClientConnection

from rrkit.protocol import FAILURE_CODES, TURN_STATE_HEADER, OutcomeKind
from rrkit.protocol.errors import PREVIOUS_RESPONSE_NOT_FOUND, WEBSOCKET_CONNECTION_LIMIT
from rrkit.script import (
    Handshake,
    Match,
    Script,
    accept_upgrade,
    error_event,
    failed,
    incomplete,
    refuse_upgrade,
    reject,
    reply,
    text,
)
from rrkit.server import Connection, FakeServer

from .faultclient import (
    BODY,
    Serve,
    body,
    finished,
    outcome,
    reset_connection,
    text_of,
    wait_until,
    ws_connect,
    ws_read,
    ws_request,
    ws_send_raw,
)

TEN_EVENTS = reply(text("abcdefghij", chunks=3))


def connection(server: FakeServer, index: int = -1) -> Connection:
    return wait_until(lambda: server.connections[index] if server.connections else None, what="a connection")


def closed(server: FakeServer, index: int = -1) -> Connection:
    """The connection once the server has recorded who closed it."""
    return wait_until(
        lambda: server.connections[index] if server.connections and server.connections[index].closed_by else None,
        what="the server to record the close",
    )


def still_usable(websocket: ClientConnection, server: FakeServer) -> None:
    """The same socket answers a normal request afterwards."""
    answer = ws_request(websocket)
    assert answer.types[-1] == "response.completed", answer
    assert outcome(server).kind is OutcomeKind.COMPLETED


# -- mid-stream drop -------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [1011, 4000])
def test_drop_with_a_close_frame_gives_the_client_that_close_code_after_n_events(serve: Serve, code: int) -> None:
    server = serve(Script(default=TEN_EVENTS.drop_after(4, close="frame", code=code)))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
    assert isinstance(answer.closed, ConnectionClosedError)
    assert answer.closed.rcvd is not None and answer.closed.rcvd.code == code
    assert len(answer.events) == 4
    assert outcome(server).kind is OutcomeKind.DROPPED
    assert outcome(server).events_sent == 4
    recorded = closed(server)
    assert (recorded.status, recorded.closed_by, recorded.close_code) == (101, "server", code)


def test_drop_with_a_bare_tcp_close_gives_the_client_1006_without_a_close_frame(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.drop_after(5, close="tcp")))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
    assert isinstance(answer.closed, ConnectionClosedError)
    assert answer.closed.rcvd is None  # no close frame arrived
    assert answer.close_code == 1006
    assert len(answer.events) == 5
    assert outcome(server).kind is OutcomeKind.DROPPED
    assert closed(server).closed_by == "tcp"


def test_an_end_after_n_events_closes_the_socket_normally_before_any_terminal_event(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.drop_after(6, close="end")))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
    assert answer.closed is not None and answer.closed.rcvd is not None and answer.closed.rcvd.code == 1000
    assert len(answer.events) == 6 and "response.completed" not in answer.types
    assert (outcome(server).kind, outcome(server).events_sent) == (OutcomeKind.DROPPED, 6)
    recorded = closed(server)
    assert (recorded.closed_by, recorded.close_code) == ("server", 1000)


def test_after_a_drop_a_new_connection_gets_the_next_reply(serve: Serve) -> None:
    server = serve(Script().add(TEN_EVENTS.drop_after(2, close="tcp")).add(TEN_EVENTS, repeat=True))
    with ws_connect(server) as websocket:
        assert ws_request(websocket).closed is not None
    with ws_connect(server) as websocket:
        assert ws_request(websocket).types[-1] == "response.completed"
    assert [exchange.outcome.kind for exchange in server.settle().exchanges if exchange.outcome] == [
        OutcomeKind.DROPPED,
        OutcomeKind.COMPLETED,
    ]


# -- timing: delays and stalls ---------------------------------------------------------------------


def test_delay_first_holds_back_the_first_frame(serve: Serve) -> None:
    server = serve(Script(default=reply("Hi.").delayed(first=0.3)))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
    assert answer.types[-1] == "response.completed"
    assert answer.first_event_after is not None and answer.first_event_after >= 0.29
    assert finished(server).events[0].at >= 0.29


def test_delay_each_spaces_every_frame(serve: Serve) -> None:
    server = serve(Script(default=reply(text("abcd", chunks=4)).delayed(each=0.03)))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
    assert answer.types[-1] == "response.completed"
    assert answer.elapsed >= 0.03 * len(answer.events) - 0.01
    offsets = [sent.at for sent in finished(server).events]
    assert all(later - earlier >= 0.025 for earlier, later in itertools.pairwise(offsets))


def test_stall_after_n_events_sends_nothing_more_and_is_recorded_once_the_client_leaves(serve: Serve) -> None:
    server = serve(Script(default=TEN_EVENTS.stall_after(3)))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket, timeout=0.4)
        assert answer.timed_out
        assert len(answer.events) == 3
        assert answer.elapsed >= 0.39
    stalled = outcome(server)
    assert (stalled.kind, stalled.events_sent) == (OutcomeKind.STALLED, 3)
    assert closed(server).closed_by == "client"


# -- terminal outcomes: the socket stays usable ----------------------------------------------------


@pytest.mark.parametrize("code", [*FAILURE_CODES, "brand_new_failure_code"])
def test_response_failed_frame_carries_the_code_and_the_socket_stays_usable(serve: Serve, code: str) -> None:
    server = serve(Script().add(failed(code)).add(reply("Recovered."), repeat=True))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
        assert answer.types[-1] == "response.failed"
        assert answer.last["response"]["error"]["code"] == code
        assert (outcome(server).kind, outcome(server).code) == (OutcomeKind.FAILED, code)
        still_usable(websocket, server)


def test_response_incomplete_frame_carries_the_reason_and_the_socket_stays_usable(serve: Serve) -> None:
    server = serve(Script().add(incomplete("max_output_tokens", text("Part"))).add(reply("Rest."), repeat=True))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
        assert answer.types[-1] == "response.incomplete"
        assert answer.last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
        assert text_of(answer.events) == "Part"
        assert (outcome(server).kind, outcome(server).reason) == (OutcomeKind.INCOMPLETE, "max_output_tokens")
        still_usable(websocket, server)


def test_flat_error_event_is_sent_as_a_frame_and_the_socket_stays_usable(serve: Serve) -> None:
    server = serve(Script().add(error_event("Upstream exploded.", code="server_error")).add(reply("OK."), repeat=True))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
        assert answer.last["type"] == "error"
        assert (answer.last["message"], answer.last["code"]) == ("Upstream exploded.", "server_error")
        assert outcome(server).kind is OutcomeKind.ERRORED
        still_usable(websocket, server)


# -- error frames before the stream ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "headers"),
    [
        (400, WEBSOCKET_CONNECTION_LIMIT, {}),
        (429, "rate_limit_exceeded", {"retry-after": "1"}),
        (500, None, {}),
        (503, "server_is_overloaded", {}),
    ],
)
def test_reject_is_an_error_frame_with_the_status_and_the_socket_stays_usable(
    serve: Serve, status: int, code: str | None, headers: dict[str, str]
) -> None:
    script = Script().add(reject(status, code, "Scripted.", headers=headers)).add(reply("OK."), repeat=True)
    server = serve(script)
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
        frame = answer.last
        assert frame["type"] == "error"
        assert frame["status"] == status
        assert frame["error"]["code"] == code
        assert frame["error"]["message"] == "Scripted."
        assert frame.get("headers", {}) == headers
        assert len(answer.events) == 1
        recorded = outcome(server)
        assert (recorded.kind, recorded.status, recorded.code) == (OutcomeKind.REFUSED, status, code)
        still_usable(websocket, server)


# -- the handshake ---------------------------------------------------------------------------------


def test_handshake_refused_with_426_is_seen_as_status_426_by_the_client(serve: Serve) -> None:
    server = serve(Script(handshakes=[refuse_upgrade(426)], default=reply("Hi.")))
    with pytest.raises(InvalidStatus) as refused, ws_connect(server):
        pass
    assert refused.value.response.status_code == 426
    assert json.loads(refused.value.response.body or b"")["error"]["code"] == "upgrade_required"
    recorded = connection(server)
    assert recorded.status == 426
    assert recorded.exchanges == []


def test_handshake_refused_with_another_status_carries_its_headers_then_the_next_upgrade_succeeds(
    serve: Serve,
) -> None:
    script = Script(handshakes=[refuse_upgrade(503, headers={"retry-after": "3"})], default=reply("Hi."))
    server = serve(script)
    with pytest.raises(InvalidStatus) as refused, ws_connect(server):
        pass
    assert refused.value.response.status_code == 503
    assert refused.value.response.headers["retry-after"] == "3"
    with ws_connect(server) as websocket:
        assert ws_request(websocket).types[-1] == "response.completed"
    assert [recorded.status for recorded in server.connections] == [503, 101]


def test_a_repeated_refusal_refuses_every_upgrade(serve: Serve) -> None:
    server = serve(Script(handshakes=[refuse_upgrade(426, repeat=True)], default=reply("Hi.")))
    for _ in range(3):
        with pytest.raises(InvalidStatus), ws_connect(server):
            pass
    assert [recorded.status for recorded in server.connections] == [426, 426, 426]


def test_handshake_delay_holds_back_the_101(serve: Serve) -> None:
    server = serve(Script(handshakes=[accept_upgrade(delay=0.3)], default=reply("Hi.")))
    started = time.monotonic()
    with ws_connect(server) as websocket:
        assert time.monotonic() - started >= 0.29
        assert ws_request(websocket).types[-1] == "response.completed"
    assert connection(server).status == 101


def test_client_giving_up_during_the_handshake_delay_is_recorded_and_harmless(serve: Serve) -> None:
    server = serve(Script(handshakes=[accept_upgrade(delay=0.5)], default=reply("Hi.")))
    with pytest.raises(TimeoutError), ws_connect(server, open_timeout=0.1):
        pass
    gave_up = closed(server, 0)
    assert (gave_up.status, gave_up.closed_by, gave_up.close_code) == (None, "client", 1006)
    with ws_connect(server) as websocket:
        assert ws_request(websocket).types[-1] == "response.completed"


def test_handshake_turn_state_is_on_the_101_response(serve: Serve) -> None:
    server = serve(Script(handshakes=[accept_upgrade(turn_state="ts-ws-1")], default=reply("Hi.")))
    with ws_connect(server) as websocket:
        assert websocket.response is not None
        assert websocket.response.headers[TURN_STATE_HEADER] == "ts-ws-1"
    assert connection(server).response_headers[TURN_STATE_HEADER] == "ts-ws-1"


def test_handshake_rule_on_the_turn_state_header_the_client_sends_back(serve: Serve) -> None:
    script = Script(
        handshakes=[
            Handshake(refuse=503, repeat=True, when=Match(headers={TURN_STATE_HEADER: "*"})),
            accept_upgrade(turn_state="ts-1", repeat=True),
        ],
        default=reply("Hi."),
    )
    server = serve(script)
    with ws_connect(server) as websocket:
        assert websocket.response is not None
        token = websocket.response.headers[TURN_STATE_HEADER]
    with pytest.raises(InvalidStatus), ws_connect(server, headers={TURN_STATE_HEADER: token}):
        pass
    assert connection(server, 1).handshake_headers[TURN_STATE_HEADER] == "ts-1"


@pytest.mark.parametrize("requests", [1, 3])
def test_close_after_n_requests_closes_the_socket_with_a_close_frame(serve: Serve, requests: int) -> None:
    server = serve(Script(handshakes=[accept_upgrade(close_after=requests)], default=reply("Hi.")))
    with ws_connect(server) as websocket:
        for _ in range(requests):
            assert ws_request(websocket).types[-1] == "response.completed"
        after = ws_read(websocket, timeout=2)
    assert isinstance(after.closed, ConnectionClosedOK)
    assert after.closed.rcvd is not None and after.closed.rcvd.code == 1000
    recorded = closed(server)
    assert (recorded.closed_by, recorded.close_code, len(recorded.exchanges)) == ("server", 1000, requests)


def test_close_after_n_requests_can_use_a_chosen_code_or_a_bare_tcp_close(serve: Serve) -> None:
    script = Script(
        handshakes=[accept_upgrade(close_after=1, close_code=4001), accept_upgrade(close_after=1, close="tcp")],
        default=reply("Hi."),
    )
    server = serve(script)
    with ws_connect(server) as websocket:
        ws_request(websocket)
        with_code = ws_read(websocket, timeout=2)
    with ws_connect(server) as websocket:
        ws_request(websocket)
        bare = ws_read(websocket, timeout=2)
    assert with_code.closed is not None and with_code.closed.rcvd is not None
    assert with_code.closed.rcvd.code == 4001
    assert bare.closed is not None and bare.closed.rcvd is None and bare.close_code == 1006
    assert (closed(server, 0).close_code, closed(server, 1).closed_by) == (4001, "tcp")


# -- malformed and unsupported frames --------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code", "param"),
    [
        ("{not json", "invalid_json", None),
        (json.dumps([1, 2]), "unsupported_frame_type", "type"),
        (
            json.dumps({"type": "response.inject", "response_id": "resp_x", "input": []}),
            "unsupported_frame_type",
            "type",
        ),
        (json.dumps({"type": "response.steer", "input": "faster"}), None, "previous_response_id"),
        (json.dumps({"type": "response.create", **BODY, "tools": 5}), None, "tools"),
        (json.dumps({"type": "response.create", **BODY, "input": 5}), None, "input"),
    ],
    ids=[
        "not-json",
        "json-array",
        "response-inject",
        "steer-naming-no-response",
        "tools-not-a-list",
        "input-not-a-list",
    ],
)
def test_bad_frame_gets_an_error_frame_with_status_400_and_the_socket_stays_usable(
    serve: Serve, frame: str, code: str | None, param: str | None
) -> None:
    server = serve(Script(default=reply("Hi.")))
    with ws_connect(server) as websocket:
        answer = ws_send_raw(websocket, frame)
        error = answer.last
        assert (error["type"], error["status"]) == ("error", 400)
        assert error["error"]["type"] == "invalid_request_error"
        if code is not None:
            assert error["error"]["code"] == code
        assert error["error"]["param"] == param
        recorded = outcome(server)
        assert (recorded.kind, recorded.status) == (OutcomeKind.REFUSED, 400)
        still_usable(websocket, server)


def test_unknown_previous_response_id_gets_previous_response_not_found_and_the_socket_stays_usable(
    serve: Serve,
) -> None:
    server = serve(Script(default=reply("Hi.")))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket, body(previous_response_id="resp_unknown", input=[]))
        error = answer.last
        assert (error["type"], error["status"]) == ("error", 400)
        assert error["error"]["code"] == PREVIOUS_RESPONSE_NOT_FOUND
        assert error["error"]["param"] == "previous_response_id"
        assert outcome(server).code == PREVIOUS_RESPONSE_NOT_FOUND
        first = ws_request(websocket)
        known = first.last["response"]["id"]
        follow_up = ws_request(websocket, body(previous_response_id=known, input=[{"role": "user", "content": "And?"}]))
        assert follow_up.types[-1] == "response.completed"
        assert finished(server).incremental


# -- a client that vanishes ------------------------------------------------------------------------


def test_client_that_vanishes_mid_stream_without_a_close_frame_does_not_break_the_server(serve: Serve) -> None:
    slow = reply(text("abcdefghij", chunks=10)).delayed(each=0.05)
    server = serve(Script().add(slow).add(reply("Hi."), repeat=True))
    with ws_connect(server) as websocket:
        websocket.send(json.dumps({"type": "response.create", **BODY}))
        assert json.loads(websocket.recv(timeout=5))["type"] == "response.created"
        reset_connection(websocket.socket)
    gone = outcome(server)
    assert gone.kind is OutcomeKind.DISCONNECTED
    recorded = closed(server)
    assert (recorded.closed_by, recorded.close_code) == ("client", 1006)
    with ws_connect(server) as websocket:
        assert ws_request(websocket).types[-1] == "response.completed"
    assert len(server.connections) == 2


def test_client_that_vanishes_while_idle_is_recorded_as_closed_by_the_client(serve: Serve) -> None:
    server = serve(Script(default=reply("Hi.")))
    with ws_connect(server) as websocket:
        assert ws_request(websocket).types[-1] == "response.completed"
        reset_connection(websocket.socket)
    recorded = closed(server)
    assert recorded.closed_by == "client"
    assert recorded.close_code in (1005, 1006)  # uvicorn reports a lost connection after the handshake as 1005
