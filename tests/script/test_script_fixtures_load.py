"""Every shipped fixture loads, is served, and gives a real client the outcome its `expect` states;
and the loader's errors name the file, the line, the place in the script and the problem."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from rrkit.protocol import OutcomeKind
from rrkit.script import ScriptError, load_script
from rrkit.server import FakeServer

from ..server.faultclient import WAIT, Serve, finished, post_sse, ws_connect, ws_request

FIXTURES_DIR = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURES = sorted(FIXTURES_DIR.glob("*.yaml"))
OUTCOMES = {kind.value for kind in OutcomeKind} - {OutcomeKind.DISCONNECTED.value}
EXPECT_KEYS = {"outcome", "first_attempt", "code", "status", "reason", "transport"}
STALL_TIMEOUT = 0.5  # the client's idle timeout when a stall is expected


@dataclass(frozen=True)
class Seen:
    """The outcome of one attempt, as the client saw it."""

    outcome: str
    code: str | None = None
    status: int | None = None
    reason: str | None = None
    handshake: bool = False  # refused at the WebSocket upgrade, before any request


def _from_events(events: list[dict[str, Any]]) -> Seen:
    last = events[-1] if events else {}
    kind = last.get("type")
    if kind == "response.completed":
        return Seen("completed")
    if kind == "response.failed":
        return Seen("failed", code=last["response"]["error"]["code"])
    if kind == "response.incomplete":
        return Seen("incomplete", reason=last["response"]["incomplete_details"]["reason"])
    if kind == "error" and "status" in last:  # a WebSocket error frame: refused before the stream
        return Seen("refused", code=last["error"].get("code"), status=last["status"])
    if kind == "error":
        return Seen("errored", code=last.get("code"))
    return Seen("dropped")  # ended as a whole body does, before any terminal event: a cut stream to a client


def attempt_http(server: FakeServer, read_timeout: float) -> Seen:
    result = post_sse(server, read_timeout=read_timeout)
    if result.status != 200:
        return Seen("refused", code=result.json["error"].get("code"), status=result.status)
    if isinstance(result.error, httpx.ReadTimeout):
        return Seen("stalled")
    if isinstance(result.error, httpx.RemoteProtocolError):
        return Seen("dropped")
    assert result.error is None, result.error
    return _from_events(result.events)


def attempt_ws(server: FakeServer, read_timeout: float) -> Seen:
    try:
        with ws_connect(server) as websocket:
            answer = ws_request(websocket, timeout=read_timeout)
    except InvalidStatus as refused:
        return Seen("refused", status=refused.response.status_code, handshake=True)
    if answer.timed_out:
        return Seen("stalled")
    if answer.closed is not None:
        return Seen("dropped")
    return _from_events(answer.events)


def attempt(server: FakeServer, transport: str, read_timeout: float) -> Seen:
    return attempt_http(server, read_timeout) if transport == "http" else attempt_ws(server, read_timeout)


def expected_first(expect: dict[str, Any], transport: str) -> str:
    if expect.get("transport") not in (None, transport):
        return str(expect["outcome"])  # the fault does not apply to this transport
    return str(expect.get("first_attempt", expect["outcome"]))


def assert_details(seen: Seen, expect: dict[str, Any]) -> None:
    """`code`, `status` and `reason` describe the attempt that does not complete."""
    for key in ("code", "status", "reason"):
        if key in expect:
            assert getattr(seen, key) == expect[key], f"{key}: {seen}"


def assert_server_agrees(server: FakeServer, seen: Seen) -> None:
    if seen.handshake:
        assert server.connections[-1].status == seen.status
        assert server.exchanges == []
        return
    recorded = finished(server)
    assert recorded.outcome is not None
    assert recorded.outcome.kind.value == seen.outcome
    if seen.status is not None:
        assert recorded.outcome.status == seen.status


@pytest.fixture(params=FIXTURES, ids=[path.stem for path in FIXTURES])
def fixture_path(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


def test_fixtures_cover_every_fault_family() -> None:
    names = {path.stem for path in FIXTURES}
    families = {
        "text",
        "tool-loop",
        "custom-tool-call",
        "drop-mid-stream",
        "ws-close-frame",
        "stall",
        "delays",
        "incomplete",
        "sse-error-event",
        "http-429-retry-after",
        "http-500",
        "ws-refuse-426",
        "ws-refuse-503",
        "ws-connection-limit",
        "ws-close-after",
        "turn-state",
    }
    assert families <= names
    assert len([name for name in names if name.startswith("failed-")]) >= 3
    readme = (FIXTURES_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"`{path.name}`" in readme for path in FIXTURES), "fixtures/README.md lists every fixture"


def test_fixture_has_a_name_a_description_and_a_flat_expect(fixture_path: Path) -> None:
    script = load_script(fixture_path)
    assert script.name and script.description
    expect = script.expect.model_dump(mode="json", exclude_none=True)
    assert set(expect) <= EXPECT_KEYS, f"unknown expect keys: {set(expect) - EXPECT_KEYS}"
    assert expect["outcome"] in OUTCOMES
    if "first_attempt" in expect:
        assert expect["first_attempt"] in OUTCOMES
        assert expect["first_attempt"] != expect["outcome"]
    assert expect.get("transport") in (None, "ws", "http")
    assert all(not isinstance(value, dict | list) for value in expect.values())


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_fixture_gives_the_expected_first_attempt_and_a_retry_reaches_the_final_outcome(
    serve: Serve, fixture_path: Path, transport: str
) -> None:
    expect = load_script(fixture_path).expect.model_dump(mode="json", exclude_none=True)
    server = serve(load_script(fixture_path))
    first = expected_first(expect, transport)
    seen = attempt(server, transport, STALL_TIMEOUT if first == "stalled" else WAIT)
    assert seen.outcome == first, seen
    if seen.outcome != "completed":
        assert_details(seen, expect)
    assert_server_agrees(server, seen)

    if first != expect["outcome"]:  # a client that retries (426: over HTTP, for good)
        retry_transport = "http" if seen.status == 426 and transport == "ws" else transport
        final = attempt(server, retry_transport, WAIT)
        assert final.outcome == expect["outcome"], final


# -- loader errors ---------------------------------------------------------------------------------

VALID_START = "name: broken\nresponses:\n  - output:\n      - text: hi\n"


def write(tmp_path: Path, content: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(ScriptError) as raised:
        load_script(path)
    message = str(raised.value)
    assert str(path) in message
    return message


def test_wrong_field_type_names_the_file_line_place_and_problem(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_START + "    fault:\n      drop_after: soon\n")
    message = load_error(path)
    assert "line 6" in message
    assert "responses[0].fault.drop_after" in message
    assert "valid integer" in message


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ('{x-limit: "a\\r\\nx-injected: yes"}', "cannot be sent as a header"),
        ('{x-limit: "snow \u2603"}', "printable ASCII only"),
        ('{"x limit": "1"}', "is not a header name"),
    ],
)
def test_a_header_no_response_can_carry_is_refused_at_load_naming_its_place(
    tmp_path: Path, headers: str, said: str
) -> None:
    path = write(tmp_path, VALID_START + f"    headers: {headers}\n")
    message = load_error(path)
    assert "line 5" in message and "responses[0].headers" in message and said in message


def test_unknown_key_names_the_file_line_place_and_suggests_the_known_key(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_START + "    fault:\n      dorp_after: 3\n")
    message = load_error(path)
    assert "line 6" in message
    assert "responses[0].fault.dorp_after" in message
    assert "unknown key" in message
    assert "drop_after" in message.split("responses[0].fault.dorp_after", 1)[1]


def test_unknown_key_inside_an_output_item_names_its_place(tmp_path: Path) -> None:
    content = "responses:\n  - output:\n      - type: function_call\n        name: f\n        argumnts: {}\n"
    message = load_error(write(tmp_path, content))
    assert "line 5" in message
    assert "responses[0].output[0].argumnts" in message
    assert "arguments" in message


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("    fault: {chunk: 3}\n", "unknown key 'chunk' (did you mean 'chunk_delay'?)"),  # a fault key, not 'chunks'
        ("    fault: {pace: {tps: 3}}\n", "unknown key 'tps' (it takes jitter, seed, tokens_per_second, ttft)"),
        ("    when: {modle: m}\n", "unknown key 'modle' (did you mean 'model'?)"),
    ],
)
def test_an_unknown_key_is_matched_against_the_keys_its_own_place_takes(
    tmp_path: Path, content: str, said: str
) -> None:
    assert said in load_error(write(tmp_path, VALID_START + content))


def test_an_unknown_key_of_an_output_item_is_matched_against_that_item_type(tmp_path: Path) -> None:
    content = "responses:\n  - output:\n      - {type: shell_call_output, call_id: c, output: [{stdout: x}], exit: 1}\n"
    message = load_error(write(tmp_path, content))
    assert "unknown key 'exit' (it takes call_id, output, type)" in message  # not 'text', a message's key


def test_bad_yaml_syntax_names_the_file_line_column_and_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "name: broken\nresponses:\n  - output: [\n  - text: hi\n")
    message = load_error(path)
    assert "line 4" in message
    assert "column" in message
    assert "invalid YAML" in message


def test_missing_file_names_the_file_and_the_problem(tmp_path: Path) -> None:
    message = load_error(tmp_path / "nowhere.yaml")
    assert "cannot read" in message
    assert "No such file" in message


def test_a_script_that_is_not_a_mapping_says_so(tmp_path: Path) -> None:
    message = load_error(write(tmp_path, "- text: hi\n"))
    assert "mapping at the top level" in message


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    content = VALID_START + "    fault:\n      drop_after: soon\n  - outptu: []\n    times: 0\n"
    message = load_error(write(tmp_path, content))
    assert "responses[0].fault.drop_after" in message
    assert "line 7" in message and "responses[1].outptu" in message
    assert "line 8" in message and "responses[1].times" in message


def test_a_field_named_like_an_output_type_keeps_its_place(tmp_path: Path) -> None:
    message = load_error(write(tmp_path, "responses:\n  - reject: {status: 429, message: 5}\n"))
    assert "responses[0].reject.message" in message
    assert "line 2" in message
