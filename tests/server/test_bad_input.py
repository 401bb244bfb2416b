"""Bad input gets a clear 400 (an `error` frame over a WebSocket) naming the field, never a 500, a traceback or a
dropped socket; big integers come back exactly; nothing from a request reaches a header unless it is a valid
header value. Each family runs over HTTP and WebSocket, straight and through the recording proxy
(`UpstreamSource` in front of another fake server), and the server answers a normal request afterwards.

The `serve` fixture fails any test whose servers logged an error (a traceback)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.protocol.jsontext import MAX_DEPTH
from rrkit.relay import UpstreamSource
from rrkit.script import Script, reply
from rrkit.server import FakeServer

from .faultclient import (
    BODY,
    USER,
    Serve,
    loopback_client,
    post_raw,
    post_sse,
    ws_connect,
    ws_request,
    ws_send_raw,
)

SCRIPT = Script(default=reply("Hi."))
HTTP_FIELDS = {"type", "code", "message", "param"}
TIMEOUT = httpx.Timeout(5.0)


@pytest.fixture(params=["direct", "proxied"])
def via(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(serve: Serve, via: str) -> Iterator[FakeServer]:
    """The server a client talks to: a fake server, or a recording proxy (`UpstreamSource`) in front of one."""
    upstream = serve(SCRIPT)
    if via == "direct":
        yield upstream
        return
    front = serve(source=UpstreamSource(upstream.http_url))
    front.upstream = upstream  # type: ignore[attr-defined]
    yield front


def upstream_of(server: FakeServer) -> FakeServer | None:
    return getattr(server, "upstream", None)


# -- clients ---------------------------------------------------------------------------------------------


def raw_json(*, frame: bool = False, **fields: str) -> str:
    """A request as JSON text: the usual body, with `fields` given as raw JSON text (NaN, lone surrogate
    escapes, ...) in place of (or besides) the usual fields."""
    base: dict[str, Any] = {"type": "response.create", **BODY} if frame else dict(BODY)
    parts = [f"{json.dumps(key)}:{json.dumps(value)}" for key, value in base.items() if key not in fields]
    parts += [f"{json.dumps(key)}:{text}" for key, text in fields.items()]
    return "{" + ",".join(parts) + "}"


def http_error(server: FakeServer, content: bytes) -> dict[str, Any]:
    """POST the bytes; the answer must be an OpenAI-shaped 400. Returns its `error` object."""
    response = post_raw(server, content)
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    assert set(error) == HTTP_FIELDS
    assert error["type"] == "invalid_request_error"
    assert "Traceback" not in error["message"]
    still_answers_http(server)
    return dict(error)


def ws_error(server: FakeServer, text: str) -> dict[str, Any]:
    """Send the frame; the answer must be an `error` frame with status 400, and the socket must then answer a
    normal request. Returns the frame's `error` object."""
    with ws_connect(server) as websocket:
        answer = ws_send_raw(websocket, text)
        assert answer.closed is None and not answer.timed_out, answer
        frame = answer.last
        assert (frame["type"], frame["status"]) == ("error", 400), frame
        assert frame["error"]["type"] == "invalid_request_error"
        again = ws_request(websocket)
        assert again.types[-1] == "response.completed", again.types
    return dict(frame["error"])


def still_answers_http(server: FakeServer) -> None:
    result = post_sse(server)
    assert result.status == 200 and result.types[-1] == "response.completed", result


def rejected_before_upstream(server: FakeServer) -> None:
    """A request the proxy refuses never reaches the upstream: it saw only the normal follow-up requests."""
    upstream = upstream_of(server)
    if upstream is not None:
        sent = [exchange.wire_request for exchange in upstream.exchanges]
        assert sent and all(request is not None and set(request) - {"type"} == set(BODY) for request in sent), sent
        assert all(request is not None and request["input"] == [USER] for request in sent)


def both_transports(server: FakeServer, fields: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    http = http_error(server, raw_json(**fields).encode())
    ws = ws_error(server, raw_json(frame=True, **fields))
    rejected_before_upstream(server)
    return http, ws


# -- JSON that cannot round-trip ------------------------------------------------------------------------

SCHEMA_WITH_KEY = '[{"type":"function","name":"f","parameters":{"type":"object","properties":{"\\ud800":{}}}}]'
SCHEMA_WITH_VALUE = '[{"type":"function","name":"f","description":"bad \\udfff end","parameters":{}}]'


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"instructions": '"\\ud800"'}, "instructions"),
        ({"previous_response_id": '"resp_\\ud800"'}, "previous_response_id"),
        ({"input": '[{"type":"message","role":"user","content":"hi \\udc00"}]'}, "input[0].content"),
        ({"client_metadata": '{"\\udbff": "x"}'}, "client_metadata.\\udbff"),
        ({"tools": SCHEMA_WITH_KEY}, "tools[0].parameters.properties.\\ud800"),
        ({"tools": SCHEMA_WITH_VALUE}, "tools[0].description"),
    ],
    ids=["instructions", "previous-response-id", "input-content", "metadata-key", "schema-key", "schema-value"],
)
def test_a_lone_surrogate_anywhere_gets_400_naming_its_field_path(
    server: FakeServer, fields: dict[str, str], param: str
) -> None:
    for error in both_transports(server, fields):
        assert error["param"] == param
        assert error["code"] == "invalid_json"
        assert "lone surrogate" in error["message"]


@pytest.mark.parametrize(
    ("fields", "param", "says"),
    [
        ({"temperature": "NaN"}, "temperature", "NaN"),
        ({"temperature": "Infinity"}, "temperature", "Infinity"),
        ({"top_p": "-Infinity"}, "top_p", "-Infinity"),
        (
            {"tools": '[{"type":"function","name":"f","parameters":{"maximum":NaN}}]'},
            "tools[0].parameters.maximum",
            "NaN",
        ),
        ({"temperature": "1e400"}, "temperature", "out of range"),
    ],
    ids=["nan-temperature", "infinity", "minus-infinity", "nan-in-schema", "overflowing-number"],
)
def test_nan_and_infinity_get_400_naming_the_field(
    server: FakeServer, fields: dict[str, str], param: str, says: str
) -> None:
    for error in both_transports(server, fields):
        assert error["param"] == param
        assert says in error["message"]


def nested(depth: int) -> str:
    """A tool schema `depth` objects deep."""
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def test_a_schema_nested_300_levels_gets_400_saying_the_depth_limit(server: FakeServer) -> None:
    tools = f'[{{"type":"function","name":"f","parameters":{nested(300)}}}]'
    for error in both_transports(server, {"tools": tools}):
        assert error["param"] == "tools"
        assert f"deeper than {MAX_DEPTH} levels" in error["message"]


def test_nesting_at_the_limit_is_accepted_and_one_level_more_is_not(server: FakeServer) -> None:
    # The body is level 1, `tools` 2, the tool 3: a schema of MAX_DEPTH - 3 objects reaches the limit exactly.
    at_limit = f'[{{"type":"function","name":"f","parameters":{nested(MAX_DEPTH - 3)}}}]'
    with loopback_client(TIMEOUT) as client:
        response = client.post(server.http_url + "/responses", content=raw_json(tools=at_limit).encode())
    assert response.status_code == 200
    with ws_connect(server) as websocket:
        assert ws_send_raw(websocket, raw_json(frame=True, tools=at_limit)).types[-1] == "response.completed"
    beyond = f'[{{"type":"function","name":"f","parameters":{nested(MAX_DEPTH - 2)}}}]'
    http = http_error(server, raw_json(tools=beyond).encode())
    assert http["param"] == "tools"


def test_a_hundred_thousand_nested_lists_get_a_clean_400_quickly(server: FakeServer) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    start = time.monotonic()
    http, ws = both_transports(server, {"input": deep})
    assert time.monotonic() - start < 10  # two 400s and two normal requests; a RecursionError never surfaces
    for error in (http, ws):
        assert error["param"] == "input"
        assert f"deeper than {MAX_DEPTH} levels" in error["message"]


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"{not json", "not valid JSON"), (b'{"model": "\xff"}', "not valid UTF-8"), (b"", "not valid JSON")],
    ids=["not-json", "not-utf8", "empty"],
)
def test_a_body_that_is_not_json_gets_400(server: FakeServer, content: bytes, says: str) -> None:
    error = http_error(server, content)
    assert says in error["message"] and error["param"] is None


# -- big integers ----------------------------------------------------------------------------------------

BIG = 2**70
TOOLS = [
    {
        "type": "function",
        "name": "f",
        "description": None,
        "parameters": {"type": "integer", "maximum": BIG, "minimum": -BIG, "default": 2**64},
        "strict": False,
    }
]
"""A function tool with every field it is echoed with (`strict`, `description`), so that the echo equals it."""


def test_a_big_integer_round_trips_exactly_through_the_echoed_tools_over_sse(server: FakeServer) -> None:
    result = post_sse(server, {**BODY, "tools": TOOLS})
    assert result.status == 200
    for event in result.events[:1] + result.events[-1:]:
        assert event["response"]["tools"] == TOOLS
    assert result.events[-1]["response"]["tools"][0]["parameters"]["maximum"] == BIG


def test_a_big_integer_round_trips_exactly_in_a_json_response_object(server: FakeServer) -> None:
    with loopback_client(TIMEOUT) as client:
        response = client.post(server.http_url + "/responses", json={**BODY, "stream": False, "tools": TOOLS})
    assert response.status_code == 200
    assert json.loads(response.content)["tools"] == TOOLS


def test_a_big_integer_round_trips_exactly_over_a_websocket(server: FakeServer) -> None:
    with ws_connect(server) as websocket:
        answer = ws_request(websocket, {**BODY, "tools": TOOLS})
    assert answer.types[-1] == "response.completed"
    assert answer.last["response"]["tools"] == TOOLS


def test_long_digit_runs_in_strings_are_kept_as_sent(server: FakeServer) -> None:
    metadata = {"trace": "1234567890123456789012345", "at": 1_700_000_000_123_456_789}
    result = post_sse(server, {**BODY, "client_metadata": metadata})
    assert result.types[-1] == "response.completed"
    assert server.exchanges[0].wire_request is not None
    assert server.exchanges[0].wire_request["client_metadata"] == metadata


# -- field types -----------------------------------------------------------------------------------------

WRONG_TYPES = [
    ("stream", "yes", "invalid_type"),
    ("stream", 1, "invalid_type"),
    ("store", "false", "invalid_type"),
    ("parallel_tool_calls", "no", "invalid_type"),
    ("generate", "no", "invalid_type"),
    ("model", 5, "invalid_type"),
    ("instructions", ["a"], "invalid_type"),
    ("tools", {}, "invalid_type"),
    ("input", 5, "invalid_type"),
    ("temperature", "hot", "invalid_type"),
    ("temperature", True, "invalid_type"),
    ("temperature", 2.5, "decimal_above_max_value"),
    ("temperature", -0.1, "decimal_below_min_value"),
    ("top_p", 1.5, "decimal_above_max_value"),
    ("top_p", "1", "invalid_type"),
    ("max_output_tokens", 0, "integer_below_min_value"),
    ("max_output_tokens", -5, "integer_below_min_value"),
    ("max_output_tokens", 2.5, "invalid_type"),
    ("max_output_tokens", "100", "invalid_type"),
    ("max_output_tokens", True, "invalid_type"),
]


@pytest.mark.parametrize(("field", "value", "code"), WRONG_TYPES, ids=[f"{f}={v!r}" for f, v, _ in WRONG_TYPES])
def test_a_wrong_typed_field_gets_400_naming_the_param(server: FakeServer, field: str, value: Any, code: str) -> None:
    for error in both_transports(server, {field: json.dumps(value)}):
        assert error["param"] == field
        assert error["code"] == code
        assert f"'{field}'" in error["message"]


@pytest.mark.parametrize("flag", [True, False])
def test_parallel_tool_calls_is_echoed_as_sent(server: FakeServer, flag: bool) -> None:
    result = post_sse(server, {**BODY, "parallel_tool_calls": flag})
    assert result.events[-1]["response"]["parallel_tool_calls"] is flag


def test_sampling_fields_in_range_are_accepted(server: FakeServer) -> None:
    result = post_sse(server, {**BODY, "temperature": 0, "top_p": 1, "max_output_tokens": 2**40})
    assert result.types[-1] == "response.completed"


def test_lenient_server_coerces_what_the_old_server_accepted(serve: Serve) -> None:
    server = serve(SCRIPT, lenient=True)
    result = post_sse(server, {**BODY, "stream": "yes", "parallel_tool_calls": "no", "temperature": "0.5"})
    assert result.status == 200 and result.headers["content-type"].startswith("text/event-stream")
    assert result.events[-1]["response"]["parallel_tool_calls"] is False
    with ws_connect(server) as websocket:
        warmup = ws_request(websocket, {**BODY, "generate": "false"})
    assert warmup.types == ["response.created", "response.completed"]
    assert warmup.last["response"]["output"] == []


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"temperature": '"hot"'}, "temperature"),
        ({"temperature": "3"}, "temperature"),
        ({"temperature": "NaN"}, "temperature"),
        ({"top_p": '"nan"'}, "top_p"),
    ],
    ids=["not-a-number", "out-of-range", "nan-literal", "nan-string"],
)
def test_lenient_server_still_refuses_what_cannot_coerce_out_of_range_and_nan(
    serve: Serve, fields: dict[str, str], param: str
) -> None:
    server = serve(SCRIPT, lenient=True)
    for error in both_transports(server, fields):
        assert error["param"] == param


# -- headers ---------------------------------------------------------------------------------------------

BAD_HEADER_MODELS = ["gpt-模型", "gpt\r\nx-injected: yes", "gpt\nx-injected: yes", "gpt\x00nul", "gpt\x7f", " gpt"]


@pytest.mark.parametrize("model", BAD_HEADER_MODELS, ids=["non-latin1", "crlf", "lf", "nul", "del", "leading-space"])
@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_a_model_that_is_no_header_value_is_echoed_in_the_body_but_never_sent_as_a_header(
    server: FakeServer, model: str, stream: bool
) -> None:
    if stream:
        result = post_sse(server, {**BODY, "model": model})
        status, headers, echoed = result.status, result.headers, result.events[-1]["response"]["model"]
    else:
        with loopback_client(TIMEOUT) as client:
            response = client.post(server.http_url + "/responses", json={**BODY, "model": model, "stream": False})
        status, headers, echoed = response.status_code, response.headers, response.json()["model"]
    assert status == 200
    assert "openai-model" not in headers and "x-injected" not in headers
    assert echoed == model
    still_answers_http(server)


def test_a_model_that_is_a_header_value_is_sent_as_openai_model(server: FakeServer) -> None:
    result = post_sse(server, {**BODY, "model": "gpt-5.1 codex\tmax"})
    assert result.headers["openai-model"] == "gpt-5.1 codex\tmax"


@pytest.mark.parametrize("model", BAD_HEADER_MODELS[:2], ids=["non-latin1", "crlf"])
def test_a_model_that_is_no_header_value_is_echoed_over_a_websocket(server: FakeServer, model: str) -> None:
    with ws_connect(server) as websocket:
        answer = ws_request(websocket, {**BODY, "model": model})
        assert answer.last["response"]["model"] == model
        assert ws_request(websocket).types[-1] == "response.completed"


@pytest.mark.parametrize("command", ["serve", "record"])
def test_cli_serve_and_record_offer_lenient(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0 and "--lenient" in result.output


def test_a_request_without_a_model_gets_400_missing_required_parameter(server: FakeServer) -> None:
    without = {key: value for key, value in BODY.items() if key != "model"}
    http = http_error(server, json.dumps(without).encode())
    ws = ws_error(server, json.dumps({"type": "response.create", **without}))
    for error in (http, ws):
        assert (error["param"], error["code"]) == ("model", "missing_required_parameter")
        assert error["message"] == "Missing required parameter: 'model'."


def test_a_stored_prompt_may_stand_for_the_model(server: FakeServer) -> None:
    without = {key: value for key, value in BODY.items() if key != "model"}
    result = post_sse(server, {**without, "prompt": {"id": "pmpt_1"}})
    assert result.events[-1]["type"] == "response.completed"
