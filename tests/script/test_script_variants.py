"""Every turn-state, error-frame and retry-header variant a script can ask for, seen by real loopback clients."""

from __future__ import annotations

from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from rrkit.protocol import TURN_STATE_HEADER
from rrkit.protocol.events import METADATA as METADATA_FRAME
from rrkit.script import (
    Handshake,
    Script,
    accept_upgrade,
    error_frame,
    load_script,
    parse_script,
    refuse_upgrade,
    reject,
    reply,
)

from ..server.faultclient import Serve, body, finished, post_sse, ws_connect, ws_read, ws_request

METADATA = {"session_id": "s-1", "x-codex-turn-state": "ts-echoed"}


# -- turn state: on the HTTP response, on the 101, in a response.metadata frame ---------------------


def test_turn_state_on_the_http_response_is_a_header(serve: Serve) -> None:
    server = serve(Script().add(reply("hi", turn_state="ts-http"), repeat=True))
    result = post_sse(server)
    assert result.headers[TURN_STATE_HEADER] == "ts-http"
    assert result.types[-1] == "response.completed"


def test_turn_state_on_the_101_is_a_handshake_header(serve: Serve) -> None:
    server = serve(Script(default=reply("hi")).add_handshake(accept_upgrade(turn_state="ts-101")))
    with ws_connect(server) as websocket:
        assert websocket.response is not None
        assert websocket.response.headers[TURN_STATE_HEADER] == "ts-101"
        assert ws_request(websocket).types[-1] == "response.completed"


def test_metadata_turn_state_is_a_frame_before_the_response_events_over_websocket(serve: Serve) -> None:
    server = serve(Script().add(reply("hi", metadata_turn_state="ts-frame"), repeat=True))
    with ws_connect(server) as websocket:
        result = ws_request(websocket)
    assert result.events[0] == {"type": METADATA_FRAME, "headers": {TURN_STATE_HEADER: "ts-frame"}}
    assert result.types[1] == "response.created" and result.types[-1] == "response.completed"
    exchange = finished(server)
    assert exchange.outcome is not None and exchange.outcome.kind.value == "completed"


def test_metadata_turn_state_is_not_sent_over_http(serve: Serve) -> None:
    server = serve(Script().add(reply("hi").with_metadata_turn_state("ts-frame"), repeat=True))
    result = post_sse(server)
    assert METADATA_FRAME not in result.types
    assert TURN_STATE_HEADER not in result.headers


def test_metadata_turn_state_from_yaml(serve: Serve) -> None:
    script = parse_script({"responses": [{"repeat": True, "metadata_turn_state": "ts-y", "output": [{"text": "x"}]}]})
    server = serve(script)
    with ws_connect(server) as websocket:
        assert ws_request(websocket).events[0]["headers"] == {TURN_STATE_HEADER: "ts-y"}


# -- client_metadata sent back -------------------------------------------------------------------


def test_exchange_client_metadata_is_what_the_http_body_carried(serve: Serve) -> None:
    server = serve(Script(default=reply("hi")))
    post_sse(server, body(client_metadata=METADATA))
    post_sse(server)
    assert finished(server, 0).client_metadata == METADATA
    assert finished(server, 1).client_metadata == {}


def test_exchange_client_metadata_is_what_the_websocket_frame_carried(serve: Serve) -> None:
    server = serve(Script(default=reply("hi")))
    with ws_connect(server) as websocket:
        ws_request(websocket, body(client_metadata=METADATA))
    assert finished(server).client_metadata == METADATA


# -- error frames: with and without status, with headers ----------------------------------------


def test_reject_over_websocket_is_an_error_frame_with_status_and_headers(serve: Serve) -> None:
    server = serve(Script().add(reject(429, "rate_limit_exceeded", retry_after=2, retry_after_ms=1500)))
    with ws_connect(server) as websocket:
        frame = ws_request(websocket).last
    assert frame["type"] == "error" and frame["status"] == 429
    assert frame["error"]["code"] == "rate_limit_exceeded"
    assert frame["headers"] == {"retry-after": "2", "retry-after-ms": "1500"}


def test_error_frame_without_status_has_no_status_key_and_keeps_the_socket_open(serve: Serve) -> None:
    script = Script().add(error_frame("websocket_connection_limit_reached", "limit")).add(reply("again"))
    server = serve(script)
    with ws_connect(server) as websocket:
        frame = ws_request(websocket).last
        assert frame == {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": "websocket_connection_limit_reached",
                "message": "limit",
                "param": None,
            },
        }
        assert ws_request(websocket).types[-1] == "response.completed"


def test_error_frame_after_output_items_then_a_cut(serve: Serve) -> None:
    nine_events = error_frame("context_length_exceeded", None, reply("partial").output[0])
    server = serve(Script().add(nine_events.drop_after(9)))
    with ws_connect(server) as websocket:
        assert ws_request(websocket).last["type"] == "error"
        assert ws_read(websocket, timeout=2).closed is not None
    exchange = finished(server)
    assert exchange.outcome is not None and exchange.outcome.kind.value == "dropped"
    assert "response.output_item.done" in exchange.event_types and exchange.event_types[-1] == "error"


def test_error_frame_message_defaults_from_the_catalogue(serve: Serve) -> None:
    server = serve(Script().add(error_frame("context_length_exceeded")))
    with ws_connect(server) as websocket:
        frame = ws_request(websocket).last
    assert "context window" in frame["error"]["message"]
    assert "status" not in frame


def test_error_frame_with_status_and_retry_after(serve: Serve) -> None:
    server = serve(Script().add(error_frame("rate_limit_exceeded", "slow", status=429, retry_after=1)))
    with ws_connect(server) as websocket:
        frame = ws_request(websocket).last
    assert frame["status"] == 429 and frame["headers"] == {"retry-after": "1"}
    assert frame["error"]["type"] == "rate_limit_error"


def test_error_frame_over_http_is_an_sse_error_event(serve: Serve) -> None:
    server = serve(Script().add(error_frame("server_error", "oops")))
    result = post_sse(server)
    assert result.events[-1]["type"] == "error"
    assert result.events[-1]["error"]["code"] == "server_error"


def test_error_frame_and_retry_headers_from_yaml(tmp_path: Path, serve: Serve) -> None:
    path = tmp_path / "variants.yaml"
    path.write_text(
        """responses:
  - error_frame: {code: previous_response_not_found, message: "gone"}
  - error_frame: {status: 503, code: server_error, retry_after: 1, retry_after_ms: 250}
  - reject: {status: 429, code: rate_limit_exceeded, retry_after_ms: 800}
""",
        encoding="utf-8",
    )
    server = serve(load_script(path))
    with ws_connect(server) as websocket:
        first = ws_request(websocket).last
        assert "status" not in first and first["error"]["code"] == "previous_response_not_found"
        second = ws_request(websocket).last
        assert second["status"] == 503 and second["headers"] == {"retry-after": "1", "retry-after-ms": "250"}
    third = post_sse(server)
    assert third.status == 429 and third.headers["retry-after-ms"] == "800" and "retry-after" not in third.headers


def test_error_frame_is_one_ending_among_others() -> None:
    with pytest.raises(ValueError, match="sets fail and error_frame"):
        parse_script({"responses": [{"error_frame": {"code": "x"}, "fail": {"code": "y"}}]})


# -- retry-after and retry-after-ms ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"retry_after": 2}, {"retry-after": "2"}),
        ({"retry_after": 0.5}, {"retry-after": "0.5"}),
        ({"retry_after_ms": 750}, {"retry-after-ms": "750"}),
        ({"retry_after": 1, "retry_after_ms": 1000}, {"retry-after": "1", "retry-after-ms": "1000"}),
    ],
)
def test_reject_over_http_carries_retry_after_and_retry_after_ms(
    serve: Serve, kwargs: dict[str, float], expected: dict[str, str]
) -> None:
    server = serve(Script().add(reject(503, "server_error", **kwargs)))  # type: ignore[arg-type]
    result = post_sse(server)
    assert result.status == 503
    sent = {name: result.headers[name] for name in ("retry-after", "retry-after-ms") if name in result.headers}
    assert sent == expected


def test_refused_upgrade_carries_retry_after_headers(serve: Serve) -> None:
    server = serve(Script(default=reply("hi")).add_handshake(refuse_upgrade(503, retry_after=1, retry_after_ms=40)))
    with pytest.raises(InvalidStatus) as refused, ws_connect(server):
        pass
    response = refused.value.response
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1" and response.headers["retry-after-ms"] == "40"
    assert server.connections[0].response_headers["retry-after"] == "1"


def test_refused_upgrade_retry_after_from_yaml() -> None:
    handshake = parse_script({"handshakes": [{"refuse": 429, "retry_after": 3}]}).handshakes[0]
    assert isinstance(handshake, Handshake) and handshake.all_refuse_headers == {"retry-after": "3"}


def test_an_error_frame_carries_more_error_fields_as_a_usage_limit_does(serve: Serve) -> None:
    limit = {"plan_type": "plus", "resets_at": 1767225600}
    script = Script().add(
        error_frame(None, "You've hit your usage limit.", status=429, type="usage_limit_reached", error_fields=limit)
    )
    server = serve(script)
    with ws_connect(server) as websocket:
        frame = ws_request(websocket).last
    assert frame["status"] == 429
    assert frame["error"] == {
        "type": "usage_limit_reached",
        "code": None,
        "message": "You've hit your usage limit.",
        "param": None,
        **limit,
    }


def test_error_fields_in_yaml_reach_the_frame(tmp_path: Path) -> None:
    path = tmp_path / "limit.yaml"
    path.write_text(
        "name: limit\ndefault:\n  error_frame:\n    status: 429\n    type: usage_limit_reached\n"
        "    error_fields: {plan_type: plus, resets_at: 1767225600}\n"
    )
    frame = load_script(path).default.error_frame  # type: ignore[union-attr]
    assert frame is not None and frame.error_fields == {"plan_type": "plus", "resets_at": 1767225600}
