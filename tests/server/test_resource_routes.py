"""Server contracts on every route beyond the create (docs/protocol.md, "Every route"), walked with the newest
official Python SDK at strict validation: retrieve, resume, cancel, delete, input items, token counts, compaction,
conversations, models, background responses, `store: false`."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import yaml
from websockets.sync.client import connect

from rrkit.protocol import routes
from rrkit.protocol.exceptions import ScriptError
from rrkit.protocol.resources import DEFAULT_MODELS, MODELS_ETAG_HEADER
from rrkit.script import Script, reply, text
from rrkit.script.loader import parse_script
from rrkit.server import FakeServer

from ..errortrap import Serve

ENDED = ("completed", "failed", "incomplete", "cancelled")


def load_script_text(text: str) -> Script:
    return parse_script(yaml.safe_load(textwrap.dedent(text)))


def strict(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)


def poll(client: openai.OpenAI, response_id: str, limit: int = 400) -> list[str]:
    """Every status the polls saw, until a terminal one."""
    seen = []
    for _ in range(limit):
        status = client.responses.retrieve(response_id).status
        seen.append(str(status))
        if status in ENDED:
            return seen
    raise AssertionError(f"{response_id} still {seen[-1]} after {limit} polls")


@pytest.fixture
def server(serve: Serve) -> Iterator[FakeServer]:
    with serve.running() as running:
        yield running


def test_the_route_table_names_every_route_the_sdk_calls() -> None:
    assert routes.route_of("GET", "/v1/responses/resp_1").name == routes.RETRIEVE
    assert routes.route_of("GET", "/responses/resp_1").params == {"response_id": "resp_1"}
    assert routes.route_of("POST", "/v1/responses/resp_1/cancel").name == routes.CANCEL
    assert routes.route_of("POST", "/v1/responses/compact").name == routes.COMPACT
    assert routes.route_of("POST", "/v1/responses/input_tokens").name == routes.INPUT_TOKENS
    assert routes.route_of("DELETE", "/v1/conversations/c/items/i").params == {"conversation_id": "c", "item_id": "i"}
    assert routes.route_of("GET", "/v1/models/ft:gpt:x").params == {"model": "ft:gpt:x"}
    assert routes.route_of("PUT", "/v1/responses").name == routes.OTHER
    assert routes.route_of("GET", "/v1/files").name == routes.OTHER


def test_a_stored_response_is_retrieved_listed_and_deleted(server: FakeServer) -> None:
    client = strict(server)
    created = client.responses.create(model="gpt-test", input="hi", metadata={"k": "v"})
    got = client.responses.retrieve(created.id)
    assert (got.id, got.status, got.output_text) == (created.id, "completed", created.output_text)
    items = client.responses.input_items.list(created.id)
    assert [item.type for item in items.data] == ["message"]
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.input_items.list(created.id)


def test_input_items_come_back_paginated_in_either_order(server: FakeServer) -> None:
    client = strict(server)
    given = [{"role": "user", "content": f"message {n}"} for n in range(5)]
    created = client.responses.create(model="gpt-test", input=given)  # type: ignore[arg-type]
    oldest_first = client.responses.input_items.list(created.id, order="asc", limit=2)
    texts = [page_item.content[0].text for page_item in oldest_first]  # type: ignore[union-attr]
    assert texts == [f"message {n}" for n in range(5)]  # the SDK follows `after` page by page
    first = client.responses.input_items.list(created.id, order="asc", limit=2)
    assert first.has_more is True and len(first.data) == 2
    newest = client.responses.input_items.list(created.id, limit=1)
    assert newest.data[0].content[0].text == "message 4"  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError):
        client.responses.input_items.list(created.id, limit=1000)


def test_store_false_is_not_kept_for_http_but_a_socket_keeps_its_own(server: FakeServer) -> None:
    client = strict(server)
    unstored = client.responses.create(model="gpt-test", input="hi", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-test", input="more", previous_response_id=unstored.id)
    assert refused.value.code == "previous_response_not_found"
    with connect(server.responses_ws_url) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi", "store": False}))
        first = _until_terminal(ws)
        ws.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": [], "store": False,
                            "previous_response_id": first["response"]["id"]}))  # fmt: skip
        assert _until_terminal(ws)["type"] == "response.completed"


def _until_terminal(ws: Any) -> dict[str, Any]:
    while True:
        event = json.loads(ws.recv(timeout=10))
        if event["type"] in ("response.completed", "response.failed", "response.incomplete", "error"):
            return dict(event)


def test_a_background_response_is_queued_then_polled_to_its_end(serve: Serve) -> None:
    script = Script().queue(reply(text("Done.")).in_background(queued_polls=2, in_progress_polls=2))
    with serve.running(script) as server:
        client = strict(server)
        created = client.responses.create(model="gpt-test", input="think", background=True)
        assert (created.status, created.background) == ("queued", True)
        seen = poll(client, created.id)
        assert seen[:2] == ["queued", "queued"]
        assert seen.count("in_progress") >= 2 and seen[-1] == "completed"
        final = client.responses.retrieve(created.id)
        assert final.output_text == "Done." and final.background is True


def test_a_background_stream_cut_at_event_n_resumes_with_every_event_once_in_order(serve: Serve) -> None:
    script = Script().queue(reply(text("one two three four five six", chunks=6)).drop_after(4))
    with serve.running(script) as server:
        client = strict(server)
        seen: list[Any] = []
        with pytest.raises(openai.APIError):
            for event in client.responses.create(model="gpt-test", input="go", background=True, stream=True):
                seen.append(event)
        assert len(seen) == 4
        last = seen[-1].sequence_number
        response_id = seen[0].response.id
        resumed = list(client.responses.retrieve(response_id, stream=True, starting_after=last))
        numbers = [event.sequence_number for event in [*seen, *resumed]]
        assert numbers == list(range(len(numbers)))
        assert resumed[-1].type == "response.completed"
        deltas = "".join(event.delta for event in [*seen, *resumed] if event.type == "response.output_text.delta")
        assert deltas == "one two three four five six"
        assert [e.type for e in server.settle().exchanges[0].events][:1] == ["response.created"]


def test_a_stream_of_a_response_not_made_in_background_is_refused(server: FakeServer) -> None:
    client = strict(server)
    created = client.responses.create(model="gpt-test", input="hi")
    with pytest.raises(openai.BadRequestError) as refused:
        list(client.responses.retrieve(created.id, stream=True, starting_after=0))
    assert refused.value.param == "stream"


def test_only_a_background_response_in_progress_can_be_cancelled(serve: Serve) -> None:
    script = Script().queue(reply(text("slow")).in_background(queued_polls=1000), reply(text("fast")))
    with serve.running(script) as server:
        client = strict(server)
        waiting = client.responses.create(model="gpt-test", input="a", background=True)
        cancelled = client.responses.cancel(waiting.id)
        assert cancelled.status == "cancelled"
        assert client.responses.cancel(waiting.id).status == "cancelled"  # again: the same answer
        assert client.responses.retrieve(waiting.id).status == "cancelled"
        foreground = client.responses.create(model="gpt-test", input="b")
        with pytest.raises(openai.BadRequestError, match="background=true"):
            client.responses.cancel(foreground.id)
        with pytest.raises(openai.NotFoundError):
            client.responses.cancel("resp_unknown")


def test_cancel_of_a_finished_background_response_is_refused(server: FakeServer) -> None:
    client = strict(server)
    created = client.responses.create(model="gpt-test", input="a", background=True)
    poll(client, created.id)
    with pytest.raises(openai.BadRequestError, match="completed"):
        client.responses.cancel(created.id)


def test_background_is_refused_over_websocket(server: FakeServer) -> None:
    with connect(server.responses_ws_url) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi", "background": True}))
        frame = _until_terminal(ws)
    assert (frame["type"], frame["status"], frame["error"]["param"]) == ("error", 400, "background")


def test_input_tokens_and_compaction_answer_in_the_api_shape(server: FakeServer) -> None:
    client = strict(server)
    short = client.responses.input_tokens.count(model="gpt-test", input="hi")
    long = client.responses.input_tokens.count(model="gpt-test", input="hi " * 400)
    assert 0 < short.input_tokens < long.input_tokens
    # the SDK's CompactedResponse admits only assistant messages, the service returns the user ones too
    lenient = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0)
    compacted = lenient.responses.compact(
        model="gpt-test",
        input=[{"role": "user", "content": "first"}, {"role": "assistant", "content": "answer"}],
    )
    assert compacted.object == "response.compaction"
    assert [(item.type, getattr(item, "role", None)) for item in compacted.output] == [
        ("message", "user"),
        ("compaction", None),
    ]


def test_a_conversation_gathers_the_input_and_output_of_its_responses(server: FakeServer) -> None:
    client = strict(server)
    conversation = client.conversations.create(items=[{"role": "user", "content": "first"}], metadata={"a": "b"})
    assert client.conversations.retrieve(conversation.id).metadata == {"a": "b"}
    answer = client.responses.create(model="gpt-test", input="second", conversation=conversation.id)
    items = list(client.conversations.items.list(conversation.id, order="asc"))
    assert [(item.type, getattr(item, "role", None)) for item in items] == [
        ("message", "user"),
        ("message", "user"),
        ("message", "assistant"),
    ]
    assert items[-1].id == answer.output[0].id
    added = client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "third"}])
    item_id = added.data[0].id
    assert client.conversations.items.retrieve(item_id, conversation_id=conversation.id).id == item_id
    client.conversations.items.delete(item_id, conversation_id=conversation.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(item_id, conversation_id=conversation.id)
    assert client.conversations.update(conversation.id, metadata={"k": "v"}).metadata == {"k": "v"}
    assert client.conversations.delete(conversation.id).deleted is True
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)


def test_conversation_and_previous_response_id_together_are_refused(server: FakeServer) -> None:
    client = strict(server)
    conversation = client.conversations.create()
    first = client.responses.create(model="gpt-test", input="hi")
    with pytest.raises(openai.BadRequestError, match="Mutually exclusive"):
        client.responses.create(
            model="gpt-test", input="x", conversation=conversation.id, previous_response_id=first.id
        )
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="gpt-test", input="x", conversation="conv_unknown")


def test_models_are_listed_with_an_etag(server: FakeServer) -> None:
    client = strict(server)
    assert [model.id for model in client.models.list()] == list(DEFAULT_MODELS)
    assert client.models.retrieve("gpt-test").id == "gpt-test"
    listed = httpx.get(server.http_url + "/models")
    assert listed.headers[MODELS_ETAG_HEADER]


def test_a_path_outside_the_table_is_an_openai_shaped_404(server: FakeServer) -> None:
    answer = httpx.get(server.http_url + "/files")
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == "Invalid URL (GET /v1/files)"
    exchange = server.settle().exchanges[-1]
    assert (exchange.method, exchange.path, exchange.route) == ("GET", "/files", routes.OTHER)


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/responses/compact", {}, "model"),
        ("/responses/compact", {"model": "gpt-test", "input": 7}, "input"),
        ("/responses/input_tokens", {"input": 7}, "input"),
        ("/responses/input_tokens", {"previous_response_id": "resp_unknown"}, "previous_response_id"),
        ("/conversations", {"items": "not a list"}, "items"),
        ("/conversations", {"metadata": [1]}, "metadata"),
    ],
)
def test_a_bad_body_on_any_route_is_a_400_naming_the_field(
    server: FakeServer, path: str, body: Any, param: str
) -> None:
    answer = httpx.post(server.http_url + path, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param


def test_a_body_that_is_not_a_json_object_is_refused_on_any_route(server: FakeServer) -> None:
    for content in (b"[1, 2]", b"{not json", "\ud800".encode("utf-8", "surrogatepass")):
        answer = httpx.post(server.http_url + "/conversations", content=content)
        assert answer.status_code == 400, (content, answer.text)
        assert answer.json()["error"]["type"] == "invalid_request_error"


def test_a_resume_cursor_that_is_not_an_integer_is_a_400(server: FakeServer) -> None:
    client = strict(server)
    created = client.responses.create(model="gpt-test", input="a", background=True)
    answer = httpx.get(f"{server.http_url}/responses/{created.id}", params={"stream": "true", "starting_after": "x"})
    assert (answer.status_code, answer.json()["error"]["param"]) == (400, "starting_after")
    past_the_end = httpx.get(
        f"{server.http_url}/responses/{created.id}", params={"stream": "true", "starting_after": "100000"}
    )
    assert past_the_end.status_code == 200 and past_the_end.text == ""  # nothing after it: the stream just ends


def test_a_known_path_with_another_method_is_a_405_naming_the_allowed_ones(server: FakeServer) -> None:
    answer = httpx.put(server.http_url + "/responses/resp_1")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, DELETE"
    assert routes.allowed_methods("/v1/conversations/c") == ["GET", "POST", "DELETE"]
    assert routes.allowed_methods("/v1/files") == []


def test_a_script_answers_any_route_with_a_refusal_its_headers_or_a_cut_of_the_resumed_stream(serve: Serve) -> None:
    script = load_script_text(
        """
        responses:
          - when: {route: responses.retrieve}
            reject: {status: 429, code: rate_limit_exceeded, retry_after: 2}
          - when: {route: responses.retrieve}
            fault: {drop_after: 2}
          - when: {route: models.list}
            repeat: true
            headers: {x-models-etag: scripted}
          - output: [{text: "one two three four five", chunks: 5}]
            repeat: true
        """
    )
    with serve.running(script) as server:
        client = strict(server)
        created = client.responses.create(model="gpt-test", input="go", background=True)
        limited = httpx.get(f"{server.http_url}/responses/{created.id}")
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")
        received = b""
        resume = httpx.stream(
            "GET", f"{server.http_url}/responses/{created.id}", params={"stream": "true", "starting_after": "0"}
        )
        with pytest.raises(httpx.RemoteProtocolError), resume as cut:
            for chunk in cut.iter_raw():
                received += chunk
        assert received.count(b"event: ") == 2  # the resumed stream cut after two events
        assert poll(client, created.id)[-1] == "completed"  # the next read: the store's own answer
        assert httpx.get(server.http_url + "/models").headers[MODELS_ETAG_HEADER] == "scripted"


def test_a_script_sets_what_compaction_returns_and_the_token_count(serve: Serve) -> None:
    script = load_script_text(
        """
        responses:
          - when: {route: responses.compact}
            output: [{type: compaction, encrypted_content: scripted-summary}]
          - when: {route: responses.input_tokens}
            usage: {input_tokens: 1234}
        """
    )
    with serve.running(script) as server:
        client = strict(server)
        compacted = client.responses.compact(model="gpt-test", input="hi")
        assert [(item.type, item.encrypted_content) for item in compacted.output] == [  # type: ignore[union-attr]
            ("compaction", "scripted-summary")
        ]
        assert client.responses.input_tokens.count(model="gpt-test", input="hi").input_tokens == 1234


def test_a_step_for_an_unknown_route_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ScriptError, match=r"unknown route 'responses\.retreive'.*responses\.retrieve"):
        load_script_text("responses: [{when: {route: responses.retreive}, output: [{text: hi}]}]")


def test_a_conversation_named_over_websocket_is_the_one_http_made_and_gathers_that_response_too(
    server: FakeServer,
) -> None:
    client = strict(server)
    conversation = client.conversations.create(items=[{"role": "user", "content": "first"}])
    with connect(server.responses_ws_url) as ws:
        frame = {"type": "response.create", "model": "gpt-test", "input": "second", "conversation": conversation.id}
        ws.send(json.dumps(frame))
        assert _until_terminal(ws)["type"] == "response.completed"
    items = list(client.conversations.items.list(conversation.id, order="asc"))
    assert [getattr(item, "role", None) for item in items] == ["user", "user", "assistant"]
