"""The admin API under `/__rrkit`, from a plain HTTP client (httpx) against a real server on loopback: the
exchange journal (summaries, one in full, paging), reset, loading a new script (JSON or YAML) that the next
request over HTTP or WebSocket gets, near misses, health; OpenAI-shaped errors for what a caller gets wrong;
admin calls are never exchanges and never use a step."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rrkit.protocol import OutcomeKind
from rrkit.protocol.errors import PREVIOUS_RESPONSE_NOT_FOUND
from rrkit.protocol.plan import ResponsePlan
from rrkit.script import (
    Match,
    NoMatch,
    ReplySource,
    RequestView,
    Script,
    ScriptError,
    load_script,
    parse_script,
    reply,
)
from rrkit.server import NO_MATCH_CODE, FakeServer
from rrkit.server.respond import Unmatched, UnmatchedLog

from .faultclient import BODY, Serve, body, finished, post_sse, text_of, wait_until, ws_connect, ws_request


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0, trust_env=False) as http:
        yield http


def admin(client: httpx.Client, server: FakeServer, method: str, path: str, **options: Any) -> httpx.Response:
    return client.request(method, server.admin_url + path, **options)


def get_json(client: httpx.Client, server: FakeServer, path: str) -> Any:
    response = admin(client, server, "GET", path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def answer(server: FakeServer, request: dict[str, Any] | None = None) -> str:
    result = post_sse(server, request)
    assert result.status == 200, result.json
    return text_of(result.events)


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"type", "code", "message", "param"}
    return error


# -- the journal ----------------------------------------------------------------------------------


def test_exchanges_lists_one_summary_per_exchange_over_http_and_websocket(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script(default=reply("hi")))
    answer(server)
    with ws_connect(server) as websocket:
        first = ws_request(websocket)
        previous = first.last["response"]["id"]
        ws_request(websocket, {**BODY, "previous_response_id": previous, "input": [BODY["input"][0]]})
    server.settle()

    listing = get_json(client, server, "/exchanges")
    assert listing["object"] == "list" and listing["has_more"] is False
    assert (listing["first_id"], listing["last_id"]) == (0, 2)
    http, ws_full, ws_delta = listing["data"]
    assert http["transport"] == "http" and http["connection"] is None and http["status"] == 200
    assert ws_full["transport"] == ws_delta["transport"] == "ws"
    assert ws_full["connection"] == ws_delta["connection"] == 0
    assert [e["request"] for e in listing["data"]] == ["full", "full", "incremental"]
    assert ws_delta["previous_response_id"] == previous
    assert ws_delta["input_items"] == {"wire": 1, "logical": 3}  # the delta, and the request the model saw
    for summary in listing["data"]:
        assert summary["model"] == "gpt-test"
        assert summary["outcome"]["kind"] == OutcomeKind.COMPLETED
        assert summary["event_count"] == summary["outcome"]["events_sent"] > 0
        assert summary["started_at"] > 0 and summary["duration_ms"] >= 0
        assert "events" not in summary and "wire_request" not in summary  # a summary stays short


def test_full_1_includes_each_exchanges_events_and_requests(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script(default=reply("hi")))
    answer(server)
    server.settle()
    (exchange,) = get_json(client, server, "/exchanges?full=1")["data"]
    assert [sent["event"]["type"] for sent in exchange["events"]] == server.exchanges[0].event_types
    assert all(sent["at"] >= 0 for sent in exchange["events"])
    assert exchange["wire_request"] == BODY
    assert exchange["logical_request"]["input"] == BODY["input"]
    assert exchange["request_headers"]["content-type"] == "application/json"
    assert exchange["response_headers"]["content-type"].startswith("text/event-stream")


def test_one_exchange_in_full_by_its_id_including_a_whole_json_body(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script(default=reply("hi")))
    answer(server)
    client.post(server.http_url + "/responses", json=body(stream=False)).raise_for_status()
    server.settle()
    whole = get_json(client, server, "/exchanges/1")
    assert whole["id"] == 1 and whole["outcome"]["kind"] == "completed"
    assert whole["response_body"]["json"]["object"] == "response"
    assert whole["response_body"]["content_type"].startswith("application/json")
    assert get_json(client, server, "/exchanges/0")["event_count"] > 0


def test_an_unknown_exchange_is_a_404_naming_it_and_what_the_server_holds(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script(default=reply("hi")))
    answer(server)
    error = error_of(admin(client, server, "GET", "/exchanges/7"), 404)
    assert error["code"] == "exchange_not_found" and error["param"] == "n"
    assert "No exchange '7'" in error["message"] and "exchanges 0 to 0" in error["message"]
    assert "No exchange 'x'" in error_of(admin(client, server, "GET", "/exchanges/x"), 404)["message"]


def test_since_and_limit_page_through_the_exchanges(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script(default=reply("hi")))
    for _ in range(5):
        answer(server)

    def ids(listing: dict[str, Any]) -> list[int]:
        return [exchange["id"] for exchange in listing["data"]]

    assert ids(get_json(client, server, "/exchanges?since=2")) == [3, 4]
    assert ids(get_json(client, server, "/exchanges?limit=2")) == [3, 4]  # without since: the most recent
    page = get_json(client, server, "/exchanges?since=0&limit=2")  # after since: the next ones, in order
    assert ids(page) == [1, 2] and page["has_more"] is True
    rest = get_json(client, server, f"/exchanges?since={page['last_id']}&limit=10")
    assert ids(rest) == [3, 4] and rest["has_more"] is False
    empty = get_json(client, server, "/exchanges?since=4")
    assert empty["data"] == [] and empty["first_id"] is None and empty["last_id"] is None


@pytest.mark.parametrize(("query", "param"), [("since=-1", "since"), ("limit=ten", "limit"), ("full=maybe", "full")])
def test_a_bad_query_value_is_a_400_naming_the_parameter(
    serve: Serve, client: httpx.Client, query: str, param: str
) -> None:
    server = serve()
    error = error_of(admin(client, server, "GET", f"/exchanges?{query}"), 400)
    assert error["param"] == param and error["code"] == "invalid_query" and param in error["message"]


def test_the_journal_can_be_read_while_a_stream_is_still_running(serve: Serve, client: httpx.Client) -> None:
    slow = {"output": [{"text": "slow", "chunks": 4}], "fault": {"delay_each": 0.5}}
    server = serve(parse_script({"default": slow}))
    with (
        httpx.Client(timeout=5.0, trust_env=False) as streaming,
        streaming.stream("POST", server.http_url + "/responses", json=BODY) as response,
    ):
        chunks = response.iter_bytes()  # held: a dropped iterator would close the stream
        next(chunks)
        running = wait_until(lambda: get_json(client, server, "/exchanges")["data"] or None, what="the exchange")
        (summary,) = running
        assert summary["outcome"] is None and summary["duration_ms"] is None
        assert get_json(client, server, "/health")["running"] == 1
    finished(server)
    ended = get_json(client, server, "/exchanges/0")
    assert ended["outcome"]["kind"] == OutcomeKind.DISCONNECTED
    assert ended["duration_ms"] >= 0


# -- reset and scripts ----------------------------------------------------------------------------


def test_reset_forgets_exchanges_and_stores_and_makes_every_step_available_again(
    serve: Serve, client: httpx.Client
) -> None:
    server = serve(Script().queue(reply("first"), reply("second")))
    first = post_sse(server)
    completed_id = first.events[-1]["response"]["id"]
    assert answer(server) == "second"
    assert post_sse(server).status == 400  # used up: a near miss too

    response = admin(client, server, "POST", "/reset")
    assert response.status_code == 200, response.text
    assert response.json()["forgot"] == {"exchanges": 3, "connections": 0, "unmatched": 1}
    assert response.json()["source"]["unused"] == ["step 0 (used 0 of 1)", "step 1 (used 0 of 1)"]
    assert get_json(client, server, "/exchanges")["data"] == []
    assert get_json(client, server, "/unmatched")["data"] == []

    assert answer(server) == "first"  # every step available again
    continued = post_sse(server, body(previous_response_id=completed_id))
    assert continued.status == 400 and continued.json["error"]["code"] == PREVIOUS_RESPONSE_NOT_FOUND
    assert [e.id for e in server.exchanges] == [0, 1]


def test_a_posted_json_script_answers_the_next_http_request(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script(default=reply("old")))
    assert answer(server) == "old"
    script = {"name": "swapped", "responses": [{"output": [{"text": "new"}], "repeat": True}]}
    response = admin(client, server, "POST", "/script", json=script)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "loaded": True,
        "source": {
            "kind": "script",
            "name": "swapped",
            "steps": 1,
            "handshakes": 0,
            "default": False,
            "unused": [],
        },
    }
    assert answer(server) == "new"
    assert len(server.exchanges) == 2  # what was captured before the swap is kept


YAML_SCRIPT = """\
responses:
  - output:
      - text: from yaml
    when:
      transport: ws
    times: 2
"""


@pytest.mark.parametrize("content_type", ["application/yaml", "text/yaml"])
def test_a_posted_yaml_script_answers_the_next_request_on_an_open_websocket(
    serve: Serve, client: httpx.Client, content_type: str
) -> None:
    server = serve(Script(default=reply("old")))
    with ws_connect(server) as websocket:
        assert text_of(ws_request(websocket).events) == "old"
        loaded = admin(client, server, "POST", "/script", content=YAML_SCRIPT, headers={"content-type": content_type})
        assert loaded.status_code == 200, loaded.text
        assert loaded.json()["source"]["steps"] == 1 and loaded.json()["source"]["name"] == "posted"
        assert text_of(ws_request(websocket).events) == "from yaml"  # same socket, next request
    with ws_connect(server) as websocket:
        assert text_of(ws_request(websocket).events) == "from yaml"  # a new socket too
    assert post_sse(server).status == 400  # the old default is gone with the old script


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        ('{"responses": [', "application/json", "POST /__rrkit/script: line 1, column 16: invalid JSON"),
        ("responses:\n  - output: [\n", "application/yaml", "POST /__rrkit/script: line 3, column 1: invalid YAML"),
        (
            '{"responses": [{"outptu": []}]}',
            "application/json",
            "responses[0].outptu: unknown key 'outptu' (did you mean 'output'?)",
        ),
        ("responses:\n  - times: 0\n", "application/yaml", "line 2, responses[0].times: Input should be greater"),
        ("[1, 2]", "application/json", "a script must be a mapping at the top level, got list"),
        ("", "application/json", "the body is empty"),
    ],
)
def test_an_invalid_script_is_a_400_with_the_loaders_message_and_the_old_script_stays(
    serve: Serve, client: httpx.Client, content: str, content_type: str, expected: str
) -> None:
    server = serve(Script(default=reply("old")))
    response = admin(client, server, "POST", "/script", content=content, headers={"content-type": content_type})
    error = error_of(response, 400)
    assert error["code"] == "invalid_script"
    assert expected in error["message"]
    assert answer(server) == "old"


DEEP_SCRIPTS = {
    "json-lists": ("[" * 5000 + "]" * 5000, "application/json", ".json"),
    "json-mappings": ('{"a":' * 3000 + "1" + "}" * 3000, "application/json", ".json"),
    "yaml-block": ("- " * 5000 + "x", "application/yaml", ".yaml"),
}


@pytest.mark.parametrize("shape", list(DEEP_SCRIPTS))
def test_admin_refuses_deeply_nested_script_like_the_loader(
    serve: Serve, client: httpx.Client, tmp_path: Path, shape: str
) -> None:
    content, content_type, suffix = DEEP_SCRIPTS[shape]
    server = serve(Script(default=reply("old")))
    response = admin(client, server, "POST", "/script", content=content, headers={"content-type": content_type})
    error = error_of(response, 400)
    assert error["code"] == "invalid_script"
    path = tmp_path / f"deep{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ScriptError) as loaded:
        load_script(path)
    assert "nested too deeply" in error["message"]
    assert error["message"] == str(loaded.value).replace(str(path), "POST /__rrkit/script")  # the loader's words
    assert answer(server) == "old"


def test_admin_words_a_script_that_is_not_utf8_as_the_loader_does_with_its_own_remedy(
    serve: Serve, client: httpx.Client, tmp_path: Path
) -> None:
    content = b'{"name": "caf\xe9"}'
    server = serve(Script(default=reply("old")))
    response = admin(client, server, "POST", "/script", content=content, headers={"content-type": "application/json"})
    error = error_of(response, 400)
    path = tmp_path / "latin1.json"
    path.write_bytes(content)
    with pytest.raises(ScriptError) as loaded:
        load_script(path)
    expected = str(loaded.value).replace(str(path), "POST /__rrkit/script").replace("re-save", "send")
    assert error["message"] == expected
    assert error["message"].endswith("send the script as UTF-8")


class _Answers404(ReplySource):
    """A reply source that is not a script (as a cassette replay is not): only `select`, the rest its defaults."""

    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        return NoMatch(request.describe(), what="recorded exchange", hint="Record it.")


def test_a_script_cannot_replace_a_source_that_is_not_a_script(serve: Serve, client: httpx.Client) -> None:
    server = serve(source=_Answers404())
    response = admin(client, server, "POST", "/script", json={"default": {"output": ["x"]}})
    error = error_of(response, 409)
    assert error["code"] == "not_a_script_server" and "_Answers404" in error["message"]
    assert get_json(client, server, "/health")["source"] == {"kind": "_Answers404"}


# -- near misses ----------------------------------------------------------------------------------


def test_unmatched_lists_each_near_miss_with_the_closest_steps_and_what_failed(
    serve: Serve, client: httpx.Client
) -> None:
    server = serve(Script().add(reply("for gpt-5"), when=Match(model="gpt-5", transport="http")))
    refused = post_sse(server)
    assert refused.status == 400 and refused.json["error"]["code"] == NO_MATCH_CODE

    listing = get_json(client, server, "/unmatched")
    assert listing["object"] == "list" and listing["total"] == 1 and listing["kept"] == 100
    (miss,) = listing["data"]
    assert miss["exchange"] == 0 and miss["transport"] == "http" and miss["connection"] is None
    assert miss["what"] == "scripted reply"
    assert miss["closest"] == ["step 0 (used 0 of 1): failed: model == 'gpt-5'"]
    assert "model='gpt-test'" in miss["request"]
    assert miss["message"] == refused.json["error"]["message"]  # the very report the client got
    assert miss["wire_request"] == BODY
    assert server.unmatched[0].report.closest == miss["closest"]


def test_unmatched_reports_a_websocket_near_miss_with_its_connection(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script().add(reply("only http"), when=Match(transport="http")))
    with ws_connect(server) as websocket:
        assert ws_request(websocket).last["type"] == "error"
    (miss,) = get_json(client, server, "/unmatched?limit=5")["data"]
    assert (miss["transport"], miss["connection"]) == ("ws", 0)
    assert "failed: transport == 'http'" in miss["closest"][0]


def test_the_near_miss_record_keeps_the_most_recent_and_counts_every_one() -> None:
    record = UnmatchedLog(size=2)
    for number in range(5):
        record.add(Unmatched(number, "http", None, 0.0, NoMatch(f"request {number}"), {}))
    assert [unmatched.exchange_id for unmatched in record.recent()] == [3, 4]
    assert record.total == 5


def test_the_python_reset_forgets_near_misses_too(serve: Serve) -> None:
    server = serve(Script())
    assert post_sse(server).status == 400
    assert len(server.unmatched) == 1
    server.reset()
    assert server.unmatched == [] and server.state.unmatched.total == 0


# -- health, errors, and staying out of the journal -----------------------------------------------


@pytest.mark.parametrize("path", ["", "/", "/health"])
def test_health_gives_version_source_counts_and_urls(serve: Serve, client: httpx.Client, path: str) -> None:
    server = serve(Script(name="greeter").add(reply("hi"), repeat=True))
    answer(server)
    health = get_json(client, server, path)
    assert health["status"] == "ok" and health["version"] == "0.1.0"
    assert health["source"]["kind"] == "script" and health["source"]["name"] == "greeter"
    assert health["source"]["steps"] == 1
    assert (health["exchanges"], health["connections"], health["unmatched"], health["keep"]) == (1, 0, 0, None)
    assert health["urls"] == {"http": server.http_url, "ws": server.ws_url, "admin": server.admin_url}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [("GET", "/reset", "POST"), ("GET", "/script", "POST"), ("POST", "/exchanges", "GET"), ("DELETE", "/", "GET")],
)
def test_a_wrong_method_is_a_405_saying_which_one_the_endpoint_takes(
    serve: Serve, client: httpx.Client, method: str, path: str, allowed: str
) -> None:
    server = serve()
    response = admin(client, server, method, path)
    error = error_of(response, 405)
    assert allowed in response.headers["allow"] and allowed in error["message"]
    assert f"{method} /__rrkit{path}" in error["message"]


def test_an_unknown_admin_path_is_a_404_listing_the_endpoints(serve: Serve, client: httpx.Client) -> None:
    server = serve()
    error = error_of(admin(client, server, "GET", "/requests"), 404)
    assert "GET /__rrkit/requests: no such admin endpoint" in error["message"]
    assert "POST /__rrkit/script" in error["message"] and "GET /__rrkit/unmatched" in error["message"]


def test_admin_calls_are_never_captured_and_never_use_a_step(serve: Serve, client: httpx.Client) -> None:
    server = serve(Script().queue(reply("only")))
    for method, path in [
        ("GET", ""),
        ("GET", "/health"),
        ("GET", "/exchanges?full=1"),
        ("GET", "/exchanges/0"),
        ("GET", "/unmatched"),
        ("GET", "/nothing"),
        ("POST", "/reset"),
        ("POST", "/exchanges"),
    ]:
        admin(client, server, method, path)
    assert server.exchanges == [] and server.connections == []
    assert answer(server) == "only"  # the one step is still there
    assert [e["id"] for e in get_json(client, server, "/exchanges")["data"]] == [0]


def test_the_journal_carries_bodies_json_cannot_hold_as_utf8(serve: Serve, client: httpx.Client) -> None:
    """A body refused for a lone surrogate is still listed: written with a \\u escape, as valid JSON."""
    server = serve()
    content = b'{"model": "gpt-test", "input": "\\ud800", "stream": true}'
    refused = client.post(server.http_url + "/responses", content=content, headers={"content-type": "application/json"})
    assert refused.status_code == 400
    server.settle()
    response = admin(client, server, "GET", "/exchanges/0")
    assert response.status_code == 200
    json.loads(response.content)  # valid JSON whatever the request held
